package io.strata.harness;

import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.qos.QosShares;
import io.strata.core.fault.FaultInjector;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.util.Futures;
import io.strata.core.util.JavaProcess;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.storage.StorageConfig;
import io.strata.storage.StorageNode;
import io.strata.storage.StorageNodeMain;
import io.strata.storage.engine.EngineOptions;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.placement.RoutingSource;
import io.strata.placement.StaticRoutingSource;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.core.util.Eventually;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * N storage nodes on loopback, for tests and benchmarks that need L3, routed either by a static
 * chain table or, with {@link Builder#managed}, by a real cluster manager
 * ({@link MiniMgmtdCluster}, one Ratis peer in this JVM) that the nodes register and heartbeat
 * with, exactly as in production. Nodes run
 * in this JVM (each node its own {@link NodeContext}, so faults and metrics are per node) or as
 * real child processes ({@link StorageNodeMain} via {@link JavaProcess}, so a test can kill -9
 * one). Chain {@code c} (1..chains) has {@code replicas} targets on nodes c, c+1, ... (mod N),
 * head first; the target of chain c on node n is {@code n*1000 + c}.
 *
 * <pre>{@code
 * try (StorageCluster c = StorageCluster.builder(dir, seed).nodes(3).chains(2).start()) {
 *     StorageClient client = c.client("writer");
 *     ChunkAddress a = c.chunk(7, 0, 1, 1 << 20);        // inode 7, chunk 0, chain 1, 1 MiB chunks
 *     ... client.writeAsync(a, 0, data, IoOptions.DEFAULT) ...
 *     c.kill(2); c.restart(2);                            // in-process: abrupt close; processes: kill -9
 * }
 * }</pre>
 *
 * <b>Static routing</b> (the default): in-process nodes and clients share one
 * {@link StaticRoutingSource} ({@link #routing()}), which {@link #updateRouting} changes as a
 * cluster manager would. Process nodes read the routing from their config file and keep it:
 * routing changes are for in-process clusters.
 *
 * <p><b>Managed</b> ({@code .managed(lease)}): node i registers targets {@code i*1000 + k}
 * (k = 1..targets per node), the harness creates chain table 1 once every node registered and
 * waits until every chained target serves. Chains and their order are the manager's: ask
 * {@link #members}, {@link #targetOf} or {@link #managerRouting()}. Every client gets its own
 * {@link ManagerRoutingSource}. A killed node loses its lease after {@code lease}; a restarted one
 * registers as a new incarnation and is resynced before it serves again ({@link #awaitServing}).
 */
public final class StorageCluster implements AutoCloseable {
    /** Where the nodes run. */
    public enum Mode { IN_PROCESS, PROCESSES }

    /**
     * The default flags of the harness's child JVMs: short-lived test processes, whose C1 only and
     * serial GC start faster and leave the cores to the test.
     */
    static final List<String> CHILD_JVM_ARGS = List.of("-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");

    private final Builder b;
    private final StaticRoutingSource routing = new StaticRoutingSource(RoutingInfo.EMPTY);
    private MiniMgmtdCluster mgmtd;
    private RoutingSource watch;
    private final int[] starts;
    private final InetSocketAddress[] addresses;
    private final NodeContext[] contexts;
    private final StorageNode[] nodes;
    private final JavaProcess[] processes;
    private final List<AutoCloseable> clients = new ArrayList<>();

    private StorageCluster(Builder b) {
        this.b = b;
        addresses = new InetSocketAddress[b.nodes + 1];
        contexts = new NodeContext[b.nodes + 1];
        nodes = new StorageNode[b.nodes + 1];
        processes = new JavaProcess[b.nodes + 1];
        starts = new int[b.nodes + 1];
    }

    public static Builder builder(Path dir, long seed) {
        return new Builder(dir, seed);
    }

    /** Settings; {@link #start()} starts the cluster. */
    public static final class Builder {
        private final Path dir;
        private final long seed;
        private int nodes = 3;
        private int chains = 1;
        private int replicas = 3;
        private Mode mode = Mode.IN_PROCESS;
        private EngineOptions engine = EngineOptions.DEFAULTS;
        private Duration forwardTimeout = Duration.ofSeconds(2);
        private Duration lease;
        private DataSize resyncBandwidth = io.strata.storage.StorageConfig.DEFAULT_RESYNC_BANDWIDTH;
        private DataSize resyncBudget = DataSize.ZERO;
        private QosShares qos = QosShares.DEFAULTS;
        private io.strata.storage.ScrubOptions scrub = io.strata.storage.ScrubOptions.DEFAULTS;
        private boolean pipeline = true;
        private List<String> jvmArgs = CHILD_JVM_ARGS;
        private ClusterKey key;

        private Builder(Path dir, long seed) {
            this.dir = dir;
            this.seed = seed;
        }

        public Builder nodes(int n) {
            this.nodes = n;
            return this;
        }

        public Builder chains(int n) {
            this.chains = n;
            return this;
        }

        public Builder replicas(int n) {
            this.replicas = n;
            return this;
        }

        public Builder mode(Mode m) {
            this.mode = m;
            return this;
        }

        public Builder engine(EngineOptions e) {
            this.engine = e;
            return this;
        }

        /** One attempt to forward an update down the chain. */
        public Builder forwardTimeout(Duration d) {
            this.forwardTimeout = d;
            return this;
        }

        /**
         * Nodes register with a cluster manager (one Ratis peer in this JVM) whose leases last
         * {@code lease}; chains come from the manager's chain table 1.
         */
        public Builder managed(Duration lease) {
            this.lease = lease;
            return this;
        }

        /** {@code [storage] resync-bandwidth} of every node. */
        public Builder resyncBandwidth(DataSize perSecond) {
            this.resyncBandwidth = perSecond;
            return this;
        }

        /** {@code [storage] resync-budget} of every node (the cluster's resyncs together). */
        public Builder resyncBudget(DataSize perSecond) {
            this.resyncBudget = perSecond;
            return this;
        }

        /** {@code [storage.qos]} of every in-process node. */
        public Builder qos(QosShares shares) {
            this.qos = shares;
            return this;
        }

        /** {@code [storage] pipeline} of every in-process node. */
        public Builder pipeline(boolean on) {
            this.pipeline = on;
            return this;
        }

        /** {@code [storage.scrub]} of every in-process node. */
        public Builder scrub(io.strata.storage.ScrubOptions options) {
            this.scrub = options;
            return this;
        }

        /**
         * Authentication on, in-process nodes only: each node verifies tokens signed by
         * {@code key} and presents a {@code storage} token for {@code node-i}; each
         * {@link #clientContext client context} presents a {@code client} token named after it.
         */
        public Builder auth(ClusterKey key) {
            this.key = key;
            return this;
        }

        /** Extra JVM flags of process nodes. */
        public Builder jvmArgs(List<String> args) {
            this.jvmArgs = List.copyOf(args);
            return this;
        }

        public StorageCluster start() {
            if (replicas < 1 || replicas > nodes || chains < 1 || chains > 999) {
                throw new IllegalArgumentException("need 1 <= replicas <= nodes and 1..999 chains");
            }
            return Lifecycle.startOrClose(new StorageCluster(this), StorageCluster::startAll);
        }
    }

    private void startAll() {
        if (managed()) {
            mgmtd = MiniMgmtdCluster.builder(b.dir.resolve("mgmtd")).peers(1).lease(b.lease).seed(b.seed).start();
            NodeContext hctx = clientContext("harness");
            watch = managerSource(hctx);
        }
        if (b.mode == Mode.PROCESSES) {
            for (int i = 1; i <= b.nodes; i++) {
                addresses[i] = new InetSocketAddress("127.0.0.1", Ports.free());
            }
            if (!managed()) {
                routing.update(routingInfo(1, Map.of()));
            }
            for (int i = 1; i <= b.nodes; i++) {
                launchProcess(i, null);
            }
            for (int i = 1; i <= b.nodes; i++) {
                awaitProcess(i);
            }
        } else {
            for (int i = 1; i <= b.nodes; i++) {
                startInProcess(i);
            }
            if (!managed()) {
                routing.update(routingInfo(1, Map.of()));
            }
        }
        if (managed()) {
            for (int i = 1; i <= b.nodes; i++) {
                if (b.mode == Mode.IN_PROCESS) {
                    Futures.join(nodes[i].registered(), Duration.ofSeconds(60));
                }
            }
            MgmtdClient admin = new MgmtdClient(clientContext("harness-admin"), mgmtd.addresses());
            synchronized (clients) {
                clients.add(admin);
            }
            Futures.join(admin.call(new MgmtdMessage.CreateChainTable(1, b.replicas), MgmtdMessage.ChainTableCreated.class,
                    Duration.ofSeconds(10), Duration.ofSeconds(60)), Duration.ofSeconds(70));
            awaitServing(Duration.ofSeconds(60));
        }
    }

    private boolean managed() {
        return b.lease != null;
    }

    private ManagerRoutingSource managerSource(NodeContext ctx) {
        MgmtdClient c = new MgmtdClient(ctx, mgmtd.addresses());
        ManagerRoutingSource src = ManagerRoutingSource.start(ctx, c, Duration.ofSeconds(10), Duration.ofSeconds(3));
        synchronized (clients) {
            clients.add(c);
            clients.add(src);
        }
        return src;
    }

    /** The cluster manager of a managed cluster. */
    public MiniMgmtdCluster manager() {
        if (mgmtd == null) {
            throw new IllegalStateException("this cluster is routed by a static table");
        }
        return mgmtd;
    }

    /** The routing the manager's leader has applied (managed clusters). */
    public RoutingInfo managerRouting() {
        return manager().leader(Duration.ofSeconds(30)).routing();
    }

    /** The routing clients of this cluster use: the static table, or the manager's (as a harness client last saw it). */
    public RoutingSource routingSource() {
        return managed() ? watch : routing;
    }

    /**
     * Waits until every target of every chain serves (managed clusters: in the manager's routing,
     * and in the routing a client of this harness sees).
     */
    public RoutingInfo awaitServing(Duration timeout) {
        RoutingInfo[] out = new RoutingInfo[1];
        Eventually.await("every chained target serving", timeout, () -> {
            RoutingInfo r = managed() ? managerRouting() : routing.current();
            if (r.chains().isEmpty() || (managed() && watch.current().version() < r.version())) {
                return false;
            }
            for (ChainInfo c : r.chains().values()) {
                for (TargetId t : c.targets()) {
                    if (r.target(t).state() != TargetState.SERVING) {
                        return false;
                    }
                }
            }
            out[0] = r;
            return true;
        });
        return out[0];
    }

    // ---- layout ----

    public int nodeCount() {
        return b.nodes;
    }

    public List<ChainId> chains() {
        if (managed()) {
            return new ArrayList<>(managerRouting().chains().keySet());
        }
        List<ChainId> out = new ArrayList<>();
        for (int c = 1; c <= b.chains; c++) {
            out.add(ChainId.of(c));
        }
        return out;
    }

    /** The nodes holding chain {@code chain}, head first (managed: in the manager's current chain order). */
    public List<Integer> members(int chain) {
        List<Integer> out = new ArrayList<>();
        if (managed()) {
            for (TargetId t : managerRouting().chain(ChainId.of(chain)).targets()) {
                out.add(nodeOf(t));
            }
            return out;
        }
        for (int k = 0; k < b.replicas; k++) {
            out.add((chain - 1 + k) % b.nodes + 1);
        }
        return out;
    }

    /** The node (1-based) a target of this cluster lives on. */
    public static int nodeOf(TargetId t) {
        return (int) (t.value() / 1000);
    }

    /** The target of chain {@code chain} on node {@code node}, in either mode. */
    public TargetId targetOf(int node, int chain) {
        if (!managed()) {
            return target(node, chain);
        }
        for (TargetId t : managerRouting().chain(ChainId.of(chain)).targets()) {
            if (nodeOf(t) == node) {
                return t;
            }
        }
        throw new IllegalArgumentException("chain " + chain + " has no target on node " + node);
    }

    /** How many targets each node has in a managed cluster. */
    private int targetsPerNode() {
        return (b.chains * b.replicas + b.nodes - 1) / b.nodes;
    }

    /** The target of chain {@code chain} on node {@code node}. */
    public static TargetId target(int node, int chain) {
        return TargetId.of(node * 1000L + chain);
    }

    /** A chunk address: chunk {@code index} of inode {@code inode} on chain {@code chain}. */
    public static ChunkAddress chunk(long inode, int index, int chain, int chunkSize) {
        return new ChunkAddress(ChunkId.of(inode, index), ChainId.of(chain), chunkSize);
    }

    /** Node {@code i}'s RPC address. */
    public InetSocketAddress address(int i) {
        return addresses[i];
    }

    /** The routing every client of this cluster (and every in-process node) uses. */
    public StaticRoutingSource routing() {
        return routing;
    }

    /**
     * Routing at {@code version} with the default layout, except that chains listed in
     * {@code order} get that node order (version = {@code version}) and their other targets are
     * offline at the end. Pass it to {@link #updateRouting}.
     */
    public RoutingInfo routingInfo(long version, Map<Integer, List<Integer>> order) {
        Map<NodeId, NodeInfo> ns = new HashMap<>();
        Map<TargetId, TargetInfo> ts = new HashMap<>();
        Map<ChainId, ChainInfo> cs = new HashMap<>();
        for (int i = 1; i <= b.nodes; i++) {
            ns.put(NodeId.of(i), new NodeInfo(NodeId.of(i), addresses[i].getHostString(), addresses[i].getPort(), Map.of("host", "h" + i)));
        }
        for (int c = 1; c <= b.chains; c++) {
            List<TargetId> members = new ArrayList<>();
            for (int n : order.getOrDefault(c, members(c))) {
                members.add(target(n, c));
            }
            for (int n : members(c)) {
                boolean off = order.containsKey(c) && !order.get(c).contains(n);
                ts.put(target(n, c), new TargetInfo(target(n, c), NodeId.of(n), off ? TargetState.OFFLINE : TargetState.SERVING));
                if (!members.contains(target(n, c))) {
                    members.add(target(n, c));
                }
            }
            cs.put(ChainId.of(c), new ChainInfo(ChainId.of(c), order.containsKey(c) ? version : 1, members));
        }
        return new RoutingInfo(version, ns, ts, cs, List.of(new ChainTable(1, 1, b.replicas, chains())));
    }

    /** Publishes a new routing version to every in-process node and client (as the cluster manager would). */
    public void updateRouting(UnaryOperator<RoutingInfo> change) {
        routing.update(change.apply(routing.current()));
    }

    // ---- nodes ----

    private StorageConfig config(int i) {
        List<StorageConfig.Target> targets = new ArrayList<>();
        if (managed()) {
            for (int k = 1; k <= targetsPerNode(); k++) {
                TargetId t = TargetId.of(i * 1000L + k);
                targets.add(new StorageConfig.Target(t, nodeDir(i).resolve("t" + t.value())));
            }
            return new StorageConfig(NodeId.of(i), targets, b.engine, b.forwardTimeout).withMgmtd(mgmtd.addresses())
                    .withLabels(Map.of("host", "h" + i)).withResyncBandwidth(b.resyncBandwidth).withQos(b.qos)
                    .withScrub(b.scrub).withPipeline(b.pipeline).withResyncBudget(b.resyncBudget);
        }
        for (int c = 1; c <= b.chains; c++) {
            if (members(c).contains(i)) {
                targets.add(new StorageConfig.Target(target(i, c), nodeDir(i).resolve("t" + target(i, c).value())));
            }
        }
        return new StorageConfig(NodeId.of(i), targets, b.engine, b.forwardTimeout).withResyncBandwidth(b.resyncBandwidth).withQos(b.qos)
                    .withScrub(b.scrub).withPipeline(b.pipeline).withResyncBudget(b.resyncBudget);
    }

    /** Node {@code i}'s data directory. */
    public Path nodeDir(int i) {
        return b.dir.resolve("storage-" + i);
    }

    private void startInProcess(int i) {
        // each start its own seed: a restarted node is a new incarnation for the manager
        long seed = b.seed + 7919L * i + 104729L * starts[i]++;
        NodeContext.Builder ctx = NodeContext.builder("storage-" + i).seed(seed).faults(new FaultInjector(seed))
                .eventLoopThreads(1).blockingThreads(2);
        if (b.key != null) {
            ctx.verifier(new TokenVerifier(b.key)).credentials(token(Role.STORAGE, NodeId.of(i).toString()));
        }
        contexts[i] = ctx.build();
        InetSocketAddress listen = addresses[i] == null ? new InetSocketAddress("127.0.0.1", 0) : addresses[i];
        try {
            nodes[i] = managed() ? StorageNode.startManaged(contexts[i], config(i), RpcOptions.DEFAULTS, listen)
                    : StorageNode.start(contexts[i], config(i), routing, RpcOptions.DEFAULTS, listen);
        } catch (RuntimeException e) {
            contexts[i].close();
            contexts[i] = null;
            throw e;
        }
        addresses[i] = nodes[i].address();
    }

    private void awaitProcess(int i) {
        processes[i].awaitReady(() -> Files.exists(nodeDir(i).resolve("ready.properties")), Duration.ofSeconds(60));
    }

    private void launchProcess(int i, String crashAt) {
        try {
            Files.createDirectories(nodeDir(i));
            Path cfg = nodeDir(i).resolve("storage.toml");
            Files.writeString(cfg, toml(i));
            Files.deleteIfExists(nodeDir(i).resolve("ready.properties"));
            List<String> args = new ArrayList<>(List.of("--config", cfg.toString()));
            if (crashAt != null) {
                args.add("--crash-at");
                args.add(crashAt);
            }
            JavaProcess p = JavaProcess.start("storage-" + i, StorageNodeMain.class.getName(), args, b.jvmArgs, Map.of(),
                    nodeDir(i).resolve("storage.log"));
            processes[i] = p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The config file of process node {@code i}: [node], [storage] and (static routing) the whole [routing] table. */
    private String toml(int i) {
        StringBuilder s = new StringBuilder();
        s.append("[node]\nname = \"storage-").append(i).append("\"\nlisten = \"127.0.0.1:").append(addresses[i].getPort())
                .append("\"\ndata = \"").append(nodeDir(i)).append("\"\n\n[storage]\nnode-id = ").append(i)
                .append("\nforward-timeout = \"").append(b.forwardTimeout.toMillis()).append("ms\"\n")
                .append("resync-bandwidth = \"").append(b.resyncBandwidth.bytes()).append("B\"\n")
                .append("resync-budget = \"").append(b.resyncBudget.bytes()).append("B\"\n");
        if (managed()) {
            s.append("mgmtd = [\"").append(mgmtd.addressList().replace(",", "\", \"")).append("\"]\n")
                    .append("labels = { host = \"h").append(i).append("\" }\n");
        }
        for (StorageConfig.Target t : config(i).targets()) {
            s.append("[[storage.targets]]\nid = ").append(t.id().value()).append("\npath = \"").append(t.path()).append("\"\n");
        }
        if (!managed()) {
            s.append('\n').append(RoutingToml.of(routing.current()));
        }
        return s.toString();
    }

    /** An in-process node (fails for process clusters). */
    public StorageNode node(int i) {
        if (nodes[i] == null) {
            throw new IllegalStateException("storage-" + i + " is not running in this JVM");
        }
        return nodes[i];
    }

    /** An in-process node's context: its fault injector, meters, seed. */
    public NodeContext context(int i) {
        if (contexts[i] == null) {
            throw new IllegalStateException("storage-" + i + " is not running in this JVM");
        }
        return contexts[i];
    }

    /** A process node (fails for in-process clusters). */
    public JavaProcess process(int i) {
        return processes[i];
    }

    public boolean isRunning(int i) {
        return b.mode == Mode.PROCESSES ? processes[i] != null && processes[i].isAlive() : nodes[i] != null;
    }

    /** Stops node {@code i} abruptly: kill -9 for a process; for an in-process node, a close without waiting for clients. */
    public void kill(int i) {
        if (b.mode == Mode.PROCESSES) {
            if (processes[i] != null) {
                processes[i].kill();
            }
        } else if (nodes[i] != null) {
            nodes[i].close();
            contexts[i].close();
            nodes[i] = null;
            contexts[i] = null;
        }
    }

    /** Stops node {@code i} in order (SIGTERM for a process). */
    public void stop(int i) {
        if (b.mode == Mode.PROCESSES) {
            if (processes[i] != null) {
                processes[i].stop(Duration.ofSeconds(10));
            }
        } else {
            kill(i);
        }
    }

    /** Starts node {@code i} again on the same address and directories. */
    public void restart(int i) {
        restart(i, null, true);
    }

    /**
     * Starts node {@code i} again and returns at once: a process node is launched (its
     * {@code nodeDir(i)/ready.properties} appears once it serves RPCs, and in a managed cluster
     * once it registered); an in-process node starts as in {@link #restart}. For benchmarks that
     * time the way back.
     */
    public void restartAsync(int i) {
        restart(i, null, false);
    }

    /**
     * Restarts process node {@code i} armed to halt itself (as kill -9) the {@code n}-th time
     * fault point {@code point} fires, e.g. {@code chunk.data-write} in the middle of a chunk write.
     */
    public void restartArmed(int i, String point, int n) {
        if (b.mode != Mode.PROCESSES) {
            throw new IllegalStateException("armed restarts are for process clusters");
        }
        restart(i, point + ":" + n, true);
    }

    /** {@code awaitReady}: a process node is waited for until it serves (in-process nodes always are). */
    private void restart(int i, String crashAt, boolean awaitReady) {
        if (isRunning(i)) {
            throw new IllegalStateException("storage-" + i + " is running");
        }
        if (b.mode == Mode.IN_PROCESS) {
            startInProcess(i);
            return;
        }
        launchProcess(i, crashAt);
        if (awaitReady) {
            awaitProcess(i);
        }
    }

    // ---- clients ----

    /** A client with its own context (seeded from the cluster seed and {@code name}); closed with the cluster. */
    public StorageClient client(String name) {
        return client(name, StorageClientOptions.DEFAULTS);
    }

    public StorageClient client(String name, StorageClientOptions options) {
        NodeContext ctx = clientContext(name);
        StorageClient c = new StorageClient(ctx, managed() ? managerSource(ctx) : routing, RpcOptions.DEFAULTS, options);
        synchronized (clients) {
            clients.add(c);
        }
        return c;
    }

    /** A day's token of {@code role} for {@code subject}, signed with the cluster's key. */
    public Credentials token(Role role, String subject) {
        return Credentials.of(Token.issue(b.key, role, subject, Instant.now(), Duration.ofDays(1)));
    }

    /** A context for a client-side component (its faults are armed independently). */
    public NodeContext clientContext(String name) {
        long seed = b.seed ^ (name.hashCode() * 0x9E3779B97F4A7C15L);
        NodeContext.Builder cb = NodeContext.builder(name).seed(seed).faults(new FaultInjector(seed)).eventLoopThreads(1).blockingThreads(1);
        if (b.key != null) {
            cb.credentials(token(Role.CLIENT, name));
        }
        NodeContext ctx = cb.build();
        synchronized (clients) {
            clients.add(ctx);
        }
        return ctx;
    }

    @Override
    public void close() {
        List<AutoCloseable> cs;
        synchronized (clients) {
            cs = new ArrayList<>(clients);
            clients.clear();
        }
        // clients were added after their contexts: close in reverse
        for (int k = cs.size() - 1; k >= 0; k--) {
            Lifecycle.closeQuietly(cs.get(k));
        }
        for (int i = 1; i <= b.nodes; i++) {
            if (b.mode == Mode.PROCESSES) {
                if (processes[i] != null) {
                    processes[i].close();
                }
            } else {
                kill(i);
            }
        }
        if (mgmtd != null) {
            mgmtd.close();
        }
    }
}
