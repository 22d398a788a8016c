package io.strata.namespace;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.ChainId;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Chain tables fixed by configuration, for a meta service without a cluster manager and for
 * tests:
 * <pre>
 * [[meta.chain-tables]]
 * id = 1
 * version = 1
 * replicas = 3
 * chains = [1, 2, 3, 4]
 * </pre>
 * For each replica count, the table with the lowest id (newest version) is the one new files use.
 */
public final class StaticChainTables implements ChainTables {
    private final List<Table> tables;

    public StaticChainTables(List<Table> tables) {
        this.tables = List.copyOf(tables);
    }

    public static StaticChainTables of(Table... tables) {
        return new StaticChainTables(List.of(tables));
    }

    /** A table of {@code chains} chains numbered 1..chains for each replica count 1..5 (tests, benchmarks). */
    public static StaticChainTables uniform(int chains) {
        List<Table> ts = new ArrayList<>();
        for (int r = 1; r <= 5; r++) {
            List<ChainId> ids = new ArrayList<>();
            for (int c = 1; c <= chains; c++) {
                ids.add(ChainId.of(r * 1000 + c));
            }
            ts.add(new Table(r, 1, r, ids));
        }
        return new StaticChainTables(ts);
    }

    public static StaticChainTables fromConfig(List<ConfigNode> sections) {
        List<Table> ts = new ArrayList<>();
        for (ConfigNode t : sections) {
            List<ChainId> ids = new ArrayList<>();
            for (long c : t.longs("chains", List.of(), 1, Integer.MAX_VALUE)) {
                ids.add(ChainId.of((int) c));
            }
            try {
                ts.add(new Table(t.integer("id", 0, 1, Integer.MAX_VALUE), t.integer("version", 1, 1, Integer.MAX_VALUE),
                        t.integer("replicas", 3, 1, 5), ids));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(t.path(), e.getMessage());
            }
        }
        return new StaticChainTables(ts);
    }

    public List<Table> tables() {
        return tables;
    }

    @Override
    public Optional<Table> latest(int replicas) {
        return tables.stream().filter(t -> t.replicas() == replicas)
                .min((a, b) -> a.id() != b.id() ? Integer.compare(a.id(), b.id()) : Integer.compare(b.version(), a.version()));
    }

    @Override
    public Optional<Table> table(int id, int version) {
        return tables.stream().filter(t -> t.id() == id && t.version() == version).findFirst();
    }
}
