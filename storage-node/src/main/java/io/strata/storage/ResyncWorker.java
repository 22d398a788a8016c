package io.strata.storage;

import io.strata.protocol.storage.StorageMessages;
import io.netty.buffer.ByteBuf;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.strata.core.util.RateLimiter;
import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.util.Futures;
import io.strata.storage.engine.ChunkEngine;
import io.strata.storage.engine.ChunkMeta;
import io.strata.storage.engine.ChunkVersion;
import io.strata.core.util.Crc32c;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.ChunkSummary;
import io.strata.protocol.storage.StorageMessage.ChunkList;
import io.strata.protocol.storage.StorageMessage.ListChunks;
import io.strata.protocol.storage.StorageMessage.SyncChunk;
import io.strata.protocol.storage.StorageMessage.SyncChunkDone;
import io.strata.protocol.storage.StorageMessage.SyncDone;
import io.strata.protocol.storage.StorageMessage.SyncDoneAck;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.FileChannel;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The predecessor's side of resync (docs/internals/resync.md). When routing shows that the
 * target right behind one of this node's serving targets is {@code syncing}, this node runs one
 * resync session for that chain under the chain's current version:
 *
 * <ol>
 * <li>merge its own chunk list (key order, from LMDB) with the syncing target's
 * ({@code ListChunks}, page by page);</li>
 * <li>for every chunk whose summaries differ (or that only one side has), take the chunk's lock
 * (no write is then in flight on it here), roll a leftover pending version forward, compare
 * again, and send the chunk whole ({@code SyncChunk}, the data file with sendfile) or tell the
 * target to forget it;</li>
 * <li>send {@code SyncDone}: the target reports itself up to date to the cluster manager.</li>
 * </ol>
 *
 * Meanwhile live writes keep flowing through the syncing target (it is the chain's tail);
 * {@link Replicator} sends them as full-chunk replaces. Copies are limited to
 * {@code [storage] resync-bandwidth} bytes per second, and at most {@link #WINDOW} are in
 * flight. A session ends when routing changes what it runs under (a new chain version, another
 * target, this node no longer serving): the next one starts from the listing again, and chunks
 * already copied compare equal. A failed session is retried after a second. Each session runs
 * on its own virtual thread (it waits for pages, tokens and copies; disk and network work stay
 * asynchronous on the node's executors).
 */
final class ResyncWorker implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ResyncWorker.class);
    /** Chunks per listing page. */
    static final int PAGE = 4096;
    /** Copies in flight per session. */
    static final int WINDOW = 4;
    private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);

    private final StorageNode node;
    private final NodeContext ctx;
    private final RpcClient rpc;
    private final RateLimiter limiter;
    private final Map<ChainId, Session> sessions = new ConcurrentHashMap<>();
    /** The last session of each chain that no longer runs one (for tools and tests). */
    private final Map<ChainId, ResyncProgress> finished = new ConcurrentHashMap<>();
    private final Counter copiedBytes;
    private final Counter copied;
    private final Counter removed;
    private final Counter same;
    private volatile ScheduledFuture<?> ticker;
    private volatile boolean closed;

    ResyncWorker(StorageNode node, RpcOptions rpcOptions, StorageMetrics metrics) {
        this.node = node;
        this.ctx = node.context();
        // its own connections: bulk copies never queue in front of live forwards
        this.rpc = new RpcClient(ctx, StorageMessages.PROTOCOL, rpcOptions);
        this.limiter = new RateLimiter(ctx.clock(), node.config().resyncBandwidth().bytes());
        Gauge.builder("strata.storage.resync.limit", limiter, RateLimiter::rate)
                .description("bytes per second this node may send to targets it resyncs: resync-bandwidth, or its share of resync-budget")
                .baseUnit("bytes").register(ctx.meters());
        this.copiedBytes = Counter.builder("strata.storage.resync.bytes").description("chunk bytes sent by resync")
                .baseUnit("bytes").register(ctx.meters());
        this.copied = chunks("copied");
        this.removed = chunks("removed");
        this.same = chunks("same");
    }

    private Counter chunks(String action) {
        return Counter.builder("strata.storage.resync.chunks").description("chunks compared by resync, by outcome")
                .tag("action", action).register(ctx.meters());
    }

    /** Looks at every chain in {@code r}: starts, keeps, restarts or cancels this node's sessions. */
    synchronized void onRouting(RoutingInfo r) {
        if (closed) {
            return;
        }
        if (ticker == null) {
            try {
                ticker = ctx.scheduler().scheduleWithFixedDelay(() -> onRouting(node.routing().current()), 500, 500,
                        TimeUnit.MILLISECONDS);
            } catch (RuntimeException rejected) {
                return; // the context is shutting down
            }
        }
        Set<ChainId> wanted = new HashSet<>();
        int syncing = syncingWithASender(r);
        for (ChainInfo c : r.chains().values()) {
            ChainView v = node.viewOrNull(r, c);
            TargetId succ = null;
            if (v != null && v.state() == TargetState.SERVING && v.engine().failure().isEmpty()) {
                Optional<TargetId> s = v.successor();
                if (s.isPresent() && r.target(s.get()).state() == TargetState.SYNCING) {
                    succ = s.get();
                }
            }
            Session old = sessions.get(c.id());
            if (old != null && (succ == null || !old.target.equals(succ) || old.chainVersion != c.version())) {
                old.cancel();
                sessions.remove(c.id(), old);
                finished.put(c.id(), old.progress());
                old = null;
            }
            if (succ == null) {
                continue;
            }
            wanted.add(c.id());
            if (old == null || (old.state.get() == ResyncProgress.State.FAILED && ctx.clock().nanoTime() - old.endedAt > RETRY_NANOS)) {
                Session s = new Session(v, succ);
                sessions.put(c.id(), s);
                share(wanted.size(), syncing); // before its first copy: the rate it starts at
                s.start();
            }
        }
        sessions.forEach((chain, s) -> {
            if (!wanted.contains(chain)) {
                s.cancel();
                sessions.remove(chain, s);
                finished.put(chain, s.progress());
            }
        });
        share(wanted.size(), syncing);
    }

    /**
     * The syncing targets of {@code r} that a resync sends to: those whose predecessor on their
     * chain's write path is serving (that predecessor's node runs the session, as
     * {@link #onRouting} does here). A syncing target behind another syncing one waits for it and
     * takes no share of the cluster's budget.
     */
    static int syncingWithASender(RoutingInfo r) {
        int n = 0;
        for (ChainInfo c : r.chains().values()) {
            List<TargetId> path = r.writePath(c.id());
            for (int i = 1; i < path.size(); i++) {
                if (r.target(path.get(i)).state() == TargetState.SYNCING && r.target(path.get(i - 1)).state() == TargetState.SERVING) {
                    n++;
                }
            }
        }
        return n;
    }

    /**
     * Sets this node's resync rate from the cluster's budget: its share is in proportion to the
     * {@code mine} of the {@code syncing} targets of the cluster it resyncs.
     */
    private void share(int mine, int syncing) {
        long rate = node.config().resyncRate(mine, syncing);
        if (rate != limiter.rate()) {
            if (mine > 0) {
                LOG.info("{}: resync limited to {} bytes/s ({} of {} syncing targets here; resync-bandwidth {}, resync-budget {})",
                        ctx.name(), rate, mine, syncing, node.config().resyncBandwidth(), node.config().resyncBudget());
            }
            limiter.setRate(rate);
        }
    }

    /** The running session of each chain, else the last one that ran. */
    Map<ChainId, ResyncProgress> progress() {
        Map<ChainId, ResyncProgress> out = new TreeMap<>(finished);
        sessions.forEach((c, s) -> out.put(c, s.progress()));
        return out;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (ticker != null) {
            ticker.cancel(false);
        }
        sessions.values().forEach(Session::cancel);
        sessions.clear();
        rpc.close();
    }

    /** A session was cancelled by a routing change or a close. */
    private static final class Cancelled extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Cancelled(String why) {
            super(why, null, false, false);
        }
    }

    /** One resync of one chain's successor under one chain version. */
    private final class Session {
        final ChainId chain;
        final long chainVersion;
        final TargetId self;
        final TargetId target;
        final ChunkEngine engine;
        final InetSocketAddress to;
        final AtomicReference<ResyncProgress.State> state = new AtomicReference<>(ResyncProgress.State.RUNNING);
        final AtomicLong compared = new AtomicLong();
        final AtomicLong nCopied = new AtomicLong();
        final AtomicLong nRemoved = new AtomicLong();
        final AtomicLong nSame = new AtomicLong();
        final AtomicLong bytes = new AtomicLong();
        final Semaphore window = new Semaphore(WINDOW);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        volatile long endedAt;
        volatile Thread thread;

        Session(ChainView v, TargetId target) {
            this.chain = v.chain().id();
            this.chainVersion = v.version();
            this.self = v.self();
            this.target = target;
            this.engine = v.engine();
            this.to = v.nodeOf(target).address();
        }

        ResyncProgress progress() {
            return new ResyncProgress(chain, chainVersion, target, compared.get(), nCopied.get(), nRemoved.get(), nSame.get(),
                    bytes.get(), state.get());
        }

        void start() {
            LOG.info("{}: resync of {} in {} v{} from {} starts", ctx.name(), target, chain, chainVersion, self);
            thread = Thread.ofVirtual().name(ctx.name() + "-resync-" + chain.value()).start(this::run);
        }

        void cancel() {
            if (state.compareAndSet(ResyncProgress.State.RUNNING, ResyncProgress.State.CANCELLED)) {
                endedAt = ctx.clock().nanoTime();
                LOG.info("{}: resync of {} in {} v{} cancelled by a routing change", ctx.name(), target, chain, chainVersion);
                Thread t = thread;
                if (t != null) {
                    t.interrupt();
                }
            }
        }

        private void checkLive() {
            if (state.get() != ResyncProgress.State.RUNNING || closed || node.isClosed()) {
                throw new Cancelled("cancelled");
            }
            Throwable f = failure.get();
            if (f != null) {
                throw StrataException.wrap(f);
            }
        }

        private void run() {
            long t0 = ctx.clock().nanoTime();
            try {
                pass();
                SyncDoneAck ack = call(new SyncDone(chain.value(), chainVersion, nCopied.get(), nRemoved.get(), bytes.get()),
                        Payload.NONE, SyncDoneAck.class);
                if (state.compareAndSet(ResyncProgress.State.RUNNING, ResyncProgress.State.DONE)) {
                    endedAt = ctx.clock().nanoTime();
                    LOG.info("{}: resync of {} in {} v{} done in {} ms: {} chunks compared, {} copied ({} bytes), {} removed, {} same"
                                    + " (target acknowledged v{})", ctx.name(), target, chain, chainVersion,
                            TimeUnit.NANOSECONDS.toMillis(endedAt - t0), compared.get(), nCopied.get(), bytes.get(), nRemoved.get(),
                            nSame.get(), ack.chainVersion());
                }
            } catch (Cancelled e) {
                // routing moved on; a new session (if any) starts from the listing
            } catch (RuntimeException | InterruptedException e) {
                if (state.compareAndSet(ResyncProgress.State.RUNNING, ResyncProgress.State.FAILED)) {
                    endedAt = ctx.clock().nanoTime();
                    LOG.warn("{}: resync of {} in {} v{} failed after {} chunks ({}); retrying", ctx.name(), target, chain,
                            chainVersion, compared.get(), StrataException.wrap(e).toString());
                }
            }
        }

        /**
         * Waits for every update that held or awaited a chunk lock on this target when the
         * session began. One of them may have started under the previous chain version, when this
         * target was the tail: it commits here without forwarding, so the listing must come after
         * it (updates that reach the lock later see the new version; CraqService refuses a tail's
         * update under an old one).
         */
        private void awaitEarlierUpdates() throws InterruptedException {
            CompletableFuture<Void> earlier = node.locks().drained(self);
            while (true) {
                checkLive();
                try {
                    earlier.get(100, TimeUnit.MILLISECONDS);
                    return;
                } catch (java.util.concurrent.TimeoutException e) {
                    // still running: check the session is still wanted, wait again
                } catch (java.util.concurrent.ExecutionException e) {
                    return; // lock tails complete normally; nothing to wait for
                }
            }
        }

        /** Merges the two chunk lists and sends what differs; returns once every copy is acknowledged. */
        private void pass() throws InterruptedException {
            awaitEarlierUpdates();
            Optional<ChunkId> mineAfter = Optional.empty();
            List<ChunkMeta> mine = List.of();
            int mi = 0;
            boolean mineMore = true;
            ChunkList theirs = null;
            int ti = 0;
            boolean theirsFirst = true;
            while (true) {
                checkLive();
                if (mi == mine.size() && mineMore) {
                    mine = engine.scan(mineAfter, PAGE);
                    mi = 0;
                    mineMore = mine.size() == PAGE;
                    if (!mine.isEmpty()) {
                        mineAfter = Optional.of(mine.get(mine.size() - 1).id());
                    }
                }
                if ((theirs == null || (ti == theirs.chunks().size() && theirs.more()))) {
                    ChunkSummary last = theirs == null || theirs.chunks().isEmpty() ? null : theirs.chunks().get(theirs.chunks().size() - 1);
                    theirs = call(new ListChunks(chain.value(), chainVersion, theirsFirst, last == null ? 0 : last.inode(),
                            last == null ? 0 : last.index(), PAGE), Payload.NONE, ChunkList.class);
                    theirsFirst = false;
                    ti = 0;
                }
                ChunkMeta a = mi < mine.size() ? mine.get(mi) : null;
                ChunkSummary b = ti < theirs.chunks().size() ? theirs.chunks().get(ti) : null;
                if (a == null && b == null) {
                    break;
                }
                int cmp = a == null ? 1 : b == null ? -1 : compare(a.id(), b.id());
                compared.incrementAndGet();
                if (cmp < 0) {
                    mi++;
                    send(a.id(), a.chunkSize(), null, estimate(a));
                } else if (cmp > 0) {
                    ti++;
                    send(b.id(), b.chunkSize(), b, 0);
                } else {
                    mi++;
                    ti++;
                    if (a.summary().sameAs(b)) {
                        nSame.incrementAndGet();
                        same.increment();
                    } else {
                        send(a.id(), a.chunkSize(), b, estimate(a));
                    }
                }
            }
            window.acquire(WINDOW); // every copy acknowledged
            window.release(WINDOW);
            checkLive();
        }

        private long estimate(ChunkMeta m) {
            return m.committedLength();
        }

        /** Starts one chunk's comparison and copy (at most WINDOW at once, at the resync rate). */
        private void send(ChunkId id, int chunkSize, ChunkSummary theirs, long bytesEstimate) throws InterruptedException {
            limiter.acquire(Math.max(1, bytesEstimate));
            window.acquire();
            CompletableFuture<Void> f;
            try {
                checkLive();
                ChunkAddress a = new ChunkAddress(id, chain, chunkSize);
                f = node.locks().withLock(self, id, () -> underLock(a, theirs));
            } catch (RuntimeException e) {
                window.release();
                throw e;
            }
            f.whenComplete((x, e) -> {
                if (e != null) {
                    failure.compareAndSet(null, e);
                }
                window.release();
            });
        }

        /** Under this node's lock of the chunk: settle a leftover pending version, compare, and copy or remove. */
        private CompletableFuture<Void> underLock(ChunkAddress a, ChunkSummary theirs) {
            ChainView v = node.viewOf(chain, self);
            if (v.version() != chainVersion || state.get() != ResyncProgress.State.RUNNING) {
                throw new Cancelled("routing moved on");
            }
            Optional<ChunkMeta> held = engine.find(a.id());
            CompletableFuture<?> settled = CompletableFuture.completedFuture(null);
            if (held.isPresent() && held.get().dirty()) {
                // no write is in flight here (we hold the lock): roll the leftover forward through the target
                settled = node.craq().rollForward(v, a, held.get(), ctx.clock().nanoTime() + CALL_TIMEOUT.toNanos());
            }
            return settled.thenCompose(x -> {
                Optional<ChunkMeta> now = engine.find(a.id());
                if (now.isEmpty()) {
                    if (theirs == null) {
                        return CompletableFuture.completedFuture(null);
                    }
                    return callAsync(new SyncChunk(ChunkRef.of(a), chainVersion, true, 0, io.strata.protocol.storage.RequestId.NONE, 0, 0,
                            false, List.of()), Payload.NONE, SyncChunkDone.class).thenAccept(d -> {
                                nRemoved.incrementAndGet();
                                removed.increment();
                            });
                }
                ChunkMeta m = now.get();
                if (theirs != null && m.summary().sameAs(theirs)) {
                    nSame.incrementAndGet();
                    same.increment();
                    return CompletableFuture.completedFuture(null);
                }
                return copy(a, m, false);
            });
        }

        /** Sends the committed version of {@code m} whole: the data file with sendfile, or (verified) from memory. */
        private CompletableFuture<Void> copy(ChunkAddress a, ChunkMeta m, boolean fromMemory) {
            ChunkVersion c = m.committed();
            if (c == null) {
                return CompletableFuture.completedFuture(null); // nothing committed (a pending-only chunk settled to nothing)
            }
            SyncChunk msg = new SyncChunk(ChunkRef.of(a), chainVersion, false, c.version(), c.request(), c.removed() ? 0 : c.length(),
                    c.removed() ? 0 : c.crc(), c.removed(), m.recent());
            Payload p;
            try {
                p = payload(a, c, fromMemory);
            } catch (IOException | RuntimeException e) {
                return CompletableFuture.failedFuture(StrataException.wrap(e));
            }
            long n = msg.length();
            return callAsync(msg, p, SyncChunkDone.class).handle((d, e) -> {
                if (e == null) {
                    nCopied.incrementAndGet();
                    copied.increment();
                    bytes.addAndGet(n);
                    copiedBytes.increment(n);
                    return CompletableFuture.<Void>completedFuture(null);
                }
                StrataException se = StrataException.wrap(e);
                if (se.status() == Status.CHECKSUM_MISMATCH && !fromMemory) {
                    LOG.warn("{}: resync copy of {} v{} arrived damaged at {}; sending it again from a verified read", ctx.name(),
                            a.id(), c.version(), target);
                    return copy(a, m, true);
                }
                return CompletableFuture.<Void>failedFuture(se);
            }).thenCompose(f -> f);
        }

        private Payload payload(ChunkAddress a, ChunkVersion c, boolean fromMemory) throws IOException {
            if (c.removed() || c.length() == 0) {
                return Payload.NONE;
            }
            if (!fromMemory) {
                FileChannel ch = engine.openData(a.id(), c);
                return Payload.ofFile(ch, 0, c.length());
            }
            ByteBuf whole = CraqService.readWhole(engine, a.id(), c);
            if (Crc32c.of(whole) != c.crc()) {
                whole.release();
                throw new StrataException(Status.CHUNK_CORRUPT, self + ": chunk " + a.id() + " " + c
                        + " does not match its CRC32C here; it cannot be resynced from this replica");
            }
            return Payload.of(whole);
        }

        private <R extends io.strata.core.rpc.Message> CompletableFuture<R> callAsync(io.strata.protocol.storage.StorageMessage m, Payload p,
                                                                                      Class<R> type) {
            return rpc.call(to, m, p, CALL_TIMEOUT, RpcClient.Lane.BULK).thenApply(r -> { // catching up is background work
                try (r) {
                    return r.message(type);
                }
            });
        }

        private <R extends io.strata.core.rpc.Message> R call(io.strata.protocol.storage.StorageMessage m, Payload p, Class<R> type) {
            return Futures.join(callAsync(m, p, type), CALL_TIMEOUT.plusSeconds(5));
        }
    }

    /** Key order of chunks in LMDB: inode (unsigned), then index. */
    static int compare(ChunkId a, ChunkId b) {
        int c = Long.compareUnsigned(a.inode().value(), b.inode().value());
        return c != 0 ? c : Integer.compareUnsigned(a.index(), b.index());
    }
}
