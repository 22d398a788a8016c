package io.strata.protocol.routing;

import io.strata.core.rpc.Wire;
import java.util.Locale;

/**
 * A target's own view of itself, reported by its storage node in every heartbeat (and forced to
 * {@link #OFFLINE} by the cluster manager when the node's lease expires). It is the event that
 * drives the public {@link io.strata.protocol.routing.TargetState}: see {@link TargetTransitions}.
 */
public enum LocalState implements Wire.Tagged {
    /** Alive and its data is complete: it finished a resync, or it is serving. */
    UP_TO_DATE(1),
    /** Alive, data possibly behind (just restarted, or a resync is still running). */
    ONLINE(2),
    /** Down: lease expired, node restarted (old incarnation), or its disk failed. */
    OFFLINE(3);

    private final int tag;

    LocalState(int tag) {
        this.tag = tag;
    }

    @Override
    public int wireTag() {
        return tag;
    }

    public boolean alive() {
        return this != OFFLINE;
    }

    /** The name used in docs and tables: {@code up-to-date}, {@code online}, {@code offline}. */
    public String publicName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    public static LocalState ofPublicName(String s) {
        for (LocalState l : values()) {
            if (l.publicName().equals(s)) {
                return l;
            }
        }
        throw new IllegalArgumentException("unknown local state '" + s + "'");
    }
}
