package io.strata.storage;

import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.auth.Token;
import io.strata.core.rpc.Request;
import io.strata.storage.engine.ChunkEngine;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import java.util.List;
import java.util.Optional;

/**
 * One chain as this node sees it in one routing version: which of its targets is this node's,
 * and where it stands on the write path (head, middle, tail).
 */
record ChainView(RoutingInfo routing, ChainInfo chain, TargetId self, ChunkEngine engine, List<TargetId> writePath) {
    long version() {
        return chain.version();
    }

    TargetState state() {
        return routing.target(self).state();
    }

    int position() {
        return writePath.indexOf(self);
    }

    boolean isHead() {
        return !writePath.isEmpty() && writePath.get(0).equals(self);
    }

    /** The next target on the write path; empty at the tail. */
    Optional<TargetId> successor() {
        int i = position();
        return i >= 0 && i + 1 < writePath.size() ? Optional.of(writePath.get(i + 1)) : Optional.empty();
    }

    boolean isTail() {
        return successor().isEmpty();
    }

    /** The chain's tail: the last target on the write path (where commits happen). */
    TargetId tail() {
        if (writePath.isEmpty()) {
            throw new StrataException(Status.NOT_SERVING, chain.id() + " has no writable target in routing v" + routing.version());
        }
        return writePath.get(writePath.size() - 1);
    }

    NodeInfo nodeOf(TargetId t) {
        return routing.nodeOf(t);
    }

    /** The target before this one on the write path; empty at the head or off the path. */
    Optional<TargetId> predecessor() {
        int i = position();
        return i > 0 ? Optional.of(writePath.get(i - 1)) : Optional.empty();
    }

    /**
     * Fails with PERMISSION_DENIED unless {@code req} comes from the node of this target's
     * predecessor on the write path (when the server authenticates): only it may replicate an
     * update to this target or copy chunks into it, so another storage node's token cannot make
     * a replica diverge from its chain.
     */
    void requireFromPredecessor(Request<?> req, String what) {
        Optional<Token> caller = req.caller();
        if (caller.isEmpty()) {
            return;
        }
        Optional<TargetId> before = predecessor();
        String allowed = before.map(p -> routing.target(p).node().toString()).orElse(null);
        if (!caller.get().subject().equals(allowed)) {
            throw new StrataException(Status.PERMISSION_DENIED, "role " + caller.get().role() + " (subject "
                    + caller.get().subject() + ") may not send " + what + " to " + self + " in " + chain.id() + " v" + version()
                    + ": only its predecessor on the write path may ("
                    + before.map(p -> p + " on " + allowed).orElse("none: it is the head") + ")");
        }
    }
}
