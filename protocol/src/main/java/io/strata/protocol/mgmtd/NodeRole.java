package io.strata.protocol.mgmtd;

import io.strata.core.rpc.Wire;
import java.util.Locale;

/** What a registered node does; only storage nodes' targets go into chains. */
public enum NodeRole implements Wire.Tagged {
    STORAGE(1), META(2), L2_AGENT(3), CLIENT(4);

    private final int tag;

    NodeRole(int tag) {
        this.tag = tag;
    }

    @Override
    public int wireTag() {
        return tag;
    }

    public String publicName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
