package io.strata.protocol.routing;

import io.strata.core.NodeId;
import io.strata.core.TargetId;

/** One chunk store (one disk directory) on one storage node, and its public state. */
public record TargetInfo(TargetId id, NodeId node, TargetState state) {
    public TargetInfo {
        if (id == null || node == null || state == null) {
            throw new IllegalArgumentException("a target needs an id, a node and a state");
        }
    }

    public TargetInfo withState(TargetState s) {
        return new TargetInfo(id, node, s);
    }
}
