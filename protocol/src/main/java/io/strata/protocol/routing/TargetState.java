package io.strata.protocol.routing;

import io.strata.core.rpc.Wire;
import java.util.Locale;

/**
 * The public state of a target, as the cluster manager publishes it in routing info
 * (docs/design.md, "Failures"; docs/internals/target-states.md). Clients read only from
 * {@link #readable()} targets and chains forward writes only through {@link #writable()} ones.
 */
public enum TargetState implements Wire.Tagged {
    /** Alive and in sync: serves reads and writes. */
    SERVING(1, true, true),
    /** Alive, being brought in sync by its predecessor: takes writes (as the chain's tail), no reads. */
    SYNCING(2, false, true),
    /** Alive, recovery not started yet. */
    WAITING(3, false, false),
    /** Down, and it was the last serving target of its chain: nothing newer exists elsewhere. */
    LASTSRV(4, false, false),
    /** Down, or its disk failed. */
    OFFLINE(5, false, false);

    private final int tag;
    private final boolean readable;
    private final boolean writable;

    TargetState(int tag, boolean readable, boolean writable) {
        this.tag = tag;
        this.readable = readable;
        this.writable = writable;
    }

    @Override
    public int wireTag() {
        return tag;
    }

    public boolean readable() {
        return readable;
    }

    public boolean writable() {
        return writable;
    }

    public String publicName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
