package io.strata.core.tier;

import io.strata.core.rpc.Wire;
import java.util.Locale;

/** The scheduling class an I/O is served in on every tier (policy field {@code qos}). */
public enum QosClass implements Wire.Tagged {
    INTERACTIVE(1), TRAINING_READ(2), CHECKPOINT(3), BACKGROUND(4);

    private final int tag;

    QosClass(int tag) {
        this.tag = tag;
    }

    @Override
    public int wireTag() {
        return tag;
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
        throw new IllegalArgumentException("unknown qos '" + s + "' (expected interactive, training-read, checkpoint or background)");
    }
}
