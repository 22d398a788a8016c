package io.strata.namespace;

import io.strata.core.ChainId;
import java.util.List;
import java.util.Optional;

/**
 * The chain tables file layouts draw from. The namespace does not depend on the cluster
 * manager: the client (or {@code strata meta} with a manager) adapts placement's
 * {@code RoutingInfo} ({@code latestTable(replicas)}, {@code table(id, version)}) to this
 * interface; tests and a stand-alone meta service use {@link StaticChainTables} from config.
 */
public interface ChainTables {
    /** One version of a chain table: its chains in table order, each of {@code replicas} targets. */
    record Table(int id, int version, int replicas, List<ChainId> chains) {
        public Table {
            if (id <= 0 || version <= 0 || replicas < 1 || replicas > 5 || chains == null || chains.isEmpty()) {
                throw new IllegalArgumentException("bad chain table " + id + " v" + version + " (" + replicas + " replicas, " + chains + ")");
            }
            chains = List.copyOf(chains);
        }
    }

    /** The table new files with {@code replicas} replicas use (the newest version). */
    Optional<Table> latest(int replicas);

    /** A specific version of a table, as a layout recorded it. */
    Optional<Table> table(int id, int version);
}
