package io.strata.protocol.routing;

import io.strata.core.ChainId;
import io.strata.core.TargetId;
import java.util.HashSet;
import java.util.List;

/**
 * A replication chain: its targets in chain order, head first, and a version bumped on every
 * membership or order change. Serving targets come first; a target that went offline is moved
 * to the end (it is no longer on the write path), so the write path is the writable prefix.
 */
public record ChainInfo(ChainId id, long version, List<TargetId> targets) {
    public ChainInfo {
        if (id == null || targets == null || targets.isEmpty()) {
            throw new IllegalArgumentException("a chain needs an id and at least one target");
        }
        if (version <= 0) {
            throw new IllegalArgumentException(id + ": chain version must be positive, got " + version);
        }
        if (new HashSet<>(targets).size() != targets.size()) {
            throw new IllegalArgumentException(id + ": a target appears twice in " + targets);
        }
        targets = List.copyOf(targets);
    }

    public int replicas() {
        return targets.size();
    }
}
