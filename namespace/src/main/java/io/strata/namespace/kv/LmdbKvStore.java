package io.strata.namespace.kv;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.lmdbjava.ByteArrayProxy;
import org.lmdbjava.Cursor;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.GetOp;
import org.lmdbjava.Txn;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded backend: one LMDB environment, one database, keys in LMDB's native (memcmp)
 * order.
 *
 * <p><b>Design.</b> LMDB gives MVCC snapshots to any number of readers and admits one writer.
 * A transaction reads from an LMDB read transaction (its snapshot) and buffers its writes in
 * memory ({@link WriteBuffer}); every read outside {@link KvTransaction#snapshot()} is recorded
 * ({@link ReadSet}). Commit queues the buffer and takes the commit lock; whichever committing
 * thread holds the lock is the <i>committer</i> for every transaction queued at that moment
 * (flat combining: no hand-off to a separate thread when commits do not contend, one batch when
 * they do). The committer validates optimistically, as FoundationDB's resolvers do: a
 * transaction conflicts when any transaction that committed after its snapshot wrote a key or
 * range it read. It keeps the write sets of recent commits for this ({@link #LOG_RETENTION}); a
 * transaction whose snapshot is older than the log is refused as a conflict (too old) and
 * retried. Valid transactions of a batch are applied in one LMDB write transaction (each in a
 * nested transaction, so one failing write does not sink the others) with one fsync: group
 * commit. The order the committer accepts them in is the serial order.
 * {@link KvTransaction#commitAsync()} queues the same way but does not wait: a thread that is
 * not the committer goes back to other work and the future completes after the batch's sync, so
 * a batch holds every transaction queued during the previous sync, not one per waiting thread.
 * The queue is bounded ({@link #MAX_QUEUED}): when it is full, committing threads wait. Conflicts are therefore
 * real (no lost update, no write skew), detected without locking readers; writers are
 * serialised only for the apply itself.
 *
 * <p>A reader's snapshot version is read <i>before</i> its LMDB read transaction opens, so the
 * snapshot holds at least every commit up to that version; a commit that lands in between is
 * validated against too, which can only cause a spurious, retried conflict, never a missed one.
 *
 * <p>Durability: with {@code sync} every group commit is fsync'd before any of its transactions
 * returns; without it (MDB_NOSYNC) a crash may lose the last commits but LMDB stays consistent.
 */
public final class LmdbKvStore implements KvStore {
    private static final Logger LOG = LoggerFactory.getLogger(LmdbKvStore.class);
    /** Keep write sets of commits this long (and at most {@link #LOG_MAX_ENTRIES} of them). */
    static final Duration LOG_RETENTION = Duration.ofSeconds(10);
    static final int LOG_MAX_ENTRIES = 200_000;
    private static final int MAX_BATCH = 512;
    /**
     * Most commits queued at once: a caller queuing one more waits until the committer has taken
     * a batch (back-pressure: callers slow down instead of piling up work nobody can finish).
     */
    static final int MAX_QUEUED = 4 * MAX_BATCH;

    /** Settings of the embedded store. */
    public record Options(long mapSizeBytes, boolean sync, int maxReaders) {
        public static final Options DEFAULTS = new Options(16L << 30, true, 1024);

        public Options {
            if (mapSizeBytes < (1 << 20)) {
                throw new IllegalArgumentException("LMDB map size must be at least 1MiB, got " + mapSizeBytes);
            }
            if (maxReaders < 8) {
                throw new IllegalArgumentException("LMDB max readers must be at least 8, got " + maxReaders);
            }
        }

        public Options withSync(boolean s) {
            return new Options(mapSizeBytes, s, maxReaders);
        }
    }

    private final Path dir;
    private final Env<byte[]> env;
    private final Dbi<byte[]> db;
    private final LinkedBlockingQueue<Pending> queue = new LinkedBlockingQueue<>(MAX_QUEUED);
    private final ArrayDeque<Committed> log = new ArrayDeque<>(); // under commitLock
    private final ReentrantLock commitLock = new ReentrantLock();
    private final AtomicInteger open = new AtomicInteger();
    private final DistributionSummary batchSizes;
    private volatile long committedVersion;
    private volatile long logFloor; // commits at or below this version are no longer in the log
    private volatile boolean closed;

    private LmdbKvStore(Path dir, Options options, MeterRegistry meters) {
        this.dir = dir;
        EnvFlags[] flags = options.sync() ? new EnvFlags[] {EnvFlags.MDB_NOTLS}
                : new EnvFlags[] {EnvFlags.MDB_NOTLS, EnvFlags.MDB_NOSYNC};
        this.env = Env.create(ByteArrayProxy.PROXY_BA).setMapSize(options.mapSizeBytes()).setMaxDbs(1)
                .setMaxReaders(options.maxReaders()).open(dir.toFile(), PrivateFiles.FILE_MODE, flags);
        this.db = env.openDbi("strata", DbiFlags.MDB_CREATE);
        this.batchSizes = DistributionSummary.builder("strata.kv.commit.batch").tag("store", "lmdb")
                .description("transactions applied per LMDB write transaction").register(meters);
    }

    /** Opens (creating if needed) the store in directory {@code dir}: 0700, its files 0600 ({@link PrivateFiles}). */
    public static LmdbKvStore open(Path dir, Options options, MeterRegistry meters) {
        try {
            PrivateFiles.createDirectories(dir);
        } catch (IOException e) {
            throw StrataException.wrap(e);
        }
        try {
            return new LmdbKvStore(dir, options, meters == null ? new SimpleMeterRegistry() : meters);
        } catch (RuntimeException e) {
            throw new StrataException(Status.IO_ERROR, "cannot open LMDB store in " + dir + ": " + e.getMessage(), e);
        }
    }

    public static LmdbKvStore open(Path dir) {
        return open(dir, Options.DEFAULTS, null);
    }

    @Override
    public String name() {
        return "lmdb";
    }

    /** A read is a few page lookups in this process's memory map (a cold page costs a disk read). */
    @Override
    public boolean readsInline() {
        return true;
    }

    public Path dir() {
        return dir;
    }

    @Override
    public KvTransaction begin() {
        if (closed) {
            throw new StrataException(Status.SHUTTING_DOWN, "LMDB store " + dir + " is closed");
        }
        open.incrementAndGet();
        return new LmdbTxn();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        commitLock.lock();
        try {
            failAll(drain(), new StrataException(Status.SHUTTING_DOWN, "LMDB store closed"));
        } finally {
            commitLock.unlock();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (open.get() > 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            Thread.yield();
        }
        if (open.get() > 0) {
            LOG.warn("closing LMDB store {} with {} transactions still open", dir, open.get());
        }
        env.close();
    }

    // ---- commit path -----------------------------------------------------------------------

    private record Pending(long snapshotVersion, ReadSet reads, WriteBuffer writes, CompletableFuture<Long> done) {
    }

    private record Committed(long version, long nanoTime, WriteBuffer.WriteSet writes) {
    }

    /** Commits the queue, in batches, until it is empty. The caller holds commitLock. */
    private void drainQueue() {
        while (!queue.isEmpty()) {
            List<Pending> batch = new ArrayList<>();
            queue.drainTo(batch, MAX_BATCH);
            if (closed) {
                failAll(batch, new StrataException(Status.SHUTTING_DOWN, "LMDB store closed"));
                continue;
            }
            try {
                commitBatch(batch);
            } catch (RuntimeException e) {
                LOG.error("LMDB commit of {} transactions failed", batch.size(), e);
                failAll(batch, StrataException.wrap(e));
            }
        }
    }

    /**
     * Queues {@code p}, commits the queue if nobody else is, and returns {@code p}'s outcome,
     * complete or not. No transaction is stranded: a thread that fails to take the lock does so
     * because a holder has it, and every holder looks at the queue again <i>after</i> letting go
     * (taking the lock again when it is not empty), so it sees anything queued while it held the
     * lock. A thread that finds the lock taken returns at once ({@link KvTransaction#commitAsync})
     * and does other work; the holder commits its transaction in its next batch and completes
     * the future after that batch's sync.
     */
    private CompletableFuture<Long> enqueue(Pending p) {
        if (!queue.offer(p)) {
            try {
                queue.put(p); // full: wait for the committer to take a batch
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                p.done.completeExceptionally(new StrataException(Status.CANCELLED, "interrupted while queuing a commit"));
                return p.done;
            }
        }
        if (closed) {
            failAll(drain(), new StrataException(Status.SHUTTING_DOWN, "LMDB store closed"));
        }
        while (!queue.isEmpty() && commitLock.tryLock()) {
            try {
                drainQueue();
            } finally {
                commitLock.unlock();
            }
        }
        return p.done;
    }

    private void commitBatch(List<Pending> batch) {
        List<Pending> accepted = new ArrayList<>();
        try (Txn<byte[]> w = env.txnWrite()) {
            for (Pending p : batch) {
                StrataException conflict = validate(p, accepted);
                if (conflict != null) {
                    p.done.completeExceptionally(conflict);
                    continue;
                }
                try (Txn<byte[]> nested = env.txn(w)) {
                    apply(nested, p.writes);
                    nested.commit();
                    accepted.add(p);
                } catch (RuntimeException e) {
                    p.done.completeExceptionally(lmdbError(e));
                }
            }
            if (accepted.isEmpty()) {
                return; // closing w aborts an empty transaction
            }
            w.commit();
        } catch (RuntimeException e) {
            failAll(accepted, lmdbError(e));
            return;
        }
        batchSizes.record(accepted.size());
        long v = committedVersion;
        long now = System.nanoTime();
        List<Long> versions = new ArrayList<>();
        for (Pending p : accepted) {
            v++;
            log.addLast(new Committed(v, now, p.writes.writeSet()));
            versions.add(v);
        }
        committedVersion = v;
        trimLog(now);
        for (int i = 0; i < accepted.size(); i++) {
            accepted.get(i).done.complete(versions.get(i));
        }
    }

    /** Null when {@code p} may commit after everything in the log and {@code accepted}. */
    private StrataException validate(Pending p, List<Pending> accepted) {
        if (p.reads.isEmpty()) {
            return null;
        }
        if (p.snapshotVersion < logFloor) {
            return new StrataException(Status.TXN_CONFLICT, "transaction too old (snapshot " + p.snapshotVersion
                    + ", conflict history starts after " + logFloor + ")");
        }
        for (Iterator<Committed> it = log.descendingIterator(); it.hasNext(); ) {
            Committed c = it.next();
            if (c.version <= p.snapshotVersion) {
                break;
            }
            if (p.reads.intersects(c.writes)) {
                return new StrataException(Status.TXN_CONFLICT, "conflict with commit " + c.version
                        + " after snapshot " + p.snapshotVersion);
            }
        }
        for (Pending a : accepted) {
            if (p.reads.intersects(a.writes.writeSet())) {
                return new StrataException(Status.TXN_CONFLICT, "conflict with a transaction committed in the same batch");
            }
        }
        return null;
    }

    private void trimLog(long now) {
        long horizon = now - LOG_RETENTION.toNanos();
        while (!log.isEmpty() && (log.size() > LOG_MAX_ENTRIES || log.peekFirst().nanoTime < horizon)) {
            logFloor = log.pollFirst().version;
        }
    }

    private void apply(Txn<byte[]> txn, WriteBuffer writes) {
        for (byte[][] r : writes.clearedRanges()) {
            try (Cursor<byte[]> c = db.openCursor(txn)) {
                boolean found = c.get(r[0], GetOp.MDB_SET_RANGE);
                while (found && Bytes.compare(c.key(), r[1]) < 0) {
                    c.delete();
                    found = c.get(r[0], GetOp.MDB_SET_RANGE);
                }
            }
        }
        for (Map.Entry<byte[], WriteBuffer.Entry> e : writes.all()) {
            WriteBuffer.Entry w = e.getValue();
            byte[] v = w.definite ? w.value : w.resolve(db.get(txn, e.getKey()));
            if (v == null) {
                db.delete(txn, e.getKey());
            } else {
                db.put(txn, e.getKey(), v);
            }
        }
    }

    private static StrataException lmdbError(RuntimeException e) {
        if (e instanceof StrataException se) {
            return se;
        }
        if (e instanceof Env.MapFullException || e instanceof Dbi.DbFullException) {
            return new StrataException(Status.NO_SPACE, "LMDB map is full: raise [meta.lmdb] map-size", e);
        }
        return new StrataException(Status.IO_ERROR, "LMDB write failed: " + e, e);
    }

    private List<Pending> drain() {
        List<Pending> rest = new ArrayList<>();
        queue.drainTo(rest);
        return rest;
    }

    private static void failAll(List<Pending> ps, StrataException e) {
        for (Pending p : ps) {
            p.done.completeExceptionally(e);
        }
    }

    // ---- transactions ----------------------------------------------------------------------

    private final class LmdbTxn implements KvTransaction {
        private final WriteBuffer writes = new WriteBuffer();
        private final ReadSet reads = new ReadSet();
        private Txn<byte[]> snapshotTxn;
        private long snapshotVersion;
        private boolean done;
        private final KvReader snapshotView = new KvReader() {
            @Override
            public byte[] get(byte[] key) {
                return read(key, false);
            }

            @Override
            public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
                return range(begin, end, limit, reverse, false);
            }
        };

        private Txn<byte[]> txn() {
            if (done) {
                throw new StrataException(Status.INTERNAL, "transaction already ended");
            }
            if (snapshotTxn == null) {
                snapshotVersion = committedVersion; // before the read txn: see the class comment
                try {
                    snapshotTxn = env.txnRead();
                } catch (RuntimeException e) {
                    throw new StrataException(Status.IO_ERROR, "cannot open an LMDB read transaction: " + e, e);
                }
            }
            return snapshotTxn;
        }

        private void writable() {
            if (done) {
                throw new StrataException(Status.INTERNAL, "transaction already ended");
            }
        }

        @Override
        public KvReader snapshot() {
            return snapshotView;
        }

        @Override
        public byte[] get(byte[] key) {
            return read(key, true);
        }

        @Override
        public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
            return range(begin, end, limit, reverse, true);
        }

        private byte[] read(byte[] key, boolean conflict) {
            Bytes.checkKey(key);
            Txn<byte[]> t = txn();
            if (conflict) {
                reads.addKey(key);
            }
            WriteBuffer.Entry e = writes.entry(key);
            if (e != null) {
                return e.definite ? copy(e.value) : e.resolve(stored(t, key));
            }
            return writes.inClearedRange(key) ? null : stored(t, key);
        }

        private byte[] stored(Txn<byte[]> t, byte[] key) {
            return db.get(t, key);
        }

        private List<KeyValue> range(byte[] begin, byte[] end, int limit, boolean reverse, boolean conflict) {
            Bytes.checkRange(begin, end);
            if (limit < 0) {
                throw new StrataException(Status.INVALID_ARGUMENT, "negative range limit " + limit);
            }
            Txn<byte[]> t = txn();
            List<KeyValue> out = new ArrayList<>();
            if (Bytes.compare(begin, end) >= 0) {
                return out;
            }
            int max = limit == 0 ? Integer.MAX_VALUE : limit;
            Iterator<Map.Entry<byte[], WriteBuffer.Entry>> mine = writes.entries(begin, end, reverse).entrySet().iterator();
            Map.Entry<byte[], WriteBuffer.Entry> m = mine.hasNext() ? mine.next() : null;
            try (Cursor<byte[]> c = db.openCursor(t)) {
                boolean has = position(c, begin, end, reverse);
                while (out.size() < max && (has || m != null)) {
                    byte[] dk = has ? c.key() : null;
                    int cmp = dk == null ? 1 : m == null ? -1 : Bytes.compare(dk, m.getKey());
                    if (reverse && dk != null && m != null) {
                        cmp = -cmp;
                    }
                    if (cmp < 0) { // the stored key comes first
                        if (!writes.inClearedRange(dk)) {
                            out.add(new KeyValue(dk, c.val()));
                        }
                        has = step(c, begin, end, reverse);
                    } else {
                        byte[] stored = null;
                        if (cmp == 0) {
                            stored = c.val();
                            has = step(c, begin, end, reverse);
                        } else if (!m.getValue().definite) {
                            stored = db.get(t, m.getKey());
                        }
                        byte[] v = m.getValue().resolve(stored);
                        if (v != null) {
                            out.add(new KeyValue(m.getKey().clone(), copy(v)));
                        }
                        m = mine.hasNext() ? mine.next() : null;
                    }
                }
            }
            if (conflict) {
                if (out.size() >= max) {
                    byte[] last = out.get(out.size() - 1).key();
                    if (reverse) {
                        reads.addRange(last, end);
                    } else {
                        reads.addRange(begin, Bytes.keyAfter(last));
                    }
                } else {
                    reads.addRange(begin, end);
                }
            }
            return out;
        }

        /** Puts the cursor on the first key of the range in scan order; false when empty. */
        private boolean position(Cursor<byte[]> c, byte[] begin, byte[] end, boolean reverse) {
            if (!reverse) {
                return c.get(begin, GetOp.MDB_SET_RANGE) && Bytes.compare(c.key(), end) < 0;
            }
            boolean found = c.get(end, GetOp.MDB_SET_RANGE) ? c.prev() : c.last();
            return found && Bytes.compare(c.key(), begin) >= 0;
        }

        private boolean step(Cursor<byte[]> c, byte[] begin, byte[] end, boolean reverse) {
            if (reverse) {
                return c.prev() && Bytes.compare(c.key(), begin) >= 0;
            }
            return c.next() && Bytes.compare(c.key(), end) < 0;
        }

        @Override
        public void set(byte[] key, byte[] value) {
            writable();
            Bytes.checkKey(key);
            Bytes.checkValue(value);
            writes.set(key, value);
        }

        @Override
        public void clear(byte[] key) {
            writable();
            Bytes.checkKey(key);
            writes.clear(key);
        }

        @Override
        public void clearRange(byte[] begin, byte[] end) {
            writable();
            Bytes.checkRange(begin, end);
            writes.clearRange(begin, end);
        }

        @Override
        public void atomicAdd(byte[] key, long delta) {
            writable();
            Bytes.checkKey(key);
            writes.atomic(key, new WriteBuffer.AtomicOp(false, delta));
        }

        @Override
        public void atomicMax(byte[] key, long value) {
            writable();
            Bytes.checkKey(key);
            writes.atomic(key, new WriteBuffer.AtomicOp(true, value));
        }

        @Override
        public void addReadConflictKey(byte[] key) {
            writable();
            txn(); // fixes the snapshot version the conflict is checked from
            reads.addKey(key);
        }

        @Override
        public void commit() {
            writable();
            closeSnapshot();
            done = true;
            if (writes.isEmpty()) {
                return; // a read-only transaction is serializable at its snapshot
            }
            Futures.join(enqueue(new Pending(snapshotVersion, reads, writes, new CompletableFuture<>())), Duration.ofMinutes(2));
        }

        @Override
        public CompletableFuture<Void> commitAsync() {
            writable();
            closeSnapshot();
            done = true;
            if (writes.isEmpty()) {
                return CompletableFuture.completedFuture(null);
            }
            return enqueue(new Pending(snapshotVersion, reads, writes, new CompletableFuture<>())).thenApply(v -> null);
        }

        @Override
        public void close() {
            closeSnapshot();
            done = true;
            if (!released) {
                released = true;
                open.decrementAndGet();
            }
        }

        private boolean released;

        private void closeSnapshot() {
            if (snapshotTxn != null) {
                snapshotTxn.close();
                snapshotTxn = null;
            }
        }
    }

    private static byte[] copy(byte[] b) {
        return b == null ? null : b.clone();
    }
}
