package io.strata.storage;

import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.fault.FaultInjector;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.storage.engine.EngineOptions;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.placement.StaticRoutingSource;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A few storage nodes in this JVM (own NodeContext each) sharing one static routing source;
 * chain c has 3 targets on nodes c, c+1, c+2 (mod n), head first. Target id = node*100 + chain.
 * The reusable cluster harness is test-support's io.strata.harness.StorageCluster; this
 * is the module's own small one (test-support depends on this module, not the reverse).
 */
final class ChainFixture implements AutoCloseable {
    final Path dir;
    final long seed;
    final int nodeCount;
    final int chains;
    final StaticRoutingSource routing = new StaticRoutingSource(RoutingInfo.EMPTY);
    final NodeContext[] ctx;
    final StorageNode[] nodes;
    final InetSocketAddress[] addresses;
    private final List<AutoCloseable> extras = new ArrayList<>();
    private final EngineOptions engine;
    private final io.strata.core.DataSize resyncBandwidth;
    private final int[] starts;

    ChainFixture(Path dir, long seed, int nodeCount, int chains, EngineOptions engine) {
        this(dir, seed, nodeCount, chains, engine, StorageConfig.DEFAULT_RESYNC_BANDWIDTH);
    }

    ChainFixture(Path dir, long seed, int nodeCount, int chains, EngineOptions engine, io.strata.core.DataSize resyncBandwidth) {
        this.engine = engine;
        this.resyncBandwidth = resyncBandwidth;
        this.starts = new int[nodeCount + 1];
        this.dir = dir;
        this.seed = seed;
        this.nodeCount = nodeCount;
        this.chains = chains;
        this.ctx = new NodeContext[nodeCount + 1];
        this.nodes = new StorageNode[nodeCount + 1];
        this.addresses = new InetSocketAddress[nodeCount + 1];
        for (int i = 1; i <= nodeCount; i++) {
            start(i, engine);
        }
        routing.update(routing(2, Map.of()));
    }

    ChainFixture(Path dir, long seed) {
        this(dir, seed, 3, 2, EngineOptions.DEFAULTS);
    }

    private void start(int i, EngineOptions engine) {
        long s = seed + i + 1000L * starts[i]++;
        ctx[i] = NodeContext.builder("storage-" + i).seed(s).faults(new FaultInjector(s))
                .eventLoopThreads(1).blockingThreads(2).build();
        List<StorageConfig.Target> targets = new ArrayList<>();
        for (int c = 1; c <= chains; c++) {
            if (members(c).contains(i)) {
                targets.add(new StorageConfig.Target(target(i, c), dir.resolve("node-" + i).resolve("t" + target(i, c).value())));
            }
        }
        StorageConfig cfg = new StorageConfig(NodeId.of(i), targets, engine, Duration.ofSeconds(2)).withResyncBandwidth(resyncBandwidth);
        InetSocketAddress listen = addresses[i] == null ? new InetSocketAddress("127.0.0.1", 0) : addresses[i];
        nodes[i] = StorageNode.start(ctx[i], cfg, routing, RpcOptions.DEFAULTS, listen);
        addresses[i] = nodes[i].address();
    }

    /** The nodes of chain {@code c}, head first. */
    List<Integer> members(int c) {
        List<Integer> out = new ArrayList<>();
        for (int k = 0; k < Math.min(3, nodeCount); k++) {
            out.add((c - 1 + k) % nodeCount + 1);
        }
        return out;
    }

    static TargetId target(int node, int chain) {
        return TargetId.of(node * 100L + chain);
    }

    /** Routing at {@code version}; {@code order} overrides a chain's node order (and so its version bump is the caller's). */
    RoutingInfo routing(long version, Map<Integer, List<Integer>> order) {
        Map<NodeId, NodeInfo> ns = new HashMap<>();
        Map<TargetId, TargetInfo> ts = new HashMap<>();
        Map<ChainId, ChainInfo> cs = new HashMap<>();
        List<ChainId> ids = new ArrayList<>();
        for (int i = 1; i <= nodeCount; i++) {
            ns.put(NodeId.of(i), new NodeInfo(NodeId.of(i), "127.0.0.1", addresses[i].getPort(), Map.of("host", "h" + i)));
        }
        for (int c = 1; c <= chains; c++) {
            List<TargetId> members = new ArrayList<>();
            for (int n : order.getOrDefault(c, members(c))) {
                members.add(target(n, c));
            }
            for (int n : members(c)) {
                TargetState st = order.containsKey(c) && !order.get(c).contains(n) ? TargetState.OFFLINE : TargetState.SERVING;
                ts.put(target(n, c), new TargetInfo(target(n, c), NodeId.of(n), st));
                if (!members.contains(target(n, c))) {
                    members.add(target(n, c)); // offline targets stay at the end of the chain
                }
            }
            cs.put(ChainId.of(c), new ChainInfo(ChainId.of(c), order.containsKey(c) ? version : 1, members));
            ids.add(ChainId.of(c));
        }
        return new RoutingInfo(version, ns, ts, cs, List.of(new ChainTable(1, 1, Math.min(3, nodeCount), ids)));
    }

    StorageClient client(String name, StorageClientOptions options) {
        NodeContext c = NodeContext.builder(name).seed(seed ^ name.hashCode()).faults(new FaultInjector(seed ^ name.hashCode()))
                .eventLoopThreads(1).blockingThreads(1).build();
        StorageClient client = new StorageClient(c, routing, RpcOptions.DEFAULTS, options);
        extras.add(c);
        extras.add(client);
        return client;
    }

    static ChunkAddress chunk(long inode, int index, int chain, int size) {
        return new ChunkAddress(ChunkId.of(inode, index), ChainId.of(chain), size);
    }

    void stop(int i) {
        nodes[i].close();
        ctx[i].close();
        nodes[i] = null;
    }

    void restart(int i) {
        start(i, engine);
    }

    @Override
    public void close() {
        for (int k = extras.size() - 1; k >= 0; k--) {
            try {
                extras.get(k).close();
            } catch (Exception ignored) {
                // best effort
            }
        }
        for (int i = 1; i <= nodeCount; i++) {
            if (nodes[i] != null) {
                stop(i);
            }
        }
    }
}
