package io.strata.protocol;

import io.strata.core.rpc.MessageType;
import java.util.Collection;

/**
 * The wire-tag ranges of the services, one per message family, never overlapping and never
 * reused: a tag names one message type forever. {@link #check} is how a family proves it stays
 * in its range (each family's round-trip test calls it).
 */
public enum TagRange {
    /** Ping, echo: every endpoint ({@code io.strata.core.rpc.CoreMessages}). */
    CORE(1, 99),
    /** Storage nodes: chunk reads, writes, CRAQ forwarding, resync, listings. */
    STORAGE(100, 199),
    /** The cluster manager: registration, heartbeats, routing, status, chain tables. */
    MGMTD(200, 299),
    /** The meta service: namespace operations, policies. */
    META(300, 399),
    /** Reserved for the L2 pool agents. */
    L2(400, 499),
    /** Reserved for the scheduler hooks. */
    HOOKS(500, 599);

    private final int first;
    private final int last;

    TagRange(int first, int last) {
        this.first = first;
        this.last = last;
    }

    public int first() {
        return first;
    }

    public int last() {
        return last;
    }

    public boolean contains(int tag) {
        return tag >= first && tag <= last;
    }

    /** Fails unless every type's tag lies in this range. */
    public void check(Collection<? extends MessageType<?>> types) {
        for (MessageType<?> t : types) {
            if (!contains(t.tag())) {
                throw new IllegalStateException(t + " has tag " + t.tag() + ", outside " + this + " [" + first + ", " + last + "]");
            }
        }
    }
}
