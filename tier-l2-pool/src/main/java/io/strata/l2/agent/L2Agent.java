package io.strata.l2.agent;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.Role;
import io.strata.core.qos.QosScheduler;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Reply;
import io.strata.core.rpc.Request;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.Tier;
import io.strata.core.util.Crc32c;
import io.strata.core.util.RateLimiter;
import io.strata.l2.Holders;
import io.strata.l2.agent.CopyStore.Key;
import io.strata.placement.NodeAgent;
import io.strata.placement.RoutingSource;
import io.strata.protocol.l2.L2Message;
import io.strata.protocol.l2.L2Message.Chunks;
import io.strata.protocol.l2.L2Message.Drained;
import io.strata.protocol.l2.L2Message.Fetch;
import io.strata.protocol.l2.L2Message.Fetched;
import io.strata.protocol.l2.L2Message.Forward;
import io.strata.protocol.l2.L2Message.Forwarded;
import io.strata.protocol.l2.L2Message.ListChunks;
import io.strata.protocol.l2.L2Message.Read;
import io.strata.protocol.l2.L2Message.ReadDone;
import io.strata.protocol.l2.L2Message.Sync;
import io.strata.protocol.l2.L2Message.Synced;
import io.strata.protocol.l2.L2Message.Unpin;
import io.strata.protocol.l2.L2Message.Unpinned;
import io.strata.protocol.l2.L2Message.Write;
import io.strata.protocol.l2.L2Message.Written;
import io.strata.protocol.l2.L2Messages;
import io.strata.protocol.meta.Meta;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.UpdateKind;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An L2 agent: the chunk copies staged on one compute node's disk ({@link CopyStore}), served
 * over the L2 protocol (docs/internals/l2.md), drained to L3 in the background ({@link Drain}).
 * Start one with {@link #start}; {@link #register} joins the cluster manager (the normal case:
 * {@code strata l2}); without it the agent serves on the routing it is given (tests, harnesses).
 *
 * <p><b>Updates.</b> A client sends each update of a chunk to its first holder, which orders the
 * chunk's updates ({@link KeyedQueue}), applies each to its copy as the next sequence of the
 * chunk, forwards it to the other holders (the whole copy to a holder that has none of this
 * epoch) and answers once every holder stored it. A first holder without a copy of the epoch
 * takes the chunk's L3 content as the base, unless the update replaces the whole chunk or the
 * client says the chunk was already written in L2 this epoch ({@code mustHaveCopy}: then L3 may
 * be older, and the agent refuses with NOT_FOUND rather than build on it).
 *
 * <p><b>Reads</b> run on a pool of their own and take no turn in the chunk's queue, so that the
 * several reads of one chunk a reader's readahead sends at once, and reads of many chunks whose
 * pages are not cached, are served in parallel ({@link #read}).
 *
 * <p><b>Prefetch.</b> A planner's {@code Fetch} makes the agent hold a chunk for a scheduler's hint
 * and pins it for the hint's owner: a chunk of a file never staged is read from L3 (in the
 * prefetch class, under {@code prefetch-bandwidth}) unless a copy at the file's data version is
 * here; a staged chunk is warmed. Fetches of one chunk are ordered like its updates, so a chunk
 * several owners want is read from L3 once. Pinned copies are never evicted; {@code Unpin} lets
 * one owner's go.
 *
 * <p><b>Fencing.</b> A registered agent refuses every chunk request with FENCED before its
 * first lease and whenever half a lease passes without an acknowledged heartbeat, and its drain
 * stops: another holder may have taken over.
 */
public final class L2Agent implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(L2Agent.class);
    /** How long a Fetch's read from L3 may take. */
    private static final Duration FETCH_TIMEOUT = Duration.ofSeconds(60);
    /**
     * Threads serving reads. A read of a copy whose pages are not cached blocks its thread in the
     * disk read; readers (a restore, a job reading its prefetched dataset) keep many chunks in
     * flight, and the disk serves them faster the more it is given at once.
     */
    static final int READ_THREADS = 32;

    private final NodeContext ctx;
    private final L2AgentConfig config;
    private final RoutingSource routing;
    private final CopyStore store;
    private final ExecutorService io;
    /** Reads ({@link #read}): apart from the updates' pool, so neither waits behind the other. */
    private final ExecutorService reads;
    /** Page cache hints for the copies readers will want next ({@link ReadAhead}); hints that find it busy are dropped. */
    private final ThreadPoolExecutor hints;
    private final ReadAhead readAhead;
    /** fdatasyncs of copies, behind the writes and for clients' syncs. */
    private final ExecutorService syncers;
    private final KeyedQueue<Key> queue;
    /** Orders the reads and writes of the agent's disk by QoS class ({@link #onDisk}). */
    private final QosScheduler disk;
    private final RpcClient rpc;
    private final RpcServer server;
    private final Drain drain;
    private final Tier l3;
    private final AtomicLong refusedFull = new AtomicLong();
    /** The prefetch byte rate from L3; null: unlimited. */
    private final RateLimiter prefetchLimiter;
    private final AtomicLong prefetchFetches = new AtomicLong();
    private final AtomicLong prefetchBytes = new AtomicLong();
    private final Counter stagedBytes;
    private final Counter readBytes;
    private volatile NodeAgent agent;
    private volatile boolean closed;

    private L2Agent(NodeContext ctx, L2AgentConfig config, RoutingSource routing, Meta meta, Tier l3, RpcOptions rpcOptions,
                    InetSocketAddress listen) throws IOException {
        this.ctx = ctx;
        this.config = config;
        this.routing = routing;
        this.l3 = l3;
        long prefetchRate = config.prefetchBandwidth().bytes();
        this.prefetchLimiter = prefetchRate == 0 ? null : new RateLimiter(ctx.clock(), prefetchRate);
        this.store = CopyStore.open(config.path(), config.nodeId().value(), config.capacity(), config.minFree(),
                () -> ctx.clock().now().toEpochMilli());
        this.io = Executors.newFixedThreadPool(8, new DefaultThreadFactory(ctx.name() + "-l2", true));
        this.queue = new KeyedQueue<>(io);
        this.reads = Executors.newFixedThreadPool(READ_THREADS, new DefaultThreadFactory(ctx.name() + "-l2-read", true));
        this.hints = new ThreadPoolExecutor(2, 2, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(256),
                new DefaultThreadFactory(ctx.name() + "-l2-readahead", true), new ThreadPoolExecutor.DiscardPolicy());
        this.readAhead = new ReadAhead(store, config.nodeId().value(), hints);
        this.syncers = Executors.newFixedThreadPool(4, new DefaultThreadFactory(ctx.name() + "-l2-sync", true));
        store.syncBehind(syncers);
        this.disk = new QosScheduler("l2-" + config.nodeId().value(), config.qos(), ctx.clock(), ctx.scheduler(), ctx.meters(), ctx.slowOps());
        RpcClient client = null;
        try {
            client = new RpcClient(ctx, L2Messages.PROTOCOL, rpcOptions);
            this.rpc = client;
            this.drain = new Drain(ctx, this, meta, l3);
            this.server = EchoService.register(ctx, RpcServer.builder(ctx, L2Messages.PROTOCOL).options(rpcOptions), 1 << 20)
                    .handle(L2Messages.WRITE, io, this::write)
                    .handle(L2Messages.FORWARD, io, this::forward)
                    .handle(L2Messages.READ, this::read) // gate and checks only: the read itself runs on the read pool
                    .handle(L2Messages.SYNC, io, this::sync)
                    .handle(L2Messages.LIST_CHUNKS, io, this::list)
                    .handle(L2Messages.DRAINED, io, this::drained)
                    .handle(L2Messages.WARM, io, this::warm)
                    .handle(L2Messages.FETCH, io, this::fetch)
                    .handle(L2Messages.UNPIN, io, this::unpin)
                    .handle(L2Messages.GET_STATUS, io, r -> CompletableFuture.completedFuture(Reply.of(status())))
                    // the second copy comes from the primary agent only
                    .allow(L2Messages.FORWARD, Role.L2)
                    .bind(listen);
        } catch (RuntimeException e) {
            if (client != null) {
                client.close();
            }
            io.shutdownNow();
            reads.shutdownNow();
            hints.shutdownNow();
            syncers.shutdownNow();
            store.close();
            throw e;
        }
        this.readBytes = Counter.builder("strata.l2.read.bytes").description("bytes of chunk copies this agent served to readers")
                .register(ctx.meters());
        this.stagedBytes = Counter.builder("strata.l2.staged.bytes").description("bytes of updates acknowledged by this agent")
                .register(ctx.meters());
        Gauge.builder("strata.l2.used.bytes", store, CopyStore::used).description("bytes reserved by chunk copies").register(ctx.meters());
        Gauge.builder("strata.l2.undrained.bytes", this, a -> a.undrainedBytes()).description("bytes of copies not yet durable in L3")
                .register(ctx.meters());
        Gauge.builder("strata.l2.evictions", store, CopyStore::evictions).register(ctx.meters());
        Gauge.builder("strata.l2.drain.lag.seconds", this, a -> a.status().drainLagSeconds())
                .description("seconds since the oldest update not yet durable in L3 was acknowledged").register(ctx.meters());
        Gauge.builder("strata.l2.refused.full", refusedFull, AtomicLong::get)
                .description("new copies refused for lack of room (a writer wrote those chunks through to L3)").register(ctx.meters());
        Gauge.builder("strata.l2.pinned.chunks", this, a -> a.status().pinnedChunks())
                .description("chunks pinned by prefetch hints (never evicted)").register(ctx.meters());
        Gauge.builder("strata.l2.prefetch.fetches", prefetchFetches, AtomicLong::get)
                .description("chunks read from L3 for prefetch hints").register(ctx.meters());
        Gauge.builder("strata.l2.prefetch.bytes", prefetchBytes, AtomicLong::get)
                .description("bytes read from L3 for prefetch hints").register(ctx.meters());
        Gauge.builder("strata.l2.readahead.copies", readAhead, ReadAhead::hinted)
                .description("copies whose pages the agent asked the kernel to read ahead of their readers").register(ctx.meters());
        drain.start(config.drainInterval());
        LOG.info("{}: L2 agent {} serving {} on {} (capacity {}, drain {}/s, prefetch {})", ctx.name(), config.nodeId(), config.path(),
                server.address(), config.capacity(), config.drainBandwidth(),
                prefetchRate == 0 ? "unlimited" : config.prefetchBandwidth() + "/s");
    }

    /**
     * Opens the agent's store and serves on {@code listen} (port 0: any free port), finding other
     * agents and their liveness in {@code routing}, staging records in {@code meta}, and draining
     * to {@code l3} (which stays the caller's). Serves at once unless {@link #register}ed.
     */
    public static L2Agent start(NodeContext ctx, L2AgentConfig config, RoutingSource routing, Meta meta, Tier l3, RpcOptions rpc,
                                InetSocketAddress listen) throws IOException {
        return new L2Agent(ctx, config, routing, meta, l3, rpc, listen);
    }

    /**
     * Registers with the cluster manager as an L2 agent and heartbeats; from now on the agent
     * serves only while it holds a lease ({@link #registered()} completes at the first one).
     */
    public void register(MgmtdClient client) {
        InetSocketAddress a = config.advertiseAddress().orElse(server.address());
        if (a.getAddress() != null && a.getAddress().isAnyLocalAddress()) {
            throw new StrataException(Status.CONFIG_INVALID, "the L2 agent listens on " + a
                    + "; set l2.advertise to the address other nodes reach it at");
        }
        NodeInfo me = new NodeInfo(config.nodeId(), a.getHostString(), a.getPort(), config.labels());
        this.agent = NodeAgent.start(ctx, client, routing, me, NodeRole.L2_AGENT, List.of());
        agent.reportDrainBacklog(drain::backlogBytes);
        agent.onFenceChange(f -> {
            if (f) {
                LOG.warn("{}: fenced (no lease from the cluster manager): refusing chunk requests, drain paused", ctx.name());
            } else {
                LOG.info("{}: lease held: serving", ctx.name());
            }
        });
    }

    /**
     * How many agents share the cluster's drain budget if this one drains now, {@code serving}
     * agents serving in routing ({@link #drainShares(int, NodeAgent.DrainCount, NodeAgent.DrainCount)});
     * without a manager, {@code serving}.
     */
    int drainShares(int serving) {
        NodeAgent a = agent;
        return a == null ? Math.max(1, serving) : drainShares(serving, a.drainCount(), a.previousDrainCount());
    }

    /**
     * The agents sharing the drain budget after the manager's lease answers {@code last} and
     * {@code before}: from each, the agents it counts as draining when it counted this one too,
     * else (this one has only begun to drain, the others may not know yet) at least the serving
     * agents, so that it never takes more than the equal share it would take without a manager;
     * the larger of the two. So a share grows only once two answers agree (two agents that begin
     * together do not each find themselves counted alone), and shrinks at once.
     */
    static int drainShares(int serving, NodeAgent.DrainCount last, NodeAgent.DrainCount before) {
        return Math.max(sharing(serving, last), sharing(serving, before));
    }

    private static int sharing(int serving, NodeAgent.DrainCount c) {
        return c.counted() ? Math.max(1, c.draining()) : Math.max(Math.max(1, serving), c.draining() + 1);
    }

    /** Completes at the first lease (at once for an agent that is not registered). */
    public CompletableFuture<Void> registered() {
        NodeAgent a = agent;
        return a == null ? CompletableFuture.completedFuture(null) : a.registered();
    }

    public InetSocketAddress address() {
        return server.address();
    }

    public int nodeId() {
        return config.nodeId().value();
    }

    /** Whether the agent refuses chunk requests now (no lease). */
    public boolean fenced() {
        NodeAgent a = agent;
        return closed || (a != null && a.fenced());
    }

    /** Runs a drain pass now and waits for it (tests, tools). */
    public void drainNow() {
        drain.passNow();
    }

    // ---- what the drain and the handlers share ----

    NodeContext ctx() {
        return ctx;
    }

    CopyStore store() {
        return store;
    }

    KeyedQueue<Key> queue() {
        return queue;
    }

    RpcClient rpc() {
        return rpc;
    }

    RoutingSource routing() {
        return routing;
    }

    L2AgentConfig config() {
        return config;
    }

    ExecutorService io() {
        return io;
    }

    static IoOptions l3Io() {
        return new IoOptions(0, QosClass.BACKGROUND, Duration.ofSeconds(60));
    }

    /**
     * Runs {@code work} (a read or write of the agent's disk moving {@code bytes}) on {@code pool}
     * when the disk's scheduler gives class {@code c} a slot; the slot is held until it returns.
     * The agent's disk is one device, shared by classes as a storage target's is
     * (docs/internals/qos.md).
     */
    <T> CompletableFuture<T> onDisk(QosClass c, long bytes, ExecutorService pool, Supplier<T> work) {
        return disk.submit(c, bytes, () -> CompletableFuture.supplyAsync(work, pool));
    }

    /** The RPC address of agent {@code id}, from routing. */
    InetSocketAddress addressOf(int id) {
        return Holders.address(routing.current(), id);
    }

    private void gate() {
        if (fenced()) {
            throw new StrataException(Status.FENCED, ctx.name() + " is fenced: it holds no lease from the cluster manager");
        }
    }

    /** An agent whose disk failed takes no new updates (its copies are still read and drained while they can be). */
    private void refuseIfDiskFailed() {
        store.failure().ifPresent(why -> {
            throw new StrataException(Status.IO_ERROR, "L2 agent " + nodeId() + " takes no updates: its disk failed (" + why + ")");
        });
    }

    long undrainedBytes() {
        long n = 0;
        for (Copy c : store.all().values()) {
            if (c.undrained()) {
                n += c.length();
            }
        }
        return n;
    }

    // ---- handlers ----

    private CompletableFuture<Reply> write(Request<Write> r) {
        gate();
        refuseIfDiskFailed();
        Write m = r.message();
        ChunkAddress a = m.chunk().address();
        if (m.holders().get(0) != nodeId()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "updates of " + m.chunk() + " enter at agent " + m.holders().get(0)
                    + ", not " + nodeId());
        }
        checkUpdate(a, m.kind(), m.offset(), m.length(), r.payload(), m.crc32c());
        ByteBuf data = r.takePayload();
        Key k = new Key(m.chunk().inode(), m.chunk().index());
        return queue.run(k, () -> applyFirst(m, a, k, data)).whenComplete((x, e) -> data.release());
    }

    private static void checkUpdate(ChunkAddress a, UpdateKind kind, long offset, long length, ByteBuf payload, int crc) {
        switch (kind) {
            case WRITE -> {
                a.checkRange(offset, payload.readableBytes());
                if (length != payload.readableBytes()) {
                    throw new StrataException(Status.INVALID_ARGUMENT, "write of " + length + " bytes carries " + payload.readableBytes());
                }
                if (Crc32c.of(payload) != crc) {
                    throw new StrataException(Status.CHECKSUM_MISMATCH, "the bytes of an update of " + a.id() + " do not match their CRC32C");
                }
            }
            case TRUNCATE -> a.checkRange(0, length);
            case REMOVE -> { }
            case REPLACE -> throw new StrataException(Status.INVALID_ARGUMENT, "L2 takes WRITE, TRUNCATE and REMOVE updates");
        }
    }

    private static boolean replacesWhole(Write m, ChunkAddress a) {
        return m.kind() == UpdateKind.REMOVE || (m.kind() == UpdateKind.TRUNCATE && m.length() == 0)
                || (m.kind() == UpdateKind.WRITE && m.offset() == 0 && m.length() == a.chunkSize());
    }

    private CompletableFuture<Reply> applyFirst(Write m, ChunkAddress a, Key k, ByteBuf data) {
        Copy c = store.get(k);
        boolean have = c != null && c.present() && c.epoch() == m.epoch();
        if (!have && m.mustHaveCopy()) {
            throw new StrataException(Status.NOT_FOUND, "agent " + nodeId() + " has no copy of " + m.chunk() + " in epoch " + m.epoch());
        }
        CompletableFuture<ByteBuf> base = have || replacesWhole(m, a)
                ? CompletableFuture.completedFuture(null) : l3.readAsync(a, 0, a.chunkSize(), l3Io());
        return base.thenCompose(b -> {
            AtomicBoolean ran = new AtomicBoolean();
            return onDisk(m.qos(), updateBytes(m.kind(), m.length(), a), io, () -> {
                ran.set(true);
                try {
                    return apply(k, a, c, have, b, m.epoch(), m.kind(), m.offset(), m.length(), data, m.holders(), nextSeq(c));
                } finally {
                    if (b != null) {
                        b.release();
                    }
                }
            }).whenComplete((x, e) -> {
                if (!ran.get() && b != null) {
                    b.release(); // never applied (the agent is closing): the base is released here
                }
            });
        }).thenCompose(next -> {
            stagedBytes.increment(m.kind() == UpdateKind.WRITE ? m.length() : 0);
            List<CompletableFuture<Void>> forwards = new ArrayList<>();
            for (int h : m.holders().subList(1, m.holders().size())) {
                forwards.add(forwardTo(h, m, k, next, !have, data));
            }
            return CompletableFuture.allOf(forwards.toArray(CompletableFuture[]::new))
                    .thenApply(v -> Reply.of(new Written(next.seq(), next.length())));
        });
    }

    /** What an update moves on the disk: a write's bytes, nothing for a cut or a removal (only the record changes). */
    private static long updateBytes(UpdateKind kind, long length, ChunkAddress a) {
        return kind == UpdateKind.WRITE ? Math.min(length, a.chunkSize()) : 0;
    }

    private static long nextSeq(Copy c) {
        return (c == null ? 0 : c.seq()) + 1;
    }

    /**
     * Applies an update to the local copy (creating it from {@code base}, borrowed, when there is
     * none of this epoch) and records it as {@code seq}. NO_SPACE when a new copy finds no room.
     */
    private Copy apply(Key k, ChunkAddress a, Copy c, boolean have, ByteBuf base, long epoch, UpdateKind kind, long offset,
                       long length, ByteBuf data, List<Integer> holders, long seq) {
        if (!have && (c == null || !c.present()) && !store.admit(a.chunkSize())) {
            throw noRoom(ChunkRef.of(a));
        }
        // a new copy, or a cut, changes the copy as a whole: under its write lock, so that reads
        // (which take no turn in the chunk's queue) see the old copy or the new one; a write in
        // place shares the lock with reads
        Supplier<Copy> update = () -> applyLocked(k, a, c, have, base, epoch, kind, offset, length, data, holders, seq);
        return !have || kind != UpdateKind.WRITE ? store.exclusive(k, update) : store.shared(k, update);
    }

    private Copy applyLocked(Key k, ChunkAddress a, Copy c, boolean have, ByteBuf base, long epoch, UpdateKind kind, long offset,
                             long length, ByteBuf data, List<Integer> holders, long seq) {
        long len = have ? c.length() : 0;
        if (!have) {
            store.replace(k, base == null ? Unpooled.EMPTY_BUFFER : base);
            len = base == null ? 0 : base.readableBytes();
        }
        boolean removed = false;
        switch (kind) {
            case WRITE -> {
                store.write(k, offset, data);
                len = Math.max(len, offset + data.readableBytes());
            }
            case TRUNCATE -> {
                store.setLength(k, length);
                len = length;
            }
            case REMOVE -> {
                store.setLength(k, 0);
                len = 0;
                removed = true;
            }
            case REPLACE -> throw new IllegalStateException("checked before");
        }
        long now = ctx.clock().now().toEpochMilli();
        long staged = have && c.undrained() ? c.stagedMillis() : now;
        Copy next = new Copy(epoch, seq, len, have ? c.drainedSeq() : -1, a.chain().value(), a.chunkSize(), holders, staged, true, removed);
        store.record(k, next);
        return next;
    }

    /**
     * Sends update {@code m} (now copy {@code next} here) to {@code holder}: the update itself, or
     * with {@code whole} the whole copy. An update the holder cannot apply is sent again whole.
     */
    private CompletableFuture<Void> forwardTo(int holder, Write m, Key k, Copy next, boolean whole, ByteBuf data) {
        return sendForward(holder, m, k, next, whole, data).handle((v, e) -> {
            if (e == null) {
                return CompletableFuture.<Void>completedFuture(null);
            }
            StrataException se = StrataException.wrap(e);
            if (!whole && se.status() == Status.NOT_FOUND) {
                return sendForward(holder, m, k, next, true, data); // the holder has no copy at this sequence: send it all
            }
            return CompletableFuture.<Void>failedFuture(new StrataException(se.status(),
                    "forwarding " + m.chunk() + " to L2 agent " + holder + ": " + se.getMessage()));
        }).thenCompose(f -> f);
    }

    private CompletableFuture<Void> sendForward(int holder, Write m, Key k, Copy next, boolean whole, ByteBuf data) {
        try {
            InetSocketAddress to = addressOf(holder); // before the payload exists: nothing to release if it fails
            Payload p;
            // a write of the whole chunk leaves the copy holding exactly its bytes (the chunk's
            // queue runs nothing else until the forwards end): the whole copy is then the write,
            // not read back from the copy's file
            if (whole && !(m.kind() == UpdateKind.WRITE && replacesWhole(m, m.chunk().address()))) {
                p = Payload.of(store.read(k, 0, (int) next.length(), next.length(), ByteBufAllocator.DEFAULT));
            } else {
                p = m.kind() == UpdateKind.WRITE ? Payload.of(data.retainedDuplicate()) : Payload.NONE;
            }
            Forward f = new Forward(m.chunk(), m.epoch(), m.request(), m.kind(), next.seq(), whole, m.offset(), m.length(), m.crc32c(),
                    m.holders(), m.qos());
            return rpc.call(to, f, p, config.forwardTimeout(), RpcClient.Lane.BULK).thenAccept(resp -> { // the second copy: bulk by nature
                try (resp) {
                    resp.message(Forwarded.class);
                }
            });
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private CompletableFuture<Reply> forward(Request<Forward> r) {
        gate();
        refuseIfDiskFailed();
        Forward m = r.message();
        ChunkAddress a = m.chunk().address();
        if (!m.whole()) {
            checkUpdate(a, m.kind(), m.offset(), m.length(), r.payload(), m.crc32c());
        } else if (r.payload().readableBytes() > a.chunkSize()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "a whole copy of " + m.chunk() + " is larger than its chunk");
        }
        ByteBuf data = r.takePayload();
        Key k = new Key(m.chunk().inode(), m.chunk().index());
        return queue.<Reply>run(k, () -> onDisk(m.qos(), data.readableBytes(), io, () -> {
            Copy c = store.get(k);
            boolean have = c != null && c.present() && c.epoch() == m.epoch();
            Copy next;
            if (m.whole()) {
                if ((c == null || !c.present()) && !store.admit(a.chunkSize())) {
                    throw noRoom(m.chunk());
                }
                long now = ctx.clock().now().toEpochMilli();
                next = new Copy(m.epoch(), m.seq(), data.readableBytes(), have ? c.drainedSeq() : -1, a.chain().value(), a.chunkSize(),
                        m.holders(), have && c.undrained() ? c.stagedMillis() : now, true, m.kind() == UpdateKind.REMOVE);
                Copy whole = next;
                store.exclusive(k, () -> {
                    store.replace(k, data);
                    store.record(k, whole);
                    return null;
                });
            } else {
                if (!have || c.seq() != m.seq() - 1) {
                    throw new StrataException(Status.NOT_FOUND, "agent " + nodeId() + " has no copy of " + m.chunk() + " at update "
                            + (m.seq() - 1) + " of epoch " + m.epoch());
                }
                next = apply(k, a, c, true, null, m.epoch(), m.kind(), m.offset(), m.length(), data, m.holders(), m.seq());
            }
            return Reply.of(new Forwarded(next.seq()));
        })).whenComplete((x, e) -> data.release());
    }

    /**
     * A read, on the read pool when the disk's scheduler gives the read's class a slot, and
     * outside the chunk's queue: concurrent reads of one chunk run in parallel, and a read does
     * not wait behind the chunk's updates. A read of length 0 (a copy's state: the record only)
     * takes no slot. The copy's read lock
     * ({@link CopyStore#readCopy}) keeps its record and bytes together: a read racing an update in
     * place may see old or new bytes per region; one racing a whole change (a new copy, a cut, an
     * eviction, a drop, a Warm or Fetch storing the chunk) gets the copy before or after it.
     * Acknowledged updates are recorded before their answer, so a read sent after one sees it.
     */
    private CompletableFuture<Reply> read(Request<Read> r) {
        gate();
        Read m = r.message();
        ChunkAddress a = m.chunk().address();
        if (m.length() < 0 || m.offset() < 0 || m.offset() + m.length() > a.chunkSize()) {
            a.checkRange(m.offset(), m.length());
        }
        if (m.length() == 0) {
            // no bytes, but the copy's lock may be held by a whole change: off the event loop
            return CompletableFuture.supplyAsync(() -> serveRead(m, r.alloc()), reads);
        }
        return onDisk(m.qos(), m.length(), reads, () -> serveRead(m, r.alloc()));
    }

    private Reply serveRead(Read m, ByteBufAllocator alloc) {
        Key k = new Key(m.chunk().inode(), m.chunk().index());
        // epoch 0 asks for a prefetched copy (sequence = data version); a staged copy's sequence
        // could equal that number by chance, so it is not offered
        CopyStore.Found f = store.readCopy(k, c -> c.epoch() >= m.epoch() && (m.epoch() != 0 || c.epoch() == 0),
                m.offset(), m.length(), alloc);
        Copy c = f.copy();
        if (c == null) {
            return Reply.of(new ReadDone(false, 0, 0, 0, -1));
        }
        ByteBuf bytes = f.bytes();
        if (bytes == null) {
            return Reply.of(new ReadDone(false, c.seq(), 0, 0, c.present() ? -1 : c.drainedSeq()));
        }
        int crc;
        try {
            crc = Crc32c.of(bytes);
        } catch (RuntimeException e) {
            bytes.release();
            throw e;
        }
        if (m.length() > 0) {
            readAhead.served(k, c); // (a drain's length-0 read only asks for the sequences)
        }
        readBytes.increment(bytes.readableBytes());
        return Reply.of(new ReadDone(true, c.seq(), c.length(), crc, c.drainedSeq()), Payload.of(bytes));
    }

    private CompletableFuture<Reply> sync(Request<Sync> r) {
        gate();
        long inode = r.message().inode();
        store.sync(inode, syncers);
        long max = 0;
        for (Copy c : store.ofInode(inode, 0).values()) {
            max = Math.max(max, c.seq());
        }
        drain.wake();
        return CompletableFuture.completedFuture(Reply.of(new Synced(max)));
    }

    private CompletableFuture<Reply> list(Request<ListChunks> r) {
        ListChunks m = r.message();
        List<Integer> out = new ArrayList<>();
        boolean more = false;
        for (Map.Entry<Key, Copy> e : store.ofInode(m.inode(), m.fromIndex()).entrySet()) {
            Copy c = e.getValue();
            if (!c.present() || c.removed()) {
                continue;
            }
            if (out.size() == m.max()) {
                more = true;
                break;
            }
            out.add(e.getKey().index());
        }
        return CompletableFuture.completedFuture(Reply.of(new Chunks(out, more)));
    }

    private CompletableFuture<Reply> drained(Request<Drained> r) {
        Drained m = r.message();
        Key k = new Key(m.chunk().inode(), m.chunk().index());
        return queue.run(k, () -> {
            Copy c = store.get(k);
            if (c != null && c.present() && m.seq() >= c.seq() && c.drainedSeq() < c.seq()) {
                store.record(k, c.drainedAt(c.seq()));
            }
            return CompletableFuture.completedFuture(Reply.of(new L2Message.Ack()));
        });
    }

    /** A restore is coming: make sure this agent has the chunk ({@link #warmCopy}). */
    private CompletableFuture<Reply> warm(Request<L2Message.Warm> r) {
        gate();
        L2Message.Warm m = r.message();
        ChunkAddress a = m.chunk().address();
        Key k = new Key(m.chunk().inode(), m.chunk().index());
        return queue.run(k, () -> warmCopy(m.chunk(), k, m.epoch(), m.holders(), null, QosClass.CHECKPOINT,
                        () -> l3.readAsync(a, 0, a.chunkSize(), l3Io().withQos(QosClass.CHECKPOINT))))
                .thenApply(f -> Reply.of(new L2Message.Warmed(f.fromL3(), f.bytes())));
    }

    /**
     * A prefetch: have the chunk and pin it for the hint's owner. Epoch 0 (a file never staged):
     * a copy at the file's data version stays; a staged copy is refused (INVALID_ARGUMENT: its
     * chunk is fetched with its epoch); otherwise the chunk is read from L3 and kept as a drained
     * copy of epoch 0 whose sequence is the data version. A staged chunk (its record durable) is
     * warmed. Ordered with the chunk's other requests, so a second fetch of a chunk finds the
     * first one's copy.
     */
    private CompletableFuture<Reply> fetch(Request<Fetch> r) {
        gate();
        refuseIfDiskFailed();
        Fetch m = r.message();
        if (m.epoch() < 0 || m.version() < 0) {
            throw new StrataException(Status.INVALID_ARGUMENT, "a fetch of " + m.chunk() + " needs a staging epoch and a data version "
                    + "of 0 or more, got " + m.epoch() + " and " + m.version());
        }
        ChunkAddress a = m.chunk().address();
        Key k = new Key(m.chunk().inode(), m.chunk().index());
        return queue.run(k, () -> m.epoch() == 0 ? fetchUnstaged(m, k, a)
                : warmCopy(m.chunk(), k, m.epoch(), m.holders(), m.owner(), m.qos(), () -> prefetchRead(a, m.qos()))).thenApply(Reply::of);
    }

    private CompletableFuture<Fetched> fetchUnstaged(Fetch m, Key k, ChunkAddress a) {
        Copy c = store.get(k);
        if (c != null && c.epoch() > 0) {
            throw new StrataException(Status.INVALID_ARGUMENT, "agent " + nodeId() + " holds " + m.chunk() + " staged in epoch "
                    + c.epoch() + ": a staged chunk is fetched with its epoch, not 0");
        }
        if (c != null && c.present() && c.seq() == m.version() && store.pinIfPresent(k, m.owner())) {
            return CompletableFuture.completedFuture(new Fetched(false, 0));
        }
        return load(m.chunk(), k, 0, m.version(), m.holders(), m.owner(), m.qos(), () -> prefetchRead(a, m.qos()));
    }

    /**
     * Warm semantics (Warm, and Fetch of a staged chunk, which pins it for {@code owner}; null:
     * no pin). A present copy stays as it is (it is the newest). An evicted copy (a tombstone:
     * its updates were all drained, so L3 has them) or a chunk this agent never held is read
     * from L3 and kept as a drained copy, at the sequence the tombstone had.
     */
    private CompletableFuture<Fetched> warmCopy(ChunkRef chunk, Key k, long epoch, List<Integer> holders, Long owner, QosClass qos,
                                                Supplier<CompletableFuture<ByteBuf>> read) {
        Copy c = store.get(k);
        if (c != null && c.present() && (owner == null || store.pinIfPresent(k, owner))) {
            return CompletableFuture.completedFuture(new Fetched(false, 0));
        }
        if (c != null && c.epoch() > epoch) {
            throw new StrataException(Status.INVALID_ARGUMENT, "agent " + nodeId() + " holds " + chunk + " of epoch " + c.epoch()
                    + ", newer than " + epoch);
        }
        return load(chunk, k, epoch, c == null ? 0 : c.seq(), holders, owner, qos, read);
    }

    /**
     * Reads the chunk from L3 ({@code read}) and keeps it as a drained copy of {@code epoch} at
     * sequence {@code seq}, pinned for {@code owner} (null: not pinned), writing it to the disk in
     * class {@code qos}. A new copy evicts drained copies no one pins to make room; NO_SPACE when
     * only undrained or pinned ones are left.
     */
    private CompletableFuture<Fetched> load(ChunkRef chunk, Key k, long epoch, long seq, List<Integer> holders, Long owner, QosClass qos,
                                            Supplier<CompletableFuture<ByteBuf>> read) {
        return read.get().thenCompose(bytes -> {
            AtomicBoolean ran = new AtomicBoolean();
            return onDisk(qos, bytes.readableBytes(), io, () -> {
                ran.set(true);
                return keep(chunk, k, epoch, seq, holders, owner, bytes);
            }).whenComplete((f, e) -> {
                if (!ran.get()) {
                    bytes.release(); // never kept (the agent is closing): nobody else will
                }
            });
        });
    }

    /** {@link #load}'s second half, on the I/O pool: stores {@code bytes} (released here) as the copy. */
    private Fetched keep(ChunkRef chunk, Key k, long epoch, long seq, List<Integer> holders, Long owner, ByteBuf bytes) {
        ChunkAddress a = chunk.address();
        try {
            Copy old = store.get(k);
            if ((old == null || !old.present()) && !store.admit(a.chunkSize())) {
                throw noRoom(chunk);
            }
            Copy c = new Copy(epoch, seq, bytes.readableBytes(), seq, a.chain().value(), a.chunkSize(), holders,
                    ctx.clock().now().toEpochMilli(), true, false);
            store.exclusive(k, () -> {
                store.replace(k, bytes);
                if (owner == null) {
                    store.record(k, c);
                } else {
                    store.recordPinned(k, c, owner);
                }
                return null;
            });
            return new Fetched(true, bytes.readableBytes());
        } finally {
            bytes.release();
        }
    }

    /** Reads a whole chunk from L3 for a Fetch: in the hint's class, once the prefetch byte rate allows a chunk more. */
    private CompletableFuture<ByteBuf> prefetchRead(ChunkAddress a, QosClass qos) {
        long wait = prefetchLimiter == null ? 0 : prefetchLimiter.reserve(a.chunkSize());
        CompletableFuture<Void> turn = new CompletableFuture<>();
        if (wait == 0) {
            turn.complete(null);
        } else {
            ctx.schedule(() -> turn.complete(null), Duration.ofNanos(wait));
        }
        return turn.thenCompose(v -> l3.readAsync(a, 0, a.chunkSize(), new IoOptions(0, qos, FETCH_TIMEOUT))).thenApply(b -> {
            prefetchFetches.incrementAndGet();
            prefetchBytes.addAndGet(b.readableBytes());
            return b;
        });
    }

    /** A planner lets a hint go: its owner's pins here are dropped, their copies stay (evictable unless pinned by another). */
    private CompletableFuture<Reply> unpin(Request<Unpin> r) {
        return CompletableFuture.completedFuture(Reply.of(new Unpinned(store.unpin(r.message().owner()))));
    }

    /** NO_SPACE for a new copy of {@code chunk}, counted. */
    private StrataException noRoom(ChunkRef chunk) {
        refusedFull.incrementAndGet();
        return new StrataException(Status.NO_SPACE, "L2 agent " + nodeId() + " has no room for " + chunk + ": its copies are all "
                + "undrained or pinned (" + store.used() + " of " + store.capacity() + " bytes)");
    }

    /** What this agent holds and does now. */
    public L2Message.Status status() {
        long staged = 0;
        long stagedChunks = 0;
        long cached = 0;
        long cachedChunks = 0;
        long oldest = Long.MAX_VALUE;
        for (Copy c : store.all().values()) {
            if (!c.present()) {
                continue;
            }
            if (c.undrained()) {
                staged += c.length();
                stagedChunks++;
                oldest = Math.min(oldest, c.stagedMillis());
            } else {
                cached += c.length();
                cachedChunks++;
            }
        }
        long pinned = 0;
        long pinnedChunks = 0;
        for (Key k : store.pinnedChunks()) {
            Copy c = store.all().get(k);
            if (c != null && c.present()) {
                pinned += c.length();
                pinnedChunks++;
            }
        }
        double lag = oldest == Long.MAX_VALUE ? 0 : Math.max(0, ctx.clock().now().toEpochMilli() - oldest) / 1000.0;
        return new L2Message.Status(store.capacity(), store.used(), staged, stagedChunks, cached, cachedChunks, drain.drainedBytes(),
                drain.bytesPerSecond(), lag, refusedFull.get(), store.evictions(), fenced(), store.failure().isPresent(), pinnedChunks,
                pinned, prefetchFetches.get(), prefetchBytes.get());
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        NodeAgent a = agent;
        if (a != null) {
            a.close();
        }
        drain.close();
        server.close();
        rpc.close();
        io.shutdown();
        reads.shutdown();
        hints.shutdown();
        syncers.shutdown();
        try {
            io.awaitTermination(5, TimeUnit.SECONDS);
            reads.awaitTermination(5, TimeUnit.SECONDS);
            hints.awaitTermination(5, TimeUnit.SECONDS);
            syncers.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        store.close();
        LOG.info("{}: L2 agent {} stopped", ctx.name(), config.nodeId());
    }
}
