package io.strata.storage;

import io.strata.core.ChainId;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.auth.Role;
import io.strata.core.qos.QosScheduler;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.storage.engine.ChunkEngine;
import io.strata.protocol.storage.StorageMessages;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.placement.RoutingSource;
import io.strata.protocol.routing.TargetInfo;
import io.strata.placement.NodeAgent;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.util.concurrent.ConcurrentHashMap;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.nio.file.Files;
import java.nio.file.FileStore;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.mgmtd.MgmtdMessage.TargetSpace;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A storage node: one chunk engine per target, the CRAQ protocol over the RPC layer, resync, and
 * the routing it serves by. Start one with {@link #startManaged} (registered with the cluster
 * manager: the normal case) or {@link #start} (a static routing table: tests, setups without a
 * manager); {@link StorageNodeMain} and {@code strata storage} wrap it in a process.
 *
 * <p><b>Routing.</b> The node routes every request by {@link RoutingSource#current()}, rejects a
 * chain version other than its own with {@code STALE_CHAIN_VERSION} (after refreshing once when
 * the sender's is newer), and on {@link RoutingSource#onChange} wakes every forward that waits
 * to retry, which then re-reads the chain: a predecessor with a write in flight retries against
 * its new successor, and a node that became the tail commits. A routing change also starts,
 * restarts or stops resyncs ({@link ResyncWorker}: this node copies to a successor that is
 * {@code syncing}; {@link ResyncReceiver}: this node's own target is being synced).
 *
 * <p><b>Cluster membership</b> ({@link #startManaged}): a {@link NodeAgent} registers the
 * node's healthy targets and heartbeats; its fence drives the {@link #gate() serving gate}:
 * before registration, and whenever half a lease passes without an acknowledged heartbeat, the
 * node refuses <em>every</em> chunk request, reads included (a fenced node may already have been
 * replaced in its chains, so what it holds may be stale), with {@code FENCED}, which clients
 * retry elsewhere. A target whose directory cannot be opened is left out of the registration
 * (the manager marks it offline); a target that keeps failing with I/O errors is taken out of
 * service and reported offline ({@link NodeAgent#markFailed}).
 */
public final class StorageNode implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StorageNode.class);

    /** The storage node's wire protocol: core messages plus storage messages. */

    private final NodeContext ctx;
    private final StorageConfig config;
    private final RoutingSource routing;
    private final Map<TargetId, ChunkEngine> engines;
    /** Per target (one device): the order its reads and writes reach the disk in, by QoS class. */
    private final Map<TargetId, QosScheduler> schedulers;
    private final Map<TargetId, String> failedAtOpen;
    private final ExecutorService io;
    /** {@link #io} for continuations; runs a task in the caller once the pool has shut down, so no future is left hanging. */
    private final java.util.concurrent.Executor work;
    private final ServingGate gate = new ServingGate();
    private final ChunkLocks locks;
    private final RpcClient rpc;
    private final RpcServer server;
    private final ResyncReceiver receiver;
    private final ResyncWorker worker;
    private final CraqService craq;
    private final Scrubber scrubber;
    private final List<BiConsumer<TargetId, Long>> syncedListeners = new CopyOnWriteArrayList<>();
    private volatile CompletableFuture<Void> routingChanged = new CompletableFuture<>();
    private volatile NodeAgent agent;
    private volatile MgmtdClient mgmtd;
    private volatile boolean closed;

    private StorageNode(NodeContext ctx, StorageConfig config, RoutingSource routing, RpcOptions rpcOptions,
                        InetSocketAddress listen, int ioThreads, boolean managed) {
        this.ctx = ctx;
        this.config = config;
        this.routing = routing;
        AtomicInteger n = new AtomicInteger();
        this.io = Executors.newFixedThreadPool(ioThreads, r -> {
            Thread t = new Thread(r, ctx.name() + "-disk-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.work = task -> {
            try {
                io.execute(task);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                task.run();
            }
        };
        if (managed) {
            gate.close(Status.FENCED, ctx.name() + " is not registered with the cluster manager yet");
        }
        Map<TargetId, ChunkEngine> opened = new LinkedHashMap<>();
        Map<TargetId, String> failed = new LinkedHashMap<>();
        RpcClient client = null;
        Scrubber scrub = null;
        try {
            for (StorageConfig.Target t : config.targets()) {
                try {
                    ChunkEngine e = ChunkEngine.open(t.id(), t.path(), ctx, config.engine(), work);
                    e.watchHealth(config.ioErrorLimit(), this::targetFailed);
                    opened.put(t.id(), e);
                } catch (StrataException e) {
                    if (!managed) {
                        throw e; // no manager to report it to: refuse to start
                    }
                    LOG.error("{}: {} cannot be opened and is reported offline: {}", ctx.name(), t.id(), e.getMessage());
                    failed.put(t.id(), e.getMessage());
                }
            }
            this.engines = Collections.unmodifiableMap(opened);
            Map<TargetId, QosScheduler> qos = new LinkedHashMap<>();
            for (TargetId t : opened.keySet()) {
                qos.put(t, new QosScheduler(t.toString(), config.qos(), ctx.clock(), ctx.scheduler(), ctx.meters(), ctx.slowOps()));
            }
            this.schedulers = Collections.unmodifiableMap(qos);
            this.failedAtOpen = Collections.unmodifiableMap(failed);
            this.locks = new ChunkLocks(work);
            client = new RpcClient(ctx, StorageMessages.PROTOCOL, rpcOptions);
            this.rpc = client;
            StorageMetrics metrics = new StorageMetrics(ctx.meters(), ctx.clock());
            Replicator replicator = new Replicator(ctx, rpc, this, config.forwardTimeout());
            this.receiver = new ResyncReceiver(this, metrics);
            scrub = new Scrubber(this, config.scrub(), engines);
            this.scrubber = scrub;
            this.craq = new CraqService(this, replicator, metrics);
            this.worker = new ResyncWorker(this, rpcOptions, metrics);
            RpcServer.Builder b = EchoService.register(ctx, RpcServer.builder(ctx, StorageMessages.PROTOCOL).options(rpcOptions), 1 << 20)
                    .handle(StorageMessages.WRITE_CHUNK, io, craq::write)
                    .handle(StorageMessages.FORWARD_UPDATE, io, craq::forward)
                    .handle(StorageMessages.READ_CHUNK, io, craq::read)
                    .handle(StorageMessages.QUERY_VERSION, io, craq::query)
                    .handle(StorageMessages.STAT_CHUNK, io, craq::stat)
                    .handle(StorageMessages.LIST_CHUNKS, io, receiver::list)
                    .handle(StorageMessages.LIST_INODE_CHUNKS, io, receiver::listInode)
                    .handle(StorageMessages.SYNC_CHUNK, io, receiver::syncChunk)
                    .handle(StorageMessages.SYNC_DONE, io, receiver::syncDone)
                    .handle(StorageMessages.SCRUB_CONTROL, io, scrubber::control)
                    // only chain peers replicate and resync; mgmtd never calls a storage node, the hooks have no data to move
                    .admit(Role.STORAGE, Role.L2, Role.META, Role.CLIENT, Role.ADMIN)
                    .allow(StorageMessages.FORWARD_UPDATE, Role.STORAGE)
                    .allow(StorageMessages.LIST_CHUNKS, Role.STORAGE)
                    .allow(StorageMessages.SYNC_CHUNK, Role.STORAGE)
                    .allow(StorageMessages.SYNC_DONE, Role.STORAGE)
                    .allow(StorageMessages.SCRUB_CONTROL, Role.ADMIN);
            routing.onChange(this::routingChanged);
            this.server = b.bind(listen);
        } catch (RuntimeException e) {
            if (scrub != null) {
                scrub.close();
            }
            if (client != null) {
                client.close();
            }
            opened.values().forEach(ChunkEngine::close);
            io.shutdownNow();
            throw e;
        }
        checkRouting(routing.current());
        LOG.info("{}: storage node {} serving {} on {}", ctx.name(), config.nodeId(), engines.keySet(), server.address());
    }

    /**
     * Opens the node's targets and starts serving on {@code listen} (port 0: any free port),
     * routed by {@code routing} (a static table, or a routing source the caller manages).
     * {@code ctx} stays the caller's: close the node before the context.
     */
    public static StorageNode start(NodeContext ctx, StorageConfig config, RoutingSource routing, RpcOptions rpc,
                                    InetSocketAddress listen) {
        StorageNode node = new StorageNode(ctx, config, routing, rpc, listen, 16, false);
        node.routingChanged(routing.current());
        return node;
    }

    /**
     * Starts a node that belongs to the cluster managed by {@code config.mgmtd()}: routing from
     * the manager (pull and push), registration of its targets and heartbeats
     * ({@link NodeAgent}), and the serving gate driven by the agent's fence. The node listens
     * at once but refuses chunk requests until its first lease is granted ({@link #registered()}).
     */
    public static StorageNode startManaged(NodeContext ctx, StorageConfig config, RpcOptions rpc, InetSocketAddress listen) {
        if (!config.managed()) {
            throw new IllegalArgumentException("storage.mgmtd names no cluster manager");
        }
        MgmtdClient client = new MgmtdClient(ctx, config.mgmtd());
        ManagerRoutingSource source = ManagerRoutingSource.start(ctx, client);
        StorageNode node;
        try {
            node = new StorageNode(ctx, config, source, rpc, listen, 16, true);
        } catch (RuntimeException e) {
            source.close();
            client.close();
            throw e;
        }
        try {
            node.join(client);
        } catch (RuntimeException e) {
            node.close();
            throw e;
        }
        return node;
    }

    /** Each target's file system, and its device number, once found (see {@link #space}). */
    private final Map<TargetId, Map.Entry<FileStore, Long>> stores = new ConcurrentHashMap<>();

    /**
     * The disk space of every open target, as heartbeats report it: the bytes in use on the file
     * system holding the target's directory plus its usable bytes (the capacity), its usable bytes, with the device number that lets the
     * manager count a file system shared by several targets once. A target whose file system
     * cannot be read is left out (the manager then counts it as not reporting).
     */
    private List<TargetSpace> space() {
        List<TargetSpace> out = new ArrayList<>();
        engines.forEach((t, e) -> {
            try {
                var fs = stores.computeIfAbsent(t, k -> fileStore(e.dir()));
                // as df's Use% counts: the bytes in use plus those this process may still use (root's reserve left out)
                long free = fs.getKey().getUsableSpace();
                long capacity = Math.max(0, fs.getKey().getTotalSpace() - fs.getKey().getUnallocatedSpace()) + free;
                out.add(new TargetSpace(t, capacity, free, fs.getValue()));
            } catch (IOException | UncheckedIOException | IllegalArgumentException ex) {
                LOG.debug("{}: no disk space for {}: {}", ctx.name(), t, ex.toString());
            }
        });
        return out;
    }

    private static Map.Entry<FileStore, Long> fileStore(Path dir) {
        try {
            FileStore fs = Files.getFileStore(dir);
            long device;
            try {
                device = ((Number) Files.getAttribute(dir, "unix:dev")).longValue();
            } catch (UnsupportedOperationException | IllegalArgumentException e) {
                device = fs.name().hashCode(); // no unix view: the store's name tells file systems apart
            }
            return Map.entry(fs, device);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Registers with the manager and lets the agent's fence drive the gate. */
    private void join(MgmtdClient client) {
        this.mgmtd = client;
        InetSocketAddress a = config.advertiseAddress().orElse(server.address());
        if (a.getAddress() != null && a.getAddress().isAnyLocalAddress()) {
            throw new StrataException(Status.CONFIG_INVALID, "storage node listens on " + a
                    + "; set storage.advertise to the address other nodes reach it at");
        }
        NodeInfo me = new NodeInfo(config.nodeId(), a.getHostString(), a.getPort(), config.labels());
        NodeAgent ag = NodeAgent.start(ctx, client, routing, me, NodeRole.STORAGE, List.copyOf(engines.keySet()),
                this::space);
        this.agent = ag;
        ag.onFenceChange(f -> syncGate());
        ag.registered().thenRun(this::syncGate);
        syncGate();
        LOG.info("{}: registering with the cluster manager {} as {} at {}{}", ctx.name(), config.mgmtd(), config.nodeId(),
                me.hostPort(), failedAtOpen.isEmpty() ? "" : " (targets that failed to open, reported offline: " + failedAtOpen.keySet() + ")");
    }

    /** Opens or closes the gate to match the agent's fence. */
    private synchronized void syncGate() {
        NodeAgent a = agent;
        if (closed || a == null) {
            return;
        }
        if (a.fenced()) {
            if (gate.isOpen()) {
                LOG.warn("{}: fenced (no lease from the cluster manager): refusing chunk requests", ctx.name());
            }
            gate.close(Status.FENCED, ctx.name() + " is fenced: it holds no lease from the cluster manager");
        } else if (!gate.isOpen()) {
            LOG.info("{}: lease held: serving", ctx.name());
            gate.open();
        }
    }

    /** A target's engine gave up after repeated I/O errors: report it offline. */
    private void targetFailed(TargetId t) {
        NodeAgent a = agent;
        if (a != null) {
            a.markFailed(t);
        }
    }

    /** Completes when the cluster manager granted this node its first lease (at once for a statically routed node). */
    public CompletableFuture<Void> registered() {
        NodeAgent a = agent;
        return a == null ? CompletableFuture.completedFuture(null) : a.registered();
    }

    /** The cluster-manager agent, when this node is managed. */
    public Optional<NodeAgent> agent() {
        return Optional.ofNullable(agent);
    }

    /** Targets whose directory could not be opened at start (managed nodes start without them), with the reason. */
    public Map<TargetId, String> failedTargets() {
        Map<TargetId, String> out = new LinkedHashMap<>(failedAtOpen);
        engines.forEach((t, e) -> e.failure().ifPresent(why -> out.put(t, why)));
        return out;
    }

    /** Warns about targets that routing does not place on this node (they serve nothing until it does). */
    private void checkRouting(RoutingInfo r) {
        if (r.version() == 0) {
            return; // no routing yet (a harness publishes it once every node is up)
        }
        for (TargetId t : engines.keySet()) {
            TargetInfo ti = r.targets().get(t);
            if (ti == null) {
                LOG.warn("{}: {} is not in routing v{} yet", ctx.name(), t, r.version());
            } else if (!ti.node().equals(config.nodeId())) {
                LOG.warn("{}: routing v{} places {} on {}, but this is {}", ctx.name(), r.version(), t, ti.node(), config.nodeId());
            }
        }
    }

    private void routingChanged(RoutingInfo next) {
        LOG.debug("{}: routing v{}", ctx.name(), next.version());
        CompletableFuture<Void> old = routingChanged;
        routingChanged = new CompletableFuture<>();
        if (!closed) { // a static routing source keeps the listeners of closed nodes
            receiver.observe(next);
            worker.onRouting(next);
        }
        old.complete(null);
    }

    /** Completes at the next routing change (retries wait on it). */
    CompletableFuture<Void> routingChanged() {
        return routingChanged;
    }

    /**
     * The chain as this node sees it, checked against the sender's {@code chainVersion}: an older
     * one is refused with {@link StrataException.StaleRouting}; a newer one makes this node refresh
     * its routing first.
     */
    CompletableFuture<ChainView> view(ChainId chain, long chainVersion) {
        try {
            RoutingInfo r = routing.current();
            ChainInfo c = r.chain(chain);
            if (chainVersion > c.version()) {
                return routing.refreshAsync(r.version()).thenApply(fresh -> checked(fresh, chain, chainVersion));
            }
            return CompletableFuture.completedFuture(checked(r, chain, chainVersion));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e); // never throws: callers may own buffers by now
        }
    }

    private ChainView checked(RoutingInfo r, ChainId chain, long chainVersion) {
        ChainInfo c = r.chain(chain);
        if (chainVersion != c.version()) {
            throw new StrataException.StaleRouting(chain + ": request has chain version " + chainVersion + ", "
                    + config.nodeId() + " has " + c.version(), c.version());
        }
        return viewIn(r, c);
    }

    /** The chain in the current routing, whatever its version (retries follow the newest). */
    ChainView viewOf(ChainId chain, TargetId self) {
        RoutingInfo r = routing.current();
        ChainView v = viewIn(r, r.chain(chain));
        if (!v.self().equals(self)) {
            throw new StrataException(Status.NOT_SERVING, self + " left " + chain);
        }
        return v;
    }

    /** This node's view of {@code c} in {@code r}, or null when none of its open targets is in the chain. */
    ChainView viewOrNull(RoutingInfo r, ChainInfo c) {
        for (TargetId t : c.targets()) {
            ChunkEngine e = engines.get(t);
            TargetInfo ti = r.targets().get(t);
            if (e != null && ti != null && ti.node().equals(config.nodeId())) {
                return new ChainView(r, c, t, e, r.writePath(c.id()));
            }
        }
        return null;
    }

    private ChainView viewIn(RoutingInfo r, ChainInfo c) {
        ChainView v = viewOrNull(r, c);
        if (v == null) {
            throw new StrataException(Status.NO_SUCH_TARGET, c.id() + " v" + c.version() + " has no target on " + config.nodeId());
        }
        return v;
    }

    public NodeId nodeId() {
        return config.nodeId();
    }

    public StorageConfig config() {
        return config;
    }

    public InetSocketAddress address() {
        return server.address();
    }

    public NodeContext context() {
        return ctx;
    }

    /** The switch fencing drives (see {@link ServingGate}). */
    public ServingGate gate() {
        return gate;
    }

    public RoutingSource routing() {
        return routing;
    }

    /** The chunk engine of one of this node's targets. */
    public ChunkEngine engine(TargetId target) {
        ChunkEngine e = engines.get(target);
        if (e == null) {
            throw new StrataException(Status.NO_SUCH_TARGET, target + " is not on " + config.nodeId());
        }
        return e;
    }

    /** The QoS scheduler of one of this node's targets. */
    QosScheduler scheduler(TargetId target) {
        QosScheduler s = schedulers.get(target);
        if (s == null) {
            throw new StrataException(Status.NO_SUCH_TARGET, target + " is not on " + config.nodeId());
        }
        return s;
    }

    public List<TargetId> targets() {
        return new ArrayList<>(engines.keySet());
    }

    /**
     * Calls {@code listener} with (target, chain version) when a resync of one of this node's
     * targets completed (its predecessor's sync-done arrived). A managed node also reports the
     * target up to date to the manager; with static routing, whoever publishes routing decides.
     */
    public void onSynced(BiConsumer<TargetId, Long> listener) {
        syncedListeners.add(listener);
    }

    /** The resync of {@code target} finished under {@code chainVersion}. */
    void synced(TargetId target, long chainVersion) {
        NodeAgent a = agent;
        if (a != null) {
            a.markSynced(target, chainVersion);
        }
        for (BiConsumer<TargetId, Long> l : syncedListeners) {
            try {
                l.accept(target, chainVersion);
            } catch (RuntimeException e) {
                LOG.warn("{}: synced listener failed: {}", ctx.name(), e.toString());
            }
        }
    }

    /** The resync this node runs (or last ran) as the predecessor, per chain: for logs, tests and tools. */
    public Map<ChainId, ResyncProgress> resyncs() {
        return worker.progress();
    }

    /** The executor for disk work and continuations. */
    java.util.concurrent.Executor io() {
        return work;
    }

    /** Per-chunk serialisation of updates, shared by CRAQ and resync. */
    ChunkLocks locks() {
        return locks;
    }

    ResyncReceiver receiver() {
        return receiver;
    }

    /** The background checks of this node's chunks, and the repairs of corrupt ones. */
    Scrubber scrubber() {
        return scrubber;
    }

    /** The client this node calls its peers with. */
    RpcClient rpc() {
        return rpc;
    }

    CraqService craq() {
        return craq;
    }

    boolean isClosed() {
        return closed;
    }

    /** Stops serving (callers see CONNECTION_LOST), then closes the targets. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        gate.close(Status.SHUTTING_DOWN, ctx.name() + " is shutting down");
        // wake what waits for a routing change (writes held for replicas, retries): it ends now,
        // while the disk threads still run, instead of waiting on timers the context drops
        routingChanged.complete(null);
        NodeAgent a = agent;
        if (a != null) {
            a.close();
        }
        worker.close();
        scrubber.close();
        server.close();
        rpc.close();
        if (mgmtd != null) {
            routing.close();
            mgmtd.close();
        }
        io.shutdown();
        try {
            if (!io.awaitTermination(10, TimeUnit.SECONDS)) {
                io.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        engines.values().forEach(ChunkEngine::close);
        LOG.info("{}: storage node stopped", ctx.name());
    }
}
