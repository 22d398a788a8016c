package io.strata.l3;

import io.strata.core.ChainId;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.l3.engine.ChunkEngine;
import io.strata.l3.proto.StorageMessages;
import io.strata.placement.ChainInfo;
import io.strata.placement.RoutingInfo;
import io.strata.placement.RoutingSource;
import io.strata.placement.TargetInfo;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A storage node: one chunk engine per target, the CRAQ protocol over the RPC layer, and the
 * routing it serves by. Start one with {@link #start}; {@link StorageNodeMain} and
 * {@code strata storage} wrap it in a process.
 *
 * <p><b>Routing seam.</b> The node takes any {@link RoutingSource}: a static table in this
 * issue, the cluster manager's client later. It routes every request by
 * {@link RoutingSource#current()}, rejects a chain version other than its own with
 * {@code STALE_CHAIN_VERSION} (after refreshing once when the sender's is newer), and on
 * {@link RoutingSource#onChange} wakes every forward that waits to retry, which then re-reads the
 * chain: a predecessor with a write in flight retries against its new successor, and a node
 * that became the tail commits.
 *
 * <p><b>Serving gate.</b> {@link #gate()} is the one switch fencing will drive: closed, the node
 * refuses every chunk request.
 */
public final class StorageNode implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StorageNode.class);

    /** The storage node's wire protocol: core messages plus storage messages. */
    public static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, StorageMessages.TYPES);

    private final NodeContext ctx;
    private final StorageConfig config;
    private final RoutingSource routing;
    private final Map<TargetId, ChunkEngine> engines;
    private final ExecutorService io;
    /** {@link #io} for continuations; runs a task in the caller once the pool has shut down, so no future is left hanging. */
    private final java.util.concurrent.Executor work;
    private final ServingGate gate = new ServingGate();
    private final RpcClient rpc;
    private final RpcServer server;
    private volatile CompletableFuture<Void> routingChanged = new CompletableFuture<>();
    private volatile boolean closed;

    private StorageNode(NodeContext ctx, StorageConfig config, RoutingSource routing, RpcOptions rpcOptions,
                        InetSocketAddress listen, int ioThreads) {
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
        Map<TargetId, ChunkEngine> opened = new LinkedHashMap<>();
        RpcClient client = null;
        try {
            for (StorageConfig.Target t : config.targets()) {
                opened.put(t.id(), ChunkEngine.open(t.id(), t.path(), ctx, config.engine(), work));
            }
            this.engines = Collections.unmodifiableMap(opened);
            client = new RpcClient(ctx, PROTOCOL, rpcOptions);
            this.rpc = client;
            StorageMetrics metrics = new StorageMetrics(ctx.meters());
            CraqService craq = new CraqService(this, new Replicator(ctx, rpc, this, config.forwardTimeout()), metrics);
            RpcServer.Builder b = EchoService.register(ctx, RpcServer.builder(ctx, PROTOCOL).options(rpcOptions), 1 << 20)
                    .handle(StorageMessages.WRITE_CHUNK, io, craq::write)
                    .handle(StorageMessages.FORWARD_UPDATE, io, craq::forward)
                    .handle(StorageMessages.READ_CHUNK, io, craq::read)
                    .handle(StorageMessages.QUERY_VERSION, io, craq::query)
                    .handle(StorageMessages.STAT_CHUNK, io, craq::stat);
            routing.onChange(this::routingChanged);
            this.server = b.bind(listen);
        } catch (RuntimeException e) {
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
     * Opens the node's targets and starts serving on {@code listen} (port 0: any free port).
     * {@code ctx} stays the caller's: close the node before the context.
     */
    public static StorageNode start(NodeContext ctx, StorageConfig config, RoutingSource routing, RpcOptions rpc,
                                    InetSocketAddress listen) {
        return new StorageNode(ctx, config, routing, rpc, listen, 16);
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
        LOG.info("{}: routing v{}", ctx.name(), next.version());
        CompletableFuture<Void> old = routingChanged;
        routingChanged = new CompletableFuture<>();
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

    private ChainView viewIn(RoutingInfo r, ChainInfo c) {
        for (TargetId t : c.targets()) {
            ChunkEngine e = engines.get(t);
            if (e != null && r.target(t).node().equals(config.nodeId())) {
                return new ChainView(r, c, t, e, r.writePath(c.id()));
            }
        }
        throw new StrataException(Status.NO_SUCH_TARGET, c.id() + " v" + c.version() + " has no target on " + config.nodeId());
    }

    public NodeId nodeId() {
        return config.nodeId();
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

    public List<TargetId> targets() {
        return new ArrayList<>(engines.keySet());
    }

    /** The executor for disk work and continuations. */
    java.util.concurrent.Executor io() {
        return work;
    }

    boolean isClosed() {
        return closed;
    }

    /** Stops serving (callers see CONNECTION_LOST), then closes the targets. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        gate.close(Status.SHUTTING_DOWN, ctx.name() + " is shutting down");
        server.close();
        rpc.close();
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
