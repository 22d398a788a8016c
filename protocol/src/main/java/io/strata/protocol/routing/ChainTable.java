package io.strata.protocol.routing;

import io.strata.core.ChainId;
import java.util.List;

/**
 * A numbered, versioned list of chains that file layouts draw from. A file records the table
 * id and version it was created with, so adding nodes (a new table version) never moves an
 * existing file's chunks. All chains of a table have {@link #replicas()} targets.
 */
public record ChainTable(int id, int version, int replicas, List<ChainId> chains) {
    public ChainTable {
        if (id <= 0 || version <= 0) {
            throw new IllegalArgumentException("chain table id and version must be positive, got " + id + " v" + version);
        }
        if (replicas < 1 || replicas > 5) {
            throw new IllegalArgumentException("chain table " + id + ": replicas must be 1..5, got " + replicas);
        }
        if (chains == null || chains.isEmpty()) {
            throw new IllegalArgumentException("chain table " + id + " v" + version + " has no chains");
        }
        chains = List.copyOf(chains);
    }
}
