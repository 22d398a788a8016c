package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.ThreadExecutorMap;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.FaultPoint;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.zip.CRC32C;
import org.lmdbjava.CursorIterable;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.Txn;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NVMe tier: one file per block under {@code blocks/<shard>/}, an LMDB index under
 * {@code index/} (key: {@link BlockKey}, value: length, CRC32C, pin, TTL), and an in-memory copy
 * of the index that serves lookups: a segmented LRU (blocks enter a probation segment and move to
 * a protected segment, at most 80% of the capacity, when read again), a separate set of pinned
 * blocks, and a {@link FrequencySketch} for admission.
 *
 * <p><b>Crash safety.</b> A block file is written under a temporary name, fdatasync'ed (when
 * {@code fsync}), renamed into place and only then put in the index; an entry is deleted from the
 * index before its file is unlinked. Every read checks the file's length and CRC32C against the
 * index, so whatever a crash leaves (a torn file, a file the index does not name, an index entry
 * whose file vanished or holds other bytes) is never served: a bad entry is dropped and counted,
 * and the caller fetches the block from the tier below. Files the index does not name are deleted
 * at open. The index commits without fsync (a process crash loses nothing: the pages are in the
 * kernel); it is flushed every sweep and, durably, before any invalidation returns (so that a
 * write to the tier below never happens while an index entry for the old bytes could come back
 * after a power loss). An index LMDB cannot open is wiped: it is a cache.
 *
 * <p><b>Admission.</b> While there is room (capacity, and the disk's free space above
 * {@code min-free}) every offered block is written. When there is not, victims are taken from the
 * cold end of probation first, then of the protected segment, and the candidate must be more
 * popular (frequency sketch, fed by every access to L1, memory hits included) than each victim,
 * else it is refused: a one-time scan only ever competes with other blocks read once, and cannot
 * push out blocks that are read again and again (even once the sketch has aged). Pinned blocks are never evicted for room (only TTL,
 * invalidation and drop remove them) and skip the popularity test.
 *
 * <p><b>Threads.</b> All index writes, block file writes and unlinks run on one writer thread
 * owned by the store (LMDB has one writer anyway), so their order is the order they were asked
 * in; block reads run on the given executor. Lookups take the in-memory index's lock briefly.
 */
