package io.strata.placement;

import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.ChainId;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Routing info fixed by configuration, or replaced by hand with {@link #update} (tests that
 * change a chain without a cluster manager). Config format:
 * <pre>
 * [routing]
 * version = 1
 * [[routing.nodes]]
 * id = 1
 * address = "127.0.0.1:9101"
 * labels = { host = "a", rack = "r1" }
 * [[routing.targets]]
 * id = 101
 * node = 1
 * state = "serving"            # optional, default serving
 * [[routing.chains]]
 * id = 1
 * version = 1                  # optional, default 1
 * targets = [101, 201, 301]    # head first
 * [[routing.tables]]
 * id = 1
 * version = 1
 * chains = [1, 2, 3]
 * </pre>
 */
public final class StaticRoutingSource implements RoutingSource {
    private volatile RoutingInfo info;
    private final List<Consumer<RoutingInfo>> listeners = new CopyOnWriteArrayList<>();

    public StaticRoutingSource(RoutingInfo info) {
        this.info = info;
    }

    /** Reads the {@code [routing]} table. */
    public static StaticRoutingSource fromConfig(ConfigNode routing) {
        long version = routing.integer("version", 1L, 1L, Long.MAX_VALUE);
        Map<NodeId, NodeInfo> nodes = new HashMap<>();
        for (ConfigNode n : routing.sections("nodes")) {
            NodeId id = NodeId.of((int) n.integer("id", 0L, 1L, Integer.MAX_VALUE));
            var addr = n.address("address").orElseThrow(() -> new ConfigException(n.path() + ".address", "is required"));
            nodes.put(id, new NodeInfo(id, addr.getHostString(), addr.getPort(), n.stringMap("labels")));
        }
        Map<TargetId, TargetInfo> targets = new HashMap<>();
        for (ConfigNode t : routing.sections("targets")) {
            TargetId id = TargetId.of(t.integer("id", 0L, 1L, Long.MAX_VALUE));
            NodeId node = NodeId.of((int) t.integer("node", 0L, 1L, Integer.MAX_VALUE));
            targets.put(id, new TargetInfo(id, node, t.choice("state", TargetState.SERVING, TargetState.class)));
        }
        Map<ChainId, ChainInfo> chains = new HashMap<>();
        for (ConfigNode c : routing.sections("chains")) {
            ChainId id = ChainId.of((int) c.integer("id", 0L, 1L, Integer.MAX_VALUE));
            List<TargetId> members = new ArrayList<>();
            for (long t : c.longs("targets", List.of(), 1, Long.MAX_VALUE)) {
                members.add(TargetId.of(t));
            }
            try {
                chains.put(id, new ChainInfo(id, c.integer("version", 1L, 1L, Long.MAX_VALUE), members));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(c.path(), e.getMessage());
            }
        }
        List<ChainTable> tables = new ArrayList<>();
        for (ConfigNode t : routing.sections("tables")) {
            List<ChainId> ids = new ArrayList<>();
            for (long c : t.longs("chains", List.of(), 1, Integer.MAX_VALUE)) {
                ids.add(ChainId.of((int) c));
            }
            int replicas = ids.isEmpty() || !chains.containsKey(ids.get(0)) ? 0 : chains.get(ids.get(0)).replicas();
            try {
                tables.add(new ChainTable((int) t.integer("id", 0L, 1L, Integer.MAX_VALUE),
                        (int) t.integer("version", 1L, 1L, Integer.MAX_VALUE), replicas, ids));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(t.path(), e.getMessage());
            }
        }
        try {
            return new StaticRoutingSource(new RoutingInfo(version, nodes, targets, chains, tables));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(routing.path(), e.getMessage());
        }
    }

    /** Replaces the routing info (its version must grow) and tells the listeners. */
    public void update(RoutingInfo next) {
        if (next.version() <= info.version()) {
            throw new IllegalArgumentException("routing version must grow: " + info.version() + " -> " + next.version());
        }
        info = next;
        listeners.forEach(l -> l.accept(next));
    }

    @Override
    public RoutingInfo current() {
        return info;
    }

    @Override
    public CompletableFuture<RoutingInfo> refreshAsync(long knownVersion) {
        return CompletableFuture.completedFuture(info);
    }

    @Override
    public void onChange(Consumer<RoutingInfo> listener) {
        listeners.add(listener);
    }
}
