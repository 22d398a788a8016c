package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.Codec;
import io.strata.protocol.meta.Staging;
import io.strata.protocol.meta.DirPage;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.Meta;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.Cached;
import io.strata.protocol.meta.PolicyInfo;
import io.strata.protocol.meta.InDir;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.StatFs;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.strata.config.policy.Policy;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Wire;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KvStore;
import io.strata.namespace.kv.RetryPolicy;
import io.strata.namespace.kv.Transactor;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The namespace over a {@link KvStore}, in process: every {@link Meta} operation is one
 * transaction run on this store's worker pool with retries. It keeps no state of its own beyond
 * a batch of reserved inode ids, so any number of instances may serve one FoundationDB cluster;
 * the meta service is a thin RPC layer over it.
 *
 * <p>Read-write operations record their result under their {@link RequestId} in the same
 * transaction ({@code IDEM} keys): a body re-run after "maybe committed" (or a client retry with
 * the same id) finds the record and returns the recorded result instead of acting twice.
 *
 * <p>Metrics: {@code strata.meta.ops{op,result}} (timer), plus the KV layer's and the collector's.
 */
public final class MetaStore implements Meta, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetaStore.class);

    /**
     * @param workers         threads running transaction bodies (a commit is queued, not waited for)
     * @param inodeBatch      inode ids reserved per allocator transaction
     * @param gcInterval      pause between two collector passes (zero: no pass by itself)
     * @param gcDelay         how long a deleted file's chunks wait before they are freed
     * @param gcChunksPerSecond most chunk removals the collector starts per second while clients leave the namespace alone
     * @param idempotencyTtl  how long a request id's result is kept for retries
     * @param basePolicy      the policy of the root when it sets nothing
     * @param sessionLease    how long a client's open sessions outlive its last keep-alive (or their open)
     * @param gcBusyChunksPerSecond most chunk removals the collector starts per second while clients
     *                        change the namespace (a change in the last {@link #BUSY_WINDOW})
     * @param gcBusyMaxWait   a file due this long is freed at the full rate however busy the service is
     */
    public record Options(int workers, int inodeBatch, Duration gcInterval, Duration gcDelay, long gcChunksPerSecond,
                          Duration idempotencyTtl, Policy basePolicy, RetryPolicy retry, Duration sessionLease,
                          long gcBusyChunksPerSecond, Duration gcBusyMaxWait) {
        public static final Options DEFAULTS = new Options(8, 1024, Duration.ofSeconds(1), Duration.ZERO, 2000,
                Duration.ofMinutes(30), Policy.DEFAULT, RetryPolicy.DEFAULT, Duration.ofSeconds(60), 5, Duration.ofSeconds(60));

        public Options {
            if (workers < 1 || inodeBatch < 1 || gcChunksPerSecond < 1 || gcBusyChunksPerSecond < 1) {
                throw new IllegalArgumentException("workers, inode batch and the collector's rates must be positive");
            }
            if (gcBusyMaxWait.isNegative()) {
                throw new IllegalArgumentException("the collector's busy wait must not be negative, got " + gcBusyMaxWait);
            }
            if (sessionLease.toMillis() < 1) {
                throw new IllegalArgumentException("the session lease must be positive, got " + sessionLease);
            }
        }

        public Options withWorkers(int n) {
            return new Options(n, inodeBatch, gcInterval, gcDelay, gcChunksPerSecond, idempotencyTtl, basePolicy, retry, sessionLease,
                    gcBusyChunksPerSecond, gcBusyMaxWait);
        }

        public Options withGc(Duration interval, Duration delay) {
            return new Options(workers, inodeBatch, interval, delay, gcChunksPerSecond, idempotencyTtl, basePolicy, retry, sessionLease,
                    gcBusyChunksPerSecond, gcBusyMaxWait);
        }

        /** The same rate whether or not clients are changing the namespace. */
        public Options withGcRate(long chunksPerSecond) {
            return withGcPace(chunksPerSecond, chunksPerSecond, gcBusyMaxWait);
        }

        public Options withGcPace(long chunksPerSecond, long busyChunksPerSecond, Duration busyMaxWait) {
            return new Options(workers, inodeBatch, gcInterval, gcDelay, chunksPerSecond, idempotencyTtl, basePolicy, retry, sessionLease,
                    busyChunksPerSecond, busyMaxWait);
        }

        public Options withSessionLease(Duration lease) {
            return new Options(workers, inodeBatch, gcInterval, gcDelay, gcChunksPerSecond, idempotencyTtl, basePolicy, retry, lease,
                    gcBusyChunksPerSecond, gcBusyMaxWait);
        }

        /**
         * How often the session pruner runs: a quarter of the lease (so a dead client's sessions
         * end within 1.25 leases of its last keep-alive), between 50 ms and 15 s.
         */
        public Duration pruneInterval() {
            long ms = Math.clamp(sessionLease.toMillis() / 4, 50, 15_000);
            return Duration.ofMillis(ms);
        }
    }

    private final NodeContext ctx;
    private final KvStore store;
    private final Transactor tr;
    private final NamespaceOps ops;
    private final InodeAllocator allocator;
    private final ExecutorService workers;
    /** The collector's own thread: one pass at a time, never on a request thread. */
    private final ScheduledExecutorService gcThread;
    private final GarbageCollector gc;
    private final CheckpointKeeper keeper;
    private final ScheduledFuture<?> gcTask;
    private final SessionPruner pruner;
    private final ScheduledFuture<?> pruneTask;
    private final MeterRegistry meters;
    /** Whether deleted files' chunks and dead writers' bytes can be removed here (a data tier is wired). */
    private final boolean gcHasReclaimer;
    private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();
    /** When the last change by a client started ({@code clock.nanoTime()}); the collector slows down after one. */
    private final java.util.concurrent.atomic.AtomicLong lastChange = new java.util.concurrent.atomic.AtomicLong(Long.MIN_VALUE);
    /** How long after a client's change the collector keeps the busy pace. */
    public static final Duration BUSY_WINDOW = Duration.ofSeconds(1);

    /**
     * @param reclaimer frees deleted files' chunks; null keeps them queued (no data tier wired:
     *                  a later instance with a reclaimer frees them)
     */
    public MetaStore(NodeContext ctx, KvStore store, ChainTables tables, ChunkReclaimer reclaimer, Options options) {
        this.ctx = ctx;
        this.store = store;
        this.meters = ctx.meters();
        this.gcHasReclaimer = reclaimer != null;
        AtomicInteger n = new AtomicInteger();
        this.workers = Executors.newFixedThreadPool(options.workers(), r -> {
            Thread t = new Thread(r, ctx.name() + "-meta-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.tr = new Transactor(store, workers, options.retry(), meters, ctx.clock(), ctx.random());
        this.ops = new NamespaceOps(tables, options.basePolicy());
        this.allocator = new InodeAllocator(tr, options.inodeBatch());
        this.gcThread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, ctx.name() + "-meta-gc");
            t.setDaemon(true);
            return t;
        });
        GarbageCollector.Pace pace = new GarbageCollector.Pace(ctx.clock(), options.gcChunksPerSecond(),
                options.gcBusyChunksPerSecond(), options.gcBusyMaxWait(), this::changing);
        this.gc = new GarbageCollector(tr, reclaimer, options.gcDelay(), options.idempotencyTtl(), pace, this::nowMillis,
                ctx.scheduler(), meters);
        this.keeper = new CheckpointKeeper(tr, ops, this::nowMillis, this::nowNanos, meters);
        this.pruner = new SessionPruner(tr, ops, options.sessionLease(), reclaimer != null, this::nowMillis, meters);
        bootstrap();
        if (!options.gcInterval().isZero()) {
            long ms = Math.max(1, options.gcInterval().toMillis());
            // fixed delay on the collector's own thread: the next pass starts a pause after the last one ended
            this.gcTask = gcThread.scheduleWithFixedDelay(this::collectQuietly, ms, ms, TimeUnit.MILLISECONDS);
        } else {
            this.gcTask = null;
        }
        long pruneMs = options.pruneInterval().toMillis();
        // on the collector's thread too: never concurrent with a pass, never on a request thread
        this.pruneTask = gcThread.scheduleWithFixedDelay(this::pruneQuietly, pruneMs, pruneMs, TimeUnit.MILLISECONDS);
        if (reclaimer == null) {
            LOG.info("{}: no data tier wired: sessions of dead clients are ended, but what they wrote past a file's length is not trimmed",
                    ctx.name());
        }
    }

    /** Creates the root directory the first time the store is used. */
    private void bootstrap() {
        tr.run(tx -> {
            if (tx.get(KeySpace.inode(InodeId.ROOT)) == null) {
                long now = nowNanos();
                NsTx t = new NsTx(tx, false, now);
                t.putInode(NamespaceOps.newRoot(now));
                t.countInodes(1);
                tx.set(KeySpace.FORMAT, Bytes.le64(1));
                LOG.info("{}: new namespace on {} (root created)", ctx.name(), store.name());
            }
            return null;
        });
    }

    public KvStore store() {
        return store;
    }

    long nowNanos() {
        Instant i = ctx.clock().now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    long nowMillis() {
        return ctx.clock().now().toEpochMilli();
    }

    // ---- plumbing --------------------------------------------------------------------------

    private <T> CompletableFuture<T> timed(String op, CompletableFuture<T> f, long t0) {
        return f.whenComplete((r, e) -> {
            String result = e == null ? "ok" : StrataException.wrap(e).status().name().toLowerCase(java.util.Locale.ROOT);
            timers.computeIfAbsent(op + "/" + result, k -> Timer.builder("strata.meta.ops").tag("op", op).tag("result", result)
                    .register(meters)).record(ctx.clock().nanoTime() - t0, TimeUnit.NANOSECONDS);
        });
    }

    /** The session pruner's own change (not a client's: it does not slow the collector). */
    private static final String PRUNE = "prune-sessions";

    /** Whether a client changed the namespace within the last {@link #BUSY_WINDOW}. */
    private boolean changing() {
        long last = lastChange.get();
        return last != Long.MIN_VALUE && ctx.clock().nanoTime() - last < BUSY_WINDOW.toNanos();
    }

    private <T> CompletableFuture<T> read(String op, Function<NsTx, T> body) {
        long t0 = ctx.clock().nanoTime();
        return timed(op, tr.runAsync(reading(body)), t0);
    }

    /** {@code body} as a read-only transaction body. */
    private <T> Function<io.strata.namespace.kv.KvTransaction, T> reading(Function<NsTx, T> body) {
        return tx -> body.apply(new NsTx(tx, true, nowNanos()));
    }

    /**
     * A {@link #read} of a few keys (a lookup, a getattr, a path walk): on the calling thread
     * when the store {@linkplain KvStore#readsInline reads inline}, so that a stat costs the
     * service no hand-off to a worker and back, and never queues behind the changes waiting for
     * a worker; elsewhere as {@link #read}.
     */
    private <T> CompletableFuture<T> shortRead(String op, Function<NsTx, T> body) {
        if (!store.readsInline()) {
            return read(op, body);
        }
        long t0 = ctx.clock().nanoTime();
        CompletableFuture<T> f;
        try {
            f = CompletableFuture.completedFuture(tr.run(reading(body)));
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        return timed(op, f, t0);
    }

    /** A read-write operation, applied once per request id. */
    private <T> CompletableFuture<T> write(String op, RequestId req, java.util.function.Supplier<InodeId> newId,
                                           BodyWithId<T> body, Function<T, byte[]> enc, Function<byte[], T> dec) {
        long t0 = ctx.clock().nanoTime();
        if (!op.equals(PRUNE)) {
            lastChange.set(t0);
        }
        RequestId id = req != null ? req : RequestId.create(nowMillis(), ctx.random());
        // the new inode's id is taken once, by the first attempt, before its snapshot opens
        InodeId[] fresh = {null};
        byte[] idemKey = KeySpace.idempotency(id);
        return timed(op, tr.runAsync(tx -> {
            if (newId != null && fresh[0] == null) {
                fresh[0] = newId.get();
            }
            byte[] rec = tx.get(idemKey);
            if (rec != null) {
                return dec.apply(Arrays.copyOfRange(rec, 8, rec.length));
            }
            long now = nowNanos();
            T r = body.apply(new NsTx(tx, false, now), fresh[0], now / 1_000_000);
            tx.set(idemKey, Bytes.concat(Bytes.le64(nowMillis()), enc.apply(r)));
            return r;
        }), t0);
    }

    @FunctionalInterface
    private interface BodyWithId<T> {
        T apply(NsTx t, InodeId newId, long nowMillis);
    }

    /** A {@link #write} that creates no inode and answers nothing but its completion (its idempotency record holds no answer). */
    private CompletableFuture<Void> writeVoid(String op, RequestId req, VoidBody body) {
        return write(op, req, null, (t, id, ms) -> {
            body.apply(t, ms);
            return null;
        }, MetaStore::none, MetaStore::none);
    }

    @FunctionalInterface
    private interface VoidBody {
        void apply(NsTx t, long nowMillis);
    }

    private static final byte[] NONE = new byte[0];

    private static byte[] attrsBytes(InodeAttrs a) {
        return Codec.inodeBytes(a);
    }

    private static InodeAttrs attrsFrom(byte[] b) {
        return Codec.inodeFrom(b);
    }

    /** A directory's attributes from a removal's record; null from a record of a version that kept none (empty). */
    private static InodeAttrs dirFrom(byte[] b) {
        return b.length == 0 ? null : Codec.inodeFrom(b);
    }

    private static Void none(byte[] b) {
        return null;
    }

    private static byte[] none(Void v) {
        return NONE;
    }

    // ---- operations ------------------------------------------------------------------------

    @Override
    public CompletableFuture<InodeAttrs> lookupAsync(Caller c, InodeId parent, String name) {
        return shortRead("lookup", t -> ops.lookup(t, c, parent, name));
    }

    @Override
    public CompletableFuture<InodeAttrs> getattrAsync(Caller c, InodeId inode) {
        return shortRead("getattr", t -> t.attrs(inode));
    }

    @Override
    public CompletableFuture<InodeAttrs> resolveAsync(Caller c, String path) {
        return shortRead("resolve", t -> ops.resolve(t, c, path));
    }

    @Override
    public CompletableFuture<InodeAttrs> setattrAsync(Caller c, InodeId inode, SetAttr attrs, RequestId req) {
        return write("setattr", req, null, (t, id, ms) -> ops.setattr(t, c, inode, attrs), MetaStore::attrsBytes, MetaStore::attrsFrom);
    }

    @Override
    public CompletableFuture<InodeAttrs> createAsync(Caller c, InodeId parent, String name, int mode, boolean exclusive, RequestId req) {
        return write("create", req, allocator::next, (t, id, ms) -> ops.create(t, c, parent, name, mode, exclusive, id),
                MetaStore::attrsBytes, MetaStore::attrsFrom);
    }

    @Override
    public CompletableFuture<InDir> mkdirInAsync(Caller c, InodeId parent, String name, int mode, RequestId req) {
        return withDir(c, parent, write("mkdir", req, allocator::next, (t, id, ms) -> ops.mkdir(t, c, parent, name, mode, id),
                MetaStore::inDirBytes, MetaStore::inDirFrom), InDir::dir, (m, d) -> new InDir(m.attrs(), d));
    }

    @Override
    public CompletableFuture<InDir> symlinkInAsync(Caller c, InodeId parent, String name, String target, RequestId req) {
        return withDir(c, parent, write("symlink", req, allocator::next, (t, id, ms) -> ops.symlink(t, c, parent, name, target, id),
                MetaStore::inDirBytes, MetaStore::inDirFrom), InDir::dir, (m, d) -> new InDir(m.attrs(), d));
    }

    /**
     * {@code change}'s answer, with directory {@code parent} read now when its {@code dir} is
     * missing: a retry answered from a record written before changes kept their directory.
     */
    private <T> CompletableFuture<T> withDir(Caller c, InodeId parent, CompletableFuture<T> change, Function<T, InodeAttrs> dir,
                                             java.util.function.BiFunction<T, InodeAttrs, T> with) {
        return change.thenCompose(r -> dir.apply(r) != null ? CompletableFuture.completedFuture(r)
                : getattrAsync(c, parent).thenApply(d -> with.apply(r, d)));
    }

    private static byte[] inDirBytes(InDir m) {
        return Bytes.concat(Codec.inodeBytes(m.attrs()), Codec.inodeBytes(m.dir()));
    }

    private static InDir inDirFrom(byte[] bytes) {
        ByteBuf b = Unpooled.wrappedBuffer(bytes);
        return new InDir(Codec.readInode(b), b.isReadable() ? Codec.readInode(b) : null);
    }

    @Override
    public CompletableFuture<InodeAttrs> mknodAsync(Caller c, InodeId parent, String name, InodeType type, int mode, long rdev,
                                                    RequestId req) {
        return write("mknod", req, allocator::next, (t, id, ms) -> ops.mknod(t, c, parent, name, type, mode, rdev, id),
                MetaStore::attrsBytes, MetaStore::attrsFrom);
    }

    @Override
    public CompletableFuture<String> readlinkAsync(Caller c, InodeId inode) {
        return read("readlink", t -> ops.readlink(t, c, inode));
    }

    @Override
    public CompletableFuture<InodeAttrs> linkAsync(Caller c, InodeId inode, InodeId newParent, String newName, RequestId req) {
        return write("link", req, null, (t, id, ms) -> ops.link(t, c, inode, newParent, newName), MetaStore::attrsBytes, MetaStore::attrsFrom);
    }

    @Override
    public CompletableFuture<InodeAttrs> unlinkAsync(Caller c, InodeId parent, String name, RequestId req) {
        return withDir(c, parent, write("unlink", req, null, (t, id, ms) -> ops.unlink(t, c, parent, name, ms),
                MetaStore::attrsBytes, MetaStore::dirFrom), a -> a, (a, d) -> d);
    }

    @Override
    public CompletableFuture<InodeAttrs> rmdirAsync(Caller c, InodeId parent, String name, RequestId req) {
        return withDir(c, parent, write("rmdir", req, null, (t, id, ms) -> ops.rmdir(t, c, parent, name),
                MetaStore::attrsBytes, MetaStore::dirFrom), a -> a, (a, d) -> d);
    }

    @Override
    public CompletableFuture<Void> renameAsync(Caller c, InodeId srcParent, String srcName, InodeId dstParent, String dstName,
                                               boolean noReplace, RequestId req) {
        return writeVoid("rename", req, (t, ms) -> ops.rename(t, c, srcParent, srcName, dstParent, dstName, noReplace, ms));
    }

    @Override
    public CompletableFuture<DirPage> readdirAsync(Caller c, InodeId dir, String after, int limit, boolean withAttrs) {
        return read("readdir", t -> ops.readdir(t, c, dir, after, limit, withAttrs));
    }

    @Override
    public CompletableFuture<OpenResult> openAsync(Caller c, InodeId inode, int flags, long clientId, RequestId req) {
        if (!OpenFlags.tracked(flags)) {
            return shortRead("open-read", t -> ops.openUntracked(t, c, inode))
                    .thenCompose(o -> o != null ? CompletableFuture.completedFuture(o) : openTracked(c, inode, flags, clientId, req));
        }
        return openTracked(c, inode, flags, clientId, req);
    }

    private CompletableFuture<OpenResult> openTracked(Caller c, InodeId inode, int flags, long clientId, RequestId req) {
        long session = newSession();
        return write("open", req, null, (t, id, ms) -> ops.open(t, c, inode, flags, clientId, session),
                MetaStore::openedBytes, MetaStore::openedFrom);
    }

    @Override
    public CompletableFuture<OpenResult> createOpenAsync(Caller c, InodeId parent, String name, int mode, boolean exclusive, int flags,
                                                         long clientId, RequestId req) {
        long session = newSession();
        return withDir(c, parent, write("create-open", req, allocator::next,
                (t, id, ms) -> ops.createOpen(t, c, parent, name, mode, exclusive, flags, clientId, session, id),
                MetaStore::openedBytes, MetaStore::openedFrom),
                OpenResult::dir, (o, d) -> new OpenResult(o.sessionId(), o.attrs(), o.cached(), d));
    }

    /** A new session id: random, never 0 (an untracked open's). */
    private long newSession() {
        long s;
        do {
            s = ctx.random().nextLong();
        } while (s == 0);
        return s;
    }

    private static byte[] openedBytes(OpenResult r) {
        ByteBuf b = Unpooled.buffer();
        try {
            b.writeLong(r.sessionId());
            Codec.writeInode(b, r.attrs());
            Cached.writeCopies(b, r.cached());
            if (r.dir() != null) {
                Codec.writeInode(b, r.dir());
            }
            return ByteBufUtil.getBytes(b);
        } finally {
            b.release();
        }
    }

    private static OpenResult openedFrom(byte[] bytes) {
        ByteBuf b = Unpooled.wrappedBuffer(bytes);
        return new OpenResult(Wire.readLong(b, "session"), Codec.readInode(b), Cached.readCopies(b),
                b.isReadable() ? Codec.readInode(b) : null);
    }

    @Override
    public CompletableFuture<InodeAttrs> closeAsync(Caller c, InodeId inode, long session, long writtenLength, boolean wrote,
                                                    long contentCrc, long crcLength, RequestId req) {
        return write("close", req, null,
                (t, id, ms) -> ops.publish(t, c, inode, session, writtenLength, wrote, true, contentCrc, crcLength, ms),
                MetaStore::attrsBytes, MetaStore::attrsFrom);
    }

    @Override
    public CompletableFuture<InodeAttrs> fsyncAsync(Caller c, InodeId inode, long session, long writtenLength, RequestId req) {
        return write("fsync", req, null, (t, id, ms) -> ops.publish(t, c, inode, session, writtenLength, writtenLength >= 0, false, ms),
                MetaStore::attrsBytes, MetaStore::attrsFrom);
    }

    /**
     * Records that client {@code clientId} is alive (its {@code LEAS} key, an atomic max of now:
     * no reads, so keep-alives never conflict with anything but a pruner's re-check of that
     * client). Not an idempotent-once operation: repeating it is what it is for.
     */
    @Override
    public CompletableFuture<Duration> keepAliveAsync(Caller c, long clientId) {
        long t0 = ctx.clock().nanoTime();
        Duration lease = pruner.lease();
        return timed("keep-alive", tr.runAsync(tx -> {
            tx.atomicMax(KeySpace.lease(clientId), nowMillis());
            return lease;
        }), t0);
    }

    /**
     * Ends every open session of a client known to be gone, whatever its lease (unlinked files it
     * held open are then freed; files it was writing are queued for a trim past their length).
     */
    public CompletableFuture<Integer> pruneSessionsAsync(long clientId) {
        boolean trim = gcHasReclaimer;
        return write(PRUNE, null, null, (t, id, ms) -> ops.pruneSessions(t, clientId, ms, 10_000, trim),
                n -> Bytes.le64(n), b -> (int) Bytes.readLe64(b));
    }

    /** Runs one pass of the session pruner now (after any collector pass running); completes with the sessions ended. */
    public CompletableFuture<Integer> pruneExpiredSessionsAsync() {
        return CompletableFuture.supplyAsync(this::pruneAndTrim, gcThread);
    }

    /** Files queued for a trim past their length. */
    public CompletableFuture<Integer> trimQueueLengthAsync() {
        return CompletableFuture.supplyAsync(gc::trimsQueued, workers);
    }

    @Override
    public CompletableFuture<StatFs> statfsAsync(Caller c) {
        return read("statfs", ops::statfs);
    }

    @Override
    public CompletableFuture<byte[]> getxattrAsync(Caller c, InodeId inode, String name) {
        return read("getxattr", t -> ops.getxattr(t, c, inode, name));
    }

    @Override
    public CompletableFuture<Void> setxattrAsync(Caller c, InodeId inode, String name, byte[] value, int flags, RequestId req) {
        return writeVoid("setxattr", req, (t, ms) -> ops.setxattr(t, c, inode, name, value, flags));
    }

    @Override
    public CompletableFuture<List<String>> listxattrAsync(Caller c, InodeId inode) {
        return read("listxattr", t -> ops.listxattr(t, c, inode));
    }

    @Override
    public CompletableFuture<Void> removexattrAsync(Caller c, InodeId inode, String name, RequestId req) {
        return writeVoid("removexattr", req, (t, ms) -> ops.removexattr(t, c, inode, name));
    }

    @Override
    public CompletableFuture<PolicyInfo> policyGetAsync(Caller c, InodeId dir) {
        return read("policy-get", t -> ops.policyGet(t, c, dir));
    }

    @Override
    public CompletableFuture<PolicyInfo> policySetAsync(Caller c, InodeId dir, List<String> assignments, RequestId req) {
        return policySetAsync(c, dir, assignments, req, true);
    }

    /**
     * {@link #policySetAsync(Caller, InodeId, List, RequestId)} for a caller who is an
     * {@code operator} (an admin token, or no authentication: owner or root may) or not (the
     * owner only; see {@link NamespaceOps#policySet}).
     */
    public CompletableFuture<PolicyInfo> policySetAsync(Caller c, InodeId dir, List<String> assignments, RequestId req, boolean operator) {
        CompletableFuture<Void> set = writeVoid("policy-set", req, (t, ms) -> ops.policySet(t, c, dir, assignments, operator));
        return set.thenCompose(v -> policyGetAsync(c, dir));
    }

    // ---- L2 staging ------------------------------------------------------------------------

    @Override
    public CompletableFuture<Staging> stageOpenAsync(Caller c, InodeId inode, int placementVersion, int replicas,
                                                     List<Staging.Candidate> proposed, RequestId req) {
        return write("stage-open", req, null, (t, id, ms) -> StagingOps.open(t, inode, placementVersion, replicas, proposed, ms),
                MetaStore::stagingBytes, MetaStore::stagingFrom);
    }

    @Override
    public CompletableFuture<Optional<Staging>> stagingAsync(Caller c, InodeId inode) {
        return read("staging", t -> Optional.ofNullable(t.staging(inode)));
    }

    @Override
    public CompletableFuture<Staging> stagePublishAsync(Caller c, InodeId inode, long epoch, Staging.Delta delta, RequestId req) {
        return write("stage-publish", req, null, (t, id, ms) -> StagingOps.publish(t, inode, epoch, delta, ms),
                MetaStore::stagingBytes, MetaStore::stagingFrom);
    }

    @Override
    public CompletableFuture<Staging> drainReportAsync(Caller c, InodeId inode, long epoch, long version, boolean durable, RequestId req) {
        return write("drain-report", req, null, (t, id, ms) -> StagingOps.drained(t, inode, epoch, version, durable, ms),
                MetaStore::stagingBytes, MetaStore::stagingFrom);
    }

    @Override
    public CompletableFuture<Staging> stageLostAsync(Caller c, InodeId inode, String why, RequestId req) {
        return write("stage-lost", req, null, (t, id, ms) -> StagingOps.lost(t, inode, why), MetaStore::stagingBytes,
                MetaStore::stagingFrom);
    }

    @Override
    public CompletableFuture<List<Staging>> listStagingAsync(Caller c, boolean pendingOnly, long after, int limit) {
        return read("list-staging", t -> StagingOps.list(t, pendingOnly, after, limit));
    }

    // ---- prefetched files ------------------------------------------------------------------

    @Override
    public CompletableFuture<Cached.Marked> cacheMarkAsync(Caller c, long owner, List<Integer> agents, List<Cached.File> files,
                                                          RequestId req) {
        if (c.uid() != 0) {
            return notRoot("mark prefetched files");
        }
        return write("cache-mark", req, null, (t, id, ms) -> CacheOps.mark(t, owner, agents, files), MetaStore::markedBytes,
                MetaStore::markedFrom);
    }

    @Override
    public CompletableFuture<Void> cacheUnmarkAsync(Caller c, long owner, List<InodeId> files, RequestId req) {
        if (c.uid() != 0) {
            return notRoot("unmark prefetched files");
        }
        List<Cached.File> fs = files.stream().map(f -> new Cached.File(f, 0)).toList();
        return writeVoid("cache-unmark", req, (t, ms) -> CacheOps.unmark(t, owner, fs));
    }

    @Override
    public CompletableFuture<List<Cached.Record>> cachedAsync(Caller c, List<InodeId> files) {
        List<Cached.File> fs = files.stream().map(f -> new Cached.File(f, 0)).toList();
        return read("cached", t -> CacheOps.get(t, fs));
    }

    private static <T> CompletableFuture<T> notRoot(String what) {
        return CompletableFuture.failedFuture(new StrataException(Status.NOT_PERMITTED, what + ": only root (the hooks server) may"));
    }

    private static byte[] markedBytes(Cached.Marked m) {
        ByteBuf b = Unpooled.buffer();
        try {
            b.writeInt(m.records().size());
            m.records().forEach(r -> r.encode(b));
            b.writeInt(m.stale().size());
            m.stale().forEach(id -> b.writeLong(id.value()));
            return ByteBufUtil.getBytes(b);
        } finally {
            b.release();
        }
    }

    private static Cached.Marked markedFrom(byte[] bytes) {
        ByteBuf b = Unpooled.wrappedBuffer(bytes);
        int n = Wire.readCount(b, "records", Cached.MAX_FILES, 28);
        List<Cached.Record> rs = new java.util.ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            rs.add(Cached.Record.decode(b));
        }
        int k = Wire.readCount(b, "stale", Cached.MAX_FILES, 8);
        List<InodeId> stale = new java.util.ArrayList<>(k);
        for (int i = 0; i < k; i++) {
            stale.add(InodeId.of(Wire.readLong(b, "stale")));
        }
        return new Cached.Marked(rs, stale);
    }

    // ---- checkpoint generations ------------------------------------------------------------

    @Override
    public CompletableFuture<Checkpoint.Generation> ckptCommitAsync(Caller c, InodeId gen, Checkpoint.Level level,
                                                                    List<Checkpoint.Expected> expected, RequestId req) {
        AtomicBoolean committedNow = new AtomicBoolean(); // by this call (not a retry's or another rank's answer)
        return write("ckpt-commit", req, null, (t, id, ms) -> {
            committedNow.set(false); // a retried transaction runs again
            return CheckpointOps.commit(t, c, gen, level, expected, ms, () -> committedNow.set(true));
        }, MetaStore::generationBytes, MetaStore::generationFrom).thenApply(g -> {
            if (committedNow.get()) {
                keeper.reached(null, g);
            }
            return g;
        });
    }

    @Override
    public CompletableFuture<Checkpoint.Generation> ckptStatusAsync(Caller c, InodeId gen) {
        return read("ckpt-status", t -> CheckpointOps.status(t, c, gen));
    }

    @Override
    public CompletableFuture<List<Checkpoint.Generation>> ckptListAsync(Caller c, InodeId root) {
        return read("ckpt-list", t -> CheckpointOps.list(t, c, root));
    }

    @Override
    public CompletableFuture<Checkpoint.ManifestPage> ckptManifestAsync(Caller c, InodeId gen, String after, int limit) {
        return read("ckpt-manifest", t -> CheckpointOps.manifest(t, c, gen, after, limit));
    }

    @Override
    public CompletableFuture<Checkpoint.Generation> ckptPinAsync(Caller c, InodeId gen, boolean pin, RequestId req) {
        return write("ckpt-pin", req, null, (t, id, ms) -> CheckpointOps.pin(t, c, gen, pin), MetaStore::generationBytes,
                MetaStore::generationFrom);
    }

    private static byte[] generationBytes(Checkpoint.Generation g) {
        ByteBuf b = Unpooled.buffer();
        try {
            g.encode(b);
            return ByteBufUtil.getBytes(b);
        } finally {
            b.release();
        }
    }

    private static Checkpoint.Generation generationFrom(byte[] b) {
        return Checkpoint.Generation.decode(Unpooled.wrappedBuffer(b));
    }

    private static byte[] stagingBytes(Staging s) {
        ByteBuf b = Unpooled.buffer();
        try {
            s.encode(b);
            return ByteBufUtil.getBytes(b);
        } finally {
            b.release();
        }
    }

    private static Staging stagingFrom(byte[] b) {
        return Staging.decode(Unpooled.wrappedBuffer(b));
    }

    // ---- garbage collection ----------------------------------------------------------------

    /** Runs one collector pass now (after any pass already running); completes with the number of files whose chunks were freed. */
    public CompletableFuture<Integer> collectGarbageAsync() {
        return CompletableFuture.supplyAsync(gc::runOnce, gcThread);
    }

    /** Deleted files whose chunks are not freed yet. */
    public CompletableFuture<Integer> gcQueueLengthAsync() {
        return CompletableFuture.supplyAsync(gc::queued, workers);
    }

    /** Runs one pass of the checkpoint keeper now (durability times, retention, partial generations); completes with the generations removed. */
    public CompletableFuture<Integer> keepCheckpointsAsync() {
        return CompletableFuture.supplyAsync(keeper::runOnce, gcThread);
    }

    /** A pruner pass; when it queued trims, they run at once (opens for writing of those files wait for them). */
    private int pruneAndTrim() {
        int n = pruner.runOnce();
        if (n > 0) {
            gc.trimQueued();
        }
        return n;
    }

    private void pruneQuietly() {
        try {
            pruneAndTrim();
        } catch (RuntimeException e) {
            LOG.warn("{}: session pruning pass failed: {}", ctx.name(), e.toString());
        }
    }

    private void collectQuietly() {
        try {
            gc.runOnce();
        } catch (RuntimeException e) {
            LOG.warn("{}: garbage collection pass failed: {}", ctx.name(), e.toString());
        }
        try {
            keeper.runOnce();
        } catch (RuntimeException e) {
            LOG.warn("{}: checkpoint keeper pass failed: {}", ctx.name(), e.toString());
        }
    }

    /** Stops the collector and the workers; the store stays open (its owner closes it). */
    @Override
    public void close() {
        if (gcTask != null) {
            gcTask.cancel(false);
        }
        pruneTask.cancel(false);
        gcThread.shutdownNow();
        workers.shutdown();
        try {
            if (!workers.awaitTermination(10, TimeUnit.SECONDS)) {
                workers.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            workers.shutdownNow();
        }
    }
}
