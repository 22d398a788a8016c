package io.strata.core.tier;

import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.Wire;
import java.util.Locale;

/**
 * The scheduling class an I/O is served in on every tier (policy field {@code qos}).
 * {@code prefetch} is what L2 agents fetch from L3 for a scheduler's hint, ahead of a job.
 */
public enum QosClass implements Wire.Tagged {
    INTERACTIVE(1), TRAINING_READ(2), CHECKPOINT(3), BACKGROUND(4), PREFETCH(5);

    private final int tag;

    QosClass(int tag) {
        this.tag = tag;
    }

    @Override
    public int wireTag() {
        return tag;
    }

    /** Payloads from this size up go on the bulk lane whatever their class. */
    public static final long BULK_PAYLOAD = 256 * 1024;

    /** Whether this class is bulk work (saves, fetches ahead, drains) that others should not wait behind. */
    public boolean bulk() {
        return this == CHECKPOINT || this == PREFETCH || this == BACKGROUND;
    }

    /**
     * The lane of a call in this class carrying {@code payloadBytes}: {@link RpcClient.Lane#BULK}
     * for a bulk class or a large payload, else {@link RpcClient.Lane#FOREGROUND}, so that small
     * reads and writes of the foreground classes never queue on a connection behind a transfer.
     */
    public RpcClient.Lane lane(long payloadBytes) {
        return bulk() || payloadBytes >= BULK_PAYLOAD ? RpcClient.Lane.BULK : RpcClient.Lane.FOREGROUND;
    }

    /** The policy spelling: {@code interactive}, {@code training-read}, ... */
    public String policyName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    public static QosClass parse(String s) {
        for (QosClass q : values()) {
            if (q.policyName().equals(s)) {
                return q;
            }
        }
        throw new IllegalArgumentException("unknown qos '" + s + "' (expected interactive, training-read, checkpoint, background or prefetch)");
    }
}