final class NvmeStore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NvmeStore.class);

    /** After half of a block file is written. */
    static final FaultPoint BLOCK_WRITE = FaultPoint.of("l1.nvme.block-write");
    /** Before a block file is fdatasync'ed and renamed into place. */
    static final FaultPoint BLOCK_SYNC = FaultPoint.of("l1.nvme.block-sync");
    /** Before the index transaction that names newly written blocks commits. */
    static final FaultPoint INDEX_COMMIT = FaultPoint.of("l1.nvme.index-commit");
    /** Before a block file is read. */
    static final FaultPoint READ = FaultPoint.of("l1.nvme.read");

    /** 2: the index value also holds the CRC32C of each sub-block (1 had the whole block's only). */
    private static final int FORMAT = 2;
    /** Most sub-blocks per block: a block's CRC32C is also kept per sub-block so that a small read checks only what it reads. */
    static final int MAX_SUBS = 16;
    private static final int VALUE_BYTES = 4 + 4 + 1 + 8 + 1 + 4 * MAX_SUBS;
    private static final int BATCH = 64;

    private static final int PROBATION = 0;
    private static final int PROTECTED = 1;
    private static final int PINNED = 2;

    /** One indexed block. {@code pinned}, {@code ttlNanos}, {@code lastAccess} and {@code segment} change under the index lock. */
    static final class Entry {
        final BlockKey key;
        final int length;
        final int crc;
        /** CRC32C of each sub-block ({@link NvmeStore#subBlock} bytes; the last one may be shorter). */
        final int[] subCrcs;
        boolean pinned;
        long ttlNanos;
        long lastAccess;
        int segment;

        Entry(BlockKey key, int length, int crc, int[] subCrcs, boolean pinned, long ttlNanos, long lastAccess) {
            this.key = key;
            this.length = length;
            this.crc = crc;
            this.subCrcs = subCrcs;
            this.pinned = pinned;
            this.ttlNanos = ttlNanos;
            this.lastAccess = lastAccess;
        }

        long footprint() {
            return NvmeStore.footprint(length);
        }
    }

    /** A block waiting to be written: bytes owned by the offer until written or dropped. */
    private record Offer(BlockKey key, ByteBuf data, Epochs.Stamp stamp, boolean pinned, long ttlNanos) {
    }

    private final L1Config.Nvme config;
    private final int blockSize;
    private final NodeContext ctx;
    private final L1Metrics metrics;
    private final Epochs epochs;
    private final Executor readExecutor;
    private final LongSupplier freeSpace;
    private final Path blocksDir;
    private final FileChannel lockFile;
    private final FileLock lock;
    private final Env<ByteBuffer> env;
    private final Dbi<ByteBuffer> blocks;
    private final Dbi<ByteBuffer> meta;
    private final ExecutorService writer;
    private final FrequencySketch sketch;
    private final ByteBuffer wkey = ByteBuffer.allocateDirect(BlockKey.BYTES);
    private final ByteBuffer wval = ByteBuffer.allocateDirect(VALUE_BYTES);

    // the in-memory index, guarded by `this`
    private final HashMap<BlockKey, Entry> all = new HashMap<>();
    @SuppressWarnings("unchecked")
    private final LinkedHashMap<BlockKey, Entry>[] segments = new LinkedHashMap[]{
            new LinkedHashMap<>(1024, 0.75f, true), new LinkedHashMap<>(1024, 0.75f, true), new LinkedHashMap<>(16)};
    private long usedBytes;
    private long pinnedBytes;
    private long protectedBytes;
    private int ttlEntries;

    private final ConcurrentLinkedQueue<Offer> offers = new ConcurrentLinkedQueue<>();
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private volatile boolean closed;

    /**
     * Opens (creating when new) the tier in {@code config.dir()}. {@code freeSpace} reports the
     * disk's usable bytes (null: ask the file system); block reads run on {@code readExecutor}.
     */
    NvmeStore(L1Config.Nvme config, int blockSize, NodeContext ctx, L1Metrics metrics, Epochs epochs,
              Executor readExecutor, LongSupplier freeSpace) {
        this.config = config;
        this.blockSize = blockSize;
        this.ctx = ctx;
        this.metrics = metrics;
        this.epochs = epochs;
        this.readExecutor = readExecutor;
        this.sketch = new FrequencySketch(Math.max(64, config.capacity().bytes() / blockSize));
        Path dir = config.dir();
        this.blocksDir = dir.resolve("blocks");
        try {
            Files.createDirectories(dir);
            this.lockFile = FileChannel.open(dir.resolve("l1.lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new StrataException(Status.IO_ERROR, "L1: cannot use NVMe cache directory " + dir + ": " + e.getMessage(), e);
        }
        FileLock l;
        try {
            l = lockFile.tryLock();
        } catch (OverlappingFileLockException | IOException e) {
            l = null;
        }
        if (l == null) {
            closeQuietly(lockFile);
            throw new StrataException(Status.INVALID_ARGUMENT, "L1: NVMe cache directory " + dir + " is in use by another cache");
        }
        this.lock = l;
        try {
            FileStore store = Files.getFileStore(dir);
            this.freeSpace = freeSpace != null ? freeSpace : () -> usable(store);
            Env<ByteBuffer> e;
            try {
                e = openEnv(dir.resolve("index"));
            } catch (RuntimeException corrupt) {
                LOG.warn("L1: the NVMe cache index in {} cannot be opened ({}); starting with an empty cache", dir, corrupt.toString());
                wipe(dir.resolve("index"));
                wipe(blocksDir);
                e = openEnv(dir.resolve("index"));
            }
            this.env = e;
            this.blocks = env.openDbi("blocks", DbiFlags.MDB_CREATE);
            this.meta = env.openDbi("meta", DbiFlags.MDB_CREATE);
            load();
            // after load(): a cache of another block size or format is wiped there, shard directories included
            for (int i = 0; i < 256; i++) {
                Files.createDirectories(blocksDir.resolve(String.format("%02x", i)));
            }
        } catch (IOException | RuntimeException e) {
            release();
            if (e instanceof StrataException se) {
                throw se;
            }
            throw new StrataException(Status.IO_ERROR, "L1: cannot open the NVMe cache in " + dir + ": " + e.getMessage(), e);
        }
        this.writer = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, ctx.name() + "-l1-nvme-writer");
            t.setDaemon(true);
            return t;
        });
        writer.execute(this::removeOrphans);
        writer.execute(() -> enforceLimits(List.of()));
    }

    private Env<ByteBuffer> openEnv(Path p) throws IOException {
        Files.createDirectories(p);
        return Env.create().setMapSize(config.indexMapSize().bytes()).setMaxDbs(2).setMaxReaders(256)
                .open(p.toFile(), EnvFlags.MDB_NOSYNC, EnvFlags.MDB_NOTLS);
    }

    private static long usable(FileStore store) {
        try {
            return store.getUsableSpace();
        } catch (IOException e) {
            return 0; // unknown: behave as if the disk were full
        }
    }

    /** Bytes a block of {@code length} bytes takes on disk: whole 4 KiB pages plus an allowance for its inode and index entry. */
    static long footprint(int length) {
        return ((length + 4095L) & ~4095L) + 256;
    }

    /** Reads the index into memory; a different block size or format empties the cache. */
    private void load() throws IOException {
        boolean compatible;
        try (Txn<ByteBuffer> txn = env.txnRead()) {
            ByteBuffer v = meta.get(txn, metaKey("layout"));
            compatible = v == null || (v.remaining() == 8 && v.getInt(0) == FORMAT && v.getInt(4) == blockSize);
        }
        if (!compatible) {
            LOG.info("L1: NVMe cache in {} was written with another block size or format; emptying it", config.dir());
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                blocks.drop(txn);
                txn.commit();
            }
            wipe(blocksDir);
        }
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            ByteBuffer v = ByteBuffer.allocateDirect(8).putInt(FORMAT).putInt(blockSize).flip();
            meta.put(txn, metaKey("layout"), v);
            txn.commit();
        }
        env.sync(true);
        long now = ctx.clock().nanoTime();
        List<BlockKey> stale = new ArrayList<>();
        try (Txn<ByteBuffer> txn = env.txnRead(); CursorIterable<ByteBuffer> it = blocks.iterate(txn)) {
            for (CursorIterable.KeyVal<ByteBuffer> kv : it) {
                BlockKey k = BlockKey.decode(kv.key());
                ByteBuffer v = kv.val();
                int len = v.remaining() >= 18 ? v.getInt(0) : -1;
                int n = len >= 0 ? v.get(17) & 0xFF : -1;
                if (len < 0 || n != subCount(len) || v.remaining() < 18 + 4 * n) {
                    stale.add(k); // a damaged value, or sub-blocks cut differently: not trusted, dropped
                    continue;
                }
                int crc = v.getInt(4);
                boolean pin = v.get(8) != 0;
                long ttlMillis = v.getLong(9);
                int[] subs = new int[n];
                for (int i = 0; i < n; i++) {
                    subs[i] = v.getInt(18 + 4 * i);
                }
                add(new Entry(k, len, crc, subs, pin, ttlMillis * 1_000_000L, now));
            }
        }
        if (!stale.isEmpty()) {
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                for (BlockKey k : stale) {
                    k.encode(wkey);
                    blocks.delete(txn, wkey);
                }
                txn.commit();
            }
            for (BlockKey k : stale) {
                Files.deleteIfExists(path(k));
            }
            LOG.info("L1: dropped {} NVMe blocks indexed without usable sub-block checksums", stale.size());
        }
        LOG.info("{}: L1 NVMe cache open at {}: {} blocks, {} bytes", ctx.name(), config.dir(), all.size(), usedBytes);
    }

    private static ByteBuffer metaKey(String k) {
        byte[] b = k.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        return ByteBuffer.allocateDirect(b.length).put(b).flip();
    }

    // ---- the in-memory index (callers hold `this`) ----

    /** Indexes a new entry: pinned, or on probation. */
    private void add(Entry e) {
        all.put(e.key, e);
        place(e, e.pinned ? PINNED : PROBATION);
        usedBytes += e.footprint();
        if (e.ttlNanos > 0) {
            ttlEntries++;
        }
    }

    private void place(Entry e, int segment) {
        e.segment = segment;
        segments[segment].put(e.key, e);
        if (segment == PINNED) {
            pinnedBytes += e.footprint();
        } else if (segment == PROTECTED) {
            protectedBytes += e.footprint();
        }
    }

    private void unplace(Entry e) {
        segments[e.segment].remove(e.key);
        if (e.segment == PINNED) {
            pinnedBytes -= e.footprint();
        } else if (e.segment == PROTECTED) {
            protectedBytes -= e.footprint();
        }
    }

    /** The indexed entry (no access recorded). */
    private Entry current(BlockKey k) {
        return all.get(k);
    }

    /** An access: probation moves to protected (demoting protected's coldest past 80% of the capacity); otherwise most recent. */
    private void touch(Entry e) {
        if (e.segment == PROBATION) {
            unplace(e);
            place(e, PROTECTED);
            long max = config.capacity().bytes() * 4 / 5;
            Iterator<Entry> it = segments[PROTECTED].values().iterator();
            while (protectedBytes > max && it.hasNext()) {
                Entry cold = it.next();
                if (cold == e) {
                    break;
                }
                it.remove();
                protectedBytes -= cold.footprint();
                cold.segment = PROBATION;
                segments[PROBATION].put(cold.key, cold);
            }
        } else {
            segments[e.segment].get(e.key); // most recently used
        }
    }

    private boolean removeEntry(Entry e) {
        if (all.get(e.key) != e) {
            return false;
        }
        all.remove(e.key);
        unplace(e);
        usedBytes -= e.footprint();
        if (e.ttlNanos > 0) {
            ttlEntries--;
        }
        return true;
    }

    /** Unpinned entries, coldest first: probation, then protected. */
    private Iterator<Entry> victims() {
        Iterator<Entry> a = segments[PROBATION].values().iterator();
        Iterator<Entry> b = segments[PROTECTED].values().iterator();
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return a.hasNext() || b.hasNext();
            }

            @Override
            public Entry next() {
                return a.hasNext() ? a.next() : b.next();
            }
        };
    }

    // ---- lookups ----

    /**
     * The block's entry (an access: recency, popularity), or null. A changed pin or TTL of the
     * file's policy is recorded in the entry.
     */
    synchronized Entry lookup(BlockKey k, boolean pin, long ttlNanos) {
        sketch.increment(k.mix());
        Entry e = current(k);
        if (e != null) {
            long now = ctx.clock().nanoTime();
            if (e.ttlNanos > 0 && now - e.lastAccess >= e.ttlNanos) {
                removeEntry(e); // idle past its TTL: gone, as if the sweep had run
                metrics.eviction(L1Metrics.Tier.NVME, "expired", 1);
                deleteAsync(List.of(e), false);
                return null;
            }
            e.lastAccess = now;
            if (e.pinned != pin || e.ttlNanos != ttlNanos) {
                retag(e, pin, ttlNanos);
            }
            touch(e);
        }
        return e;
    }

    /** An access served by the memory tier: keeps the NVMe copy's recency and popularity current. */
    void recordAccess(BlockKey k, boolean pin, long ttlNanos) {
        lookup(k, pin, ttlNanos);
    }

    private void retag(Entry e, boolean pin, long ttlNanos) {
        if (pin && !e.pinned && pinnedBytes + e.footprint() > config.capacity().bytes()) {
            pin = false; // pinned blocks never exceed the capacity
        }
        if (e.pinned != pin) {
            unplace(e);
            e.pinned = pin;
            place(e, pin ? PINNED : PROBATION);
            ttlEntries += (ttlNanos > 0 ? 1 : 0) - (e.ttlNanos > 0 ? 1 : 0);
            e.ttlNanos = ttlNanos;
        } else {
            ttlEntries += (ttlNanos > 0 ? 1 : 0) - (e.ttlNanos > 0 ? 1 : 0);
            e.ttlNanos = ttlNanos;
        }
        executeQuietly(() -> {
            synchronized (this) {
                if (current(e.key) != e) {
                    return;
                }
            }
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                putEntry(txn, e);
                txn.commit();
            } catch (RuntimeException ex) {
                LOG.warn("L1: cannot record the pin/TTL of {}: {}", e.key, ex.toString());
            }
        });
    }

    /**
     * Reads an entry's block, checking its length and CRC32C: on the calling thread when
     * {@code read-on-caller} and it is not an event loop, else on the read executor. Completes
     * with an <b>owned</b> buffer, or null when the block is unusable; an unusable block that is still indexed is
     * dropped and counted in {@code strata.l1.corruptions} (never returned).
     */
    CompletableFuture<ByteBuf> read(Entry e) {
        return onReadThread(() -> readChecked(e, 0, e.length, buf -> crc(buf) == e.crc));
    }

    /**
     * Reads [{@code from}, {@code from + length}) of an entry's block (cut at the block's end):
     * only the sub-blocks that cover it, each checked against its CRC32C, so a 4 KiB read of a
     * 1 MiB block reads and checks 64 KiB, not the block. Same threads and outcomes as
     * {@link #read(Entry)}: an owned buffer, or null when the block is unusable (dropped, counted).
     */
    CompletableFuture<ByteBuf> readRange(Entry e, int from, int length) {
        return onReadThread(() -> {
            int end = Math.min(e.length, from + length);
            if (end <= from) {
                return Unpooled.EMPTY_BUFFER;
            }
            int sub = subBlock(blockSize);
            int s0 = from / sub;
            int s1 = (end - 1) / sub;
            long start = (long) s0 * sub;
            int n = (int) (Math.min(e.length, (long) (s1 + 1) * sub) - start);
            ByteBuf buf = readChecked(e, start, n, b -> {
                for (int i = s0; i <= s1; i++) {
                    int at = (i - s0) * sub;
                    if (crc(b.slice(at, Math.min(sub, n - at))) != e.subCrcs[i]) {
                        return false;
                    }
                }
                return true;
            });
            if (buf == null) {
                return null;
            }
            ByteBuf out = buf.retainedSlice((int) (from - start), end - from);
            buf.release();
            return out;
        });
    }

    /** Runs a block read on the caller's thread ({@code read-on-caller}, not an event loop) or on the read executor. */
    private CompletableFuture<ByteBuf> onReadThread(java.util.function.Supplier<ByteBuf> task) {
        if (config.readOnCaller() && ThreadExecutorMap.currentExecutor() == null) {
            return CompletableFuture.completedFuture(task.get());
        }
        return CompletableFuture.supplyAsync(task, readExecutor);
    }

    /**
     * Reads {@code n} bytes at {@code start} of an entry's block file, after checking the file's
     * length; {@code intact} checks the bytes read. An owned buffer, or null when the block is
     * unusable (short, missing, damaged, unreadable: dropped and counted).
     */
    private ByteBuf readChecked(Entry e, long start, int n, java.util.function.Predicate<ByteBuf> intact) {
        try {
            ctx.faults().fire(READ);
            try (FileChannel ch = FileChannel.open(path(e.key), StandardOpenOption.READ)) {
                if (ch.size() != e.length) {
                    return unusable(e, "short");
                }
                ByteBuf buf = BlockBuf.allocate(n);
                try {
                    while (buf.writerIndex() < n) {
                        if (buf.writeBytes(ch, start + buf.writerIndex(), n - buf.writerIndex()) < 0) {
                            buf.release();
                            return unusable(e, "short");
                        }
                    }
                    if (!intact.test(buf)) {
                        buf.release();
                        return unusable(e, "crc");
                    }
                    return buf;
                } catch (IOException | RuntimeException ex) {
                    buf.release();
                    throw ex;
                }
            }
        } catch (NoSuchFileException ex) {
            return unusable(e, "missing");
        } catch (IOException | RuntimeException ex) {
            LOG.warn("L1: reading cached block {} failed: {}", e.key, ex.toString());
            return unusable(e, "io");
        }
    }

    /** Sub-block size for a block size: a sixteenth of the block, at least 4 KiB. */
    static int subBlock(int blockSize) {
        return Math.max(4096, (blockSize + MAX_SUBS - 1) / MAX_SUBS);
    }

    private int subCount(int length) {
        int sub = subBlock(blockSize);
        return (length + sub - 1) / sub;
    }

    private int[] subCrcs(ByteBuf data) {
        int sub = subBlock(blockSize);
        int len = data.readableBytes();
        int[] out = new int[subCount(len)];
        for (int i = 0; i < out.length; i++) {
            int at = i * sub;
            out[i] = crc(data.slice(data.readerIndex() + at, Math.min(sub, len - at)));
        }
        return out;
    }

    private ByteBuf unusable(Entry e, String kind) {
        boolean mine;
        synchronized (this) {
            mine = removeEntry(e);
        }
        if (mine) {
            // still indexed: a real corruption (not a block invalidated or replaced while we read it)
            LOG.warn("L1: cached block {} is unusable ({}); dropped, fetching it from the tier below", e.key, kind);
            metrics.corruption(kind);
            metrics.eviction(L1Metrics.Tier.NVME, "corrupt", 1);
            deleteAsync(List.of(e), false);
        }
        return null;
    }

    // ---- writes ----

    /**
     * Offers a block to the tier: written (if admitted) in the background. {@code data} is
     * borrowed; the store keeps its own reference until written. A block is indexed only if
     * nothing changed its chunk since {@code stamp}.
     */
    void offer(BlockKey key, ByteBuf data, Epochs.Stamp stamp, boolean pin, long ttlNanos) {
        if (closed) {
            return;
        }
        int n = data.readableBytes();
        if (queuedBytes.addAndGet(n) > config.maxQueued().bytes()) {
            queuedBytes.addAndGet(-n);
            metrics.refused("queue-full");
            return;
        }
        offers.add(new Offer(key, data.retain(), stamp, pin, ttlNanos));
        if (drainScheduled.compareAndSet(false, true)) {
            try {
                writer.execute(this::drain);
            } catch (java.util.concurrent.RejectedExecutionException closing) {
                drainScheduled.set(false);
            }
        }
    }

    private void drain() {
        drainScheduled.set(false);
        List<Entry> written = new ArrayList<>();
        for (int i = 0; i < BATCH; i++) {
            Offer o = offers.poll();
            if (o == null) {
                break;
            }
            try {
                if (!closed) {
                    Entry e = write(o);
                    if (e != null) {
                        written.add(e);
                    }
                }
            } finally {
                queuedBytes.addAndGet(-o.data().readableBytes());
                o.data().release();
            }
        }
        if (!written.isEmpty()) {
            commitPuts(written);
        }
        if (!offers.isEmpty() && drainScheduled.compareAndSet(false, true)) {
            executeQuietly(this::drain); // rejected only while closing: close() releases what is left
        }
    }

    /** Writes one offered block (writer thread); returns its entry, already in the in-memory index, or null. */
    private Entry write(Offer o) {
        synchronized (this) {
            if (current(o.key()) != null) {
                return null;
            }
        }
        int len = o.data().readableBytes();
        List<Entry> victims = admit(o, len);
        if (victims == null) {
            return null;
        }
        if (!victims.isEmpty()) {
            deleteNow(victims, false);
        }
        Path fin = path(o.key());
        Path tmp = fin.resolveSibling(fin.getFileName() + ".tmp");
        boolean renamed = false;
        try {
            int[] subs = subCrcs(o.data());
            int crc = crc(o.data());
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)) {
                ByteBuf d = o.data();
                int half = len / 2;
                writeFully(ch, d, d.readerIndex(), half, 0);
                ctx.faults().fire(BLOCK_WRITE);
                writeFully(ch, d, d.readerIndex() + half, len - half, half);
                ctx.faults().fire(BLOCK_SYNC);
                if (config.fsync()) {
                    ch.force(false);
                }
            }
            Entry e = new Entry(o.key(), len, crc, subs, o.pinned(), o.ttlNanos(), ctx.clock().nanoTime());
            boolean[] added = new boolean[1];
            epochs.ifCurrent(o.stamp(), () -> {
                try {
                    Files.move(tmp, fin, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (IOException ex) {
                    throw new UncheckedIOException(ex);
                }
                synchronized (this) {
                    if (current(o.key()) == null) {
                        add(e);
                        added[0] = true;
                    }
                }
            });
            renamed = added[0];
            if (!added[0]) {
                Files.deleteIfExists(tmp);
                return null;
            }
            return e;
        } catch (IOException | UncheckedIOException | StrataException ex) {
            LOG.debug("L1: writing block {} to NVMe failed: {}", o.key(), ex.toString());
            metrics.refused("write-error");
            if (!renamed) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // reclaimed at the next open
                }
            }
            return null;
        }
    }

    private void commitPuts(List<Entry> written) {
        try {
            ctx.faults().fire(INDEX_COMMIT);
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                for (Entry e : written) {
                    putEntry(txn, e);
                }
                txn.commit();
            }
        } catch (RuntimeException ex) {
            LOG.warn("L1: indexing {} NVMe blocks failed ({}); dropping them", written.size(), ex.toString());
            List<Entry> drop = new ArrayList<>();
            synchronized (this) {
                for (Entry e : written) {
                    if (removeEntry(e)) {
                        drop.add(e);
                    }
                }
            }
            for (Entry e : drop) {
                metrics.refused("write-error");
                unlink(e.key);
            }
        }
    }

    private void putEntry(Txn<ByteBuffer> txn, Entry e) {
        e.key.encode(wkey);
        wval.clear();
        wval.putInt(e.length).putInt(e.crc).put((byte) (e.pinned ? 1 : 0)).putLong(e.ttlNanos / 1_000_000L);
        wval.put((byte) e.subCrcs.length);
        for (int c : e.subCrcs) {
            wval.putInt(c);
        }
        wval.flip();
        blocks.put(txn, wkey, wval);
    }

    /**
     * Decides whether {@code o} may be written, and whom it evicts: null when refused, else the
     * victims, already out of the in-memory index.
     */
    private List<Entry> admit(Offer o, int len) {
        long fp = footprint(len);
        long free = freeSpace.getAsLong();
        synchronized (this) {
            long needCapacity = usedBytes + fp - config.capacity().bytes();
            long needDisk = config.minFree().bytes() + fp - free;
            long need = Math.max(needCapacity, needDisk);
            boolean disk = needDisk > 0 && needDisk >= needCapacity;
            if (o.pinned() && pinnedBytes + fp > config.capacity().bytes()) {
                metrics.refused("capacity");
                return null;
            }
            if (need <= 0) {
                return List.of();
            }
            int freq = sketch.frequency(o.key().mix());
            List<Entry> victims = new ArrayList<>();
            long freed = 0;
            Iterator<Entry> it = victims();
            while (freed < need && it.hasNext()) {
                Entry v = it.next();
                if (!o.pinned() && freq <= sketch.frequency(v.key.mix())) {
                    metrics.refused(disk ? "disk-floor" : "admission");
                    return null;
                }
                victims.add(v);
                freed += v.footprint();
            }
            if (freed < need) {
                metrics.refused(disk ? "disk-floor" : "capacity");
                return null;
            }
            for (Entry v : victims) {
                removeEntry(v);
            }
            metrics.eviction(L1Metrics.Tier.NVME, disk ? "disk-floor" : "size", victims.size());
            return victims;
        }
    }

    // ---- removal ----

    /** Takes the given blocks out of the in-memory index (callers then {@link #deleteAsync} them). */
    synchronized List<Entry> remove(Collection<BlockKey> keys) {
        List<Entry> out = new ArrayList<>();
        for (BlockKey k : keys) {
            Entry e = current(k);
            if (e != null && removeEntry(e)) {
                out.add(e);
            }
        }
        return out;
    }

    /** Takes every block whose key matches out of the in-memory index. */
    synchronized List<Entry> removeIf(Predicate<BlockKey> which) {
        List<Entry> out = new ArrayList<>();
        for (Entry e : all.values()) {
            if (which.test(e.key)) {
                out.add(e);
            }
        }
        for (Entry e : out) {
            removeEntry(e);
        }
        return out;
    }

    /**
     * Deletes removed entries from the LMDB index (then flushed to disk when {@code durable}) and
     * unlinks their files, on the writer thread, after everything asked before. A key that was
     * indexed again meanwhile (a fresh block under the same key) keeps its new entry and file.
     */
    CompletableFuture<Void> deleteAsync(List<Entry> entries, boolean durable) {
        if (entries.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> f = new CompletableFuture<>();
        try {
            writer.execute(() -> {
                try {
                    deleteNow(entries, durable);
                    f.complete(null);
                } catch (RuntimeException ex) {
                    f.completeExceptionally(StrataException.wrap(ex));
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            f.completeExceptionally(new StrataException(Status.SHUTTING_DOWN, "L1 NVMe cache is closed"));
        }
        return f;
    }

    private void deleteNow(List<Entry> entries, boolean durable) {
        List<BlockKey> gone = new ArrayList<>();
        synchronized (this) {
            for (Entry e : entries) {
                if (current(e.key) == null) {
                    gone.add(e.key);
                }
            }
        }
        if (gone.isEmpty()) {
            return;
        }
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            for (BlockKey k : gone) {
                blocks.delete(txn, k.encode(wkey));
            }
            txn.commit();
        }
        if (durable) {
            env.sync(true);
        }
        for (BlockKey k : gone) {
            unlink(k);
        }
    }

    private void unlink(BlockKey k) {
        try {
            Files.deleteIfExists(path(k));
        } catch (IOException e) {
            LOG.debug("L1: cannot delete block file of {}: {}", k, e.toString());
        }
    }

    // ---- maintenance ----

    /**
     * Drops blocks idle past their TTL and, when the disk's free space is under {@code min-free},
     * least-recently-used unpinned blocks until it is not; flushes the index. Returns when done.
     */
    CompletableFuture<Void> sweep() {
        CompletableFuture<Void> f = new CompletableFuture<>();
        List<Entry> expired = new ArrayList<>();
        long now = ctx.clock().nanoTime();
        synchronized (this) {
            if (ttlEntries > 0) {
                for (Entry e : all.values()) {
                    if (e.ttlNanos > 0 && now - e.lastAccess >= e.ttlNanos) {
                        expired.add(e);
                    }
                }
                for (Entry e : expired) {
                    removeEntry(e);
                }
            }
        }
        if (!expired.isEmpty()) {
            metrics.eviction(L1Metrics.Tier.NVME, "expired", expired.size());
        }
        try {
            writer.execute(() -> {
                try {
                    enforceLimits(expired);
                    env.sync(true);
                    f.complete(null);
                } catch (RuntimeException ex) {
                    f.completeExceptionally(ex);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            f.complete(null);
        }
        return f;
    }

    /** Writer thread: deletes {@code removed}, then evicts until capacity and the free-space floor hold. */
    private void enforceLimits(List<Entry> removed) {
        List<Entry> victims = new ArrayList<>(removed);
        long free = freeSpace.getAsLong();
        int evicted = 0;
        synchronized (this) {
            long needDisk = config.minFree().bytes() - free;
            long needCapacity = usedBytes - config.capacity().bytes();
            long need = Math.max(needDisk, needCapacity);
            long freed = 0;
            Iterator<Entry> it = victims();
            while (freed < need && it.hasNext()) {
                Entry v = it.next();
                victims.add(v);
                freed += v.footprint();
                evicted++;
            }
            for (int i = removed.size(); i < victims.size(); i++) {
                removeEntry(victims.get(i));
            }
            if (evicted > 0) {
                metrics.eviction(L1Metrics.Tier.NVME, needDisk > 0 ? "disk-floor" : "size", evicted);
            }
        }
        deleteNow(victims, false);
    }

    /** Writer thread, at open: deletes temporary files and block files the index does not name. */
    private void removeOrphans() {
        int n = 0;
        for (int i = 0; i < 256 && !closed; i++) {
            Path shard = blocksDir.resolve(String.format("%02x", i));
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(shard)) {
                for (Path p : ds) {
                    BlockKey k = BlockKey.parseFileName(p.getFileName().toString());
                    boolean keep;
                    synchronized (this) {
                        keep = k != null && current(k) != null;
                    }
                    if (!keep) {
                        Files.deleteIfExists(p);
                        n++;
                    }
                }
            } catch (IOException e) {
                LOG.debug("L1: scanning {} for orphans: {}", shard, e.toString());
            }
        }
        if (n > 0) {
            LOG.info("L1: removed {} block files the NVMe index did not name (an interrupted write or delete)", n);
        }
    }

    private void executeQuietly(Runnable r) {
        try {
            writer.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            // the store is closing: the in-memory change is not kept
        }
    }

    /** Completes once everything queued on the writer so far, and every block offered so far, is done. */
    CompletableFuture<Void> barrier() {
        CompletableFuture<Void> f = new CompletableFuture<>();
        try {
            writer.execute(() -> {
                try {
                    while (!offers.isEmpty() && !closed) {
                        drain();
                    }
                } finally {
                    f.complete(null);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            f.complete(null);
        }
        return f;
    }

    // ---- views ----

    synchronized long usedBytes() {
        return usedBytes;
    }

    synchronized long pinnedBytes() {
        return pinnedBytes;
    }

    synchronized int blockCount() {
        return all.size();
    }

    long queuedBytes() {
        return queuedBytes.get();
    }

    /** [blocks, bytes, pinned bytes] of the blocks whose key matches. */
    synchronized long[] usage(Predicate<BlockKey> which) {
        long n = 0;
        long bytes = 0;
        long pin = 0;
        for (Entry e : all.values()) {
            if (which.test(e.key)) {
                n++;
                bytes += e.length;
                if (e.pinned) {
                    pin += e.length;
                }
            }
        }
        return new long[]{n, bytes, pin};
    }

    /** Whether the block is indexed (tests). */
    synchronized boolean contains(BlockKey k) {
        return current(k) != null;
    }

    /** Where the block's file is (tests that damage it on purpose; tools). */
    Path path(BlockKey k) {
        return blocksDir.resolve(k.shard()).resolve(k.fileName());
    }

    static int crc(ByteBuf buf) {
        CRC32C c = new CRC32C();
        if (buf.isReadable()) {
            for (ByteBuffer b : buf.nioBuffers()) {
                c.update(b);
            }
        }
        return (int) c.getValue();
    }

    private static void writeFully(FileChannel ch, ByteBuf data, int index, int length, long pos) throws IOException {
        if (length == 0) {
            return;
        }
        long p = pos;
        for (ByteBuffer b : data.nioBuffers(index, length)) {
            while (b.hasRemaining()) {
                p += ch.write(b, p);
            }
        }
    }

    private static void wipe(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (var s = Files.walk(dir)) {
            List<Path> all = s.sorted(java.util.Comparator.reverseOrder()).toList();
            for (Path p : all) {
                if (!p.equals(dir)) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        writer.shutdown();
        try {
            if (!writer.awaitTermination(30, TimeUnit.SECONDS)) {
                LOG.warn("L1: the NVMe writer did not stop within 30 s");
                writer.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Offer o;
        while ((o = offers.poll()) != null) {
            queuedBytes.addAndGet(-o.data().readableBytes());
            o.data().release();
        }
        try {
            env.sync(true);
        } catch (RuntimeException e) {
            LOG.debug("L1: final index flush: {}", e.toString());
        }
        env.close();
        release();
    }

    private void release() {
        try {
            lock.release();
        } catch (IOException | RuntimeException e) {
            LOG.debug("L1: releasing the cache lock: {}", e.toString());
        }
        closeQuietly(lockFile);
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // nothing left to do
        }
    }
}
