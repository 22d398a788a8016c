package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.ThreadExecutorMap;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.FaultPoint;
import io.strata.store.AtomicFiles;
import io.strata.store.CachePolicy;
import io.strata.store.CheckedReads;
import io.strata.store.SpaceBudget;
import io.strata.store.StoreDir;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NVMe tier: block files ({@link BlockFiles}, {@code blocks/}), an LMDB index
 * ({@link NvmeIndex}, {@code index/}) and, serving lookups, an in-memory copy of the index with
 * its eviction and admission policy ({@link CachePolicy}: segmented LRU, pinned set, TinyLFU
 * admission, TTL, the capacity and the disk's free-space floor). This class ties them together:
 * the writer thread, offers, reads, removals and sweeps. The directory is held with a lock file
 * ({@code l1.lock}): one cache per directory.
 *
 * <p><b>Crash safety.</b> A block file is written under a temporary name, fdatasync'ed (when
 * {@code fsync}), renamed into place and only then put in the index; an entry is deleted from the
 * index before its file is unlinked. Every read checks the file's length and the CRC32C of each
 * sub-block read against the index, so whatever a crash leaves (a torn file, a file the index does not
 * name, an index entry whose file vanished or holds other bytes) is never served: a bad entry is
 * dropped and counted, and the caller fetches the block from the tier below. Files the index
 * does not name are deleted at open. The index commits without fsync (a process crash loses
 * nothing: the pages are in the kernel); it is flushed every sweep and, durably, before any
 * invalidation returns (so that a write to the tier below never happens while an index entry
 * for the old bytes could come back after a power loss). An index LMDB cannot open is wiped: it
 * is a cache.
 *
 * <p><b>Admission.</b> While there is room every offered block is written; when there is not,
 * the policy picks victims or refuses the block (its popularity is fed by every access to L1,
 * memory hits included).
 *
 * <p><b>Threads.</b> All index writes, block file writes and unlinks run on one writer thread
 * owned by the store (LMDB has one writer anyway), so their order is the order they were asked
 * in; block reads run on the given executor. Lookups take the policy's lock briefly.
 */
final class NvmeStore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NvmeStore.class);

    /** After half of a block file is written. */
    static final FaultPoint BLOCK_WRITE = FaultPoint.of("l1.nvme.block-write");
    /** Before a block file is fdatasync'ed and renamed into place. */
    static final FaultPoint BLOCK_SYNC = FaultPoint.of("l1.nvme.block-sync");
    /** Before a written block file is renamed into place. */
    static final FaultPoint BLOCK_RENAME = FaultPoint.of("l1.nvme.block-rename");
    /** Before the index transaction that names newly written blocks commits. */
    static final FaultPoint INDEX_COMMIT = FaultPoint.of("l1.nvme.index-commit");
    /** Before a block file is read. */
    static final FaultPoint READ = FaultPoint.of("l1.nvme.read");

    private static final int BATCH = 64;

    /** A block waiting to be written: bytes owned by the offer until written or dropped. */
    private record Offer(BlockKey key, ByteBuf data, Epochs.Stamp stamp, boolean pinned, long ttlNanos) {
    }

    private final L1Config.Nvme config;
    private final NodeContext ctx;
    private final L1Metrics metrics;
    private final Epochs epochs;
    private final Executor readExecutor;
    private final StoreDir dir;
    private final BlockFiles files;
    private final NvmeIndex index;
    private final CachePolicy<BlockKey, BlockEntry> policy;
    private final ExecutorService writer;

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
        this.ctx = ctx;
        this.metrics = metrics;
        this.epochs = epochs;
        this.readExecutor = readExecutor;
        Path d = config.dir();
        this.files = new BlockFiles(d.resolve("blocks"), blockSize, ctx.faults(),
                new AtomicFiles.Faults(BLOCK_WRITE, BLOCK_SYNC, BLOCK_RENAME), config.fsync());
        try {
            this.dir = StoreDir.open(d, "l1.lock", "L1: NVMe cache directory " + d + " is in use by another cache", null);
        } catch (IOException e) {
            throw new StrataException(Status.IO_ERROR, "L1: cannot use NVMe cache directory " + d + ": " + e.getMessage(), e);
        }
        NvmeIndex idx = null;
        try {
            long capacity = config.capacity().bytes();
            SpaceBudget budget = new SpaceBudget(capacity, config.minFree().bytes(),
                    freeSpace != null ? freeSpace : SpaceBudget.usableSpace(d));
            this.policy = new CachePolicy<>(budget, Math.max(64, capacity / blockSize), BlockKey::mix);
            idx = NvmeIndex.open(d.resolve("index"), config.indexMapSize().bytes(), blockSize, files.root());
            if (!idx.layoutMatches()) {
                LOG.info("L1: NVMe cache in {} was written with another block size or format; emptying it", d);
                idx.clear();
                files.wipe();
            }
            idx.writeLayout();
            List<BlockKey> stale = idx.load(ctx.clock().nanoTime(), policy::add);
            if (!stale.isEmpty()) {
                files.delete(stale);
                LOG.info("L1: dropped {} NVMe blocks indexed without usable sub-block checksums", stale.size());
            }
            LOG.info("{}: L1 NVMe cache open at {}: {} blocks, {} bytes", ctx.name(), d, policy.size(), policy.usedBytes());
            files.createShards(); // after the layout check: a wipe there removes the shard directories too
            this.index = idx;
        } catch (IOException | RuntimeException e) {
            if (idx != null) {
                idx.close();
            }
            dir.close();
            if (e instanceof StrataException se) {
                throw se;
            }
            throw new StrataException(Status.IO_ERROR, "L1: cannot open the NVMe cache in " + d + ": " + e.getMessage(), e);
        }
        this.writer = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, ctx.name() + "-l1-nvme-writer");
            t.setDaemon(true);
            return t;
        });
        writer.execute(this::removeOrphans);
        writer.execute(() -> enforceLimits(List.of()));
    }

    /** Bytes a block of {@code length} bytes takes on disk (see {@link BlockEntry#footprint}). */
    static long footprint(int length) {
        return BlockEntry.footprint(length);
    }

    /** Sub-block size for a block size (see {@link BlockEntry#subBlock}). */
    static int subBlock(int blockSize) {
        return BlockEntry.subBlock(blockSize);
    }

    // ---- lookups ----

    /**
     * The block's entry (an access: recency, popularity), or null. A changed pin or TTL of the
     * file's policy is recorded in the entry.
     */
    BlockEntry lookup(BlockKey k, boolean pin, long ttlNanos) {
        CachePolicy.Access<BlockEntry> a = policy.access(k, pin, ttlNanos, ctx.clock().nanoTime());
        if (a.expired() != null) {
            metrics.eviction(L1Metrics.Tier.NVME, "expired", 1); // idle past its TTL: gone, as if the sweep had run
            deleteAsync(List.of(a.expired()), false);
            return null;
        }
        if (a.retagged()) {
            recordTags(a.entry());
        }
        return a.entry();
    }

    /** An access served by the memory tier: keeps the NVMe copy's recency and popularity current. */
    void recordAccess(BlockKey k, boolean pin, long ttlNanos) {
        lookup(k, pin, ttlNanos);
    }

    /** Writes an entry's current pin and TTL to the index (writer thread), unless it left the index meanwhile. */
    private void recordTags(BlockEntry e) {
        executeQuietly(() -> {
            if (!policy.isCurrent(e)) {
                return;
            }
            try {
                index.put(List.of(e));
            } catch (RuntimeException ex) {
                LOG.warn("L1: cannot record the pin/TTL of {}: {}", e.key(), ex.toString());
            }
        });
    }

    /**
     * Reads an entry's block, checking its length and CRC32C: on the calling thread when
     * {@code read-on-caller} and it is not an event loop, else on the read executor. Completes
     * with an <b>owned</b> buffer, or null when the block is unusable; an unusable block that is still indexed is
     * dropped and counted in {@code strata.l1.corruptions} (never returned).
     */
    CompletableFuture<ByteBuf> read(BlockEntry e) {
        return onReadThread(() -> readChecked(e, () -> files.read(e, 0, e.length)));
    }

    /**
     * Reads [{@code from}, {@code from + length}) of an entry's block (cut at the block's end):
     * only the sub-blocks that cover it, each checked against its CRC32C, so a 4 KiB read of a
     * 1 MiB block reads and checks 64 KiB, not the block. Same threads and outcomes as
     * {@link #read(BlockEntry)}: an owned buffer, or null when the block is unusable (dropped, counted).
     */
    CompletableFuture<ByteBuf> readRange(BlockEntry e, int from, int length) {
        return onReadThread(() -> from >= Math.min(e.length, from + length) ? Unpooled.EMPTY_BUFFER
                : readChecked(e, () -> files.readRange(e, from, length)));
    }

    /** Runs a block read on the caller's thread ({@code read-on-caller}, not an event loop) or on the read executor. */
    private CompletableFuture<ByteBuf> onReadThread(Supplier<ByteBuf> task) {
        if (config.readOnCaller() && ThreadExecutorMap.currentExecutor() == null) {
            return CompletableFuture.completedFuture(task.get());
        }
        return CompletableFuture.supplyAsync(task, readExecutor);
    }

    /** A file read. */
    private interface BlockRead {
        ByteBuf run() throws IOException;
    }

    /**
     * Runs a checked read of an entry's block file: an owned buffer, or null when the block is
     * unusable (short, missing, damaged, unreadable: dropped and counted).
     */
    private ByteBuf readChecked(BlockEntry e, BlockRead read) {
        try {
            ctx.faults().fire(READ);
            return read.run();
        } catch (CheckedReads.DamagedFile d) {
            return unusable(e, d.damage().label());
        } catch (IOException | RuntimeException ex) {
            LOG.warn("L1: reading cached block {} failed: {}", e.key(), ex.toString());
            return unusable(e, "io");
        }
    }

    private ByteBuf unusable(BlockEntry e, String kind) {
        if (policy.remove(e)) {
            // still indexed: a real corruption (not a block invalidated or replaced while we read it)
            LOG.warn("L1: cached block {} is unusable ({}); dropped, fetching it from the tier below", e.key(), kind);
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
            } catch (RejectedExecutionException closing) {
                drainScheduled.set(false);
            }
        }
    }

    private void drain() {
        drainScheduled.set(false);
        List<BlockEntry> written = new ArrayList<>();
        for (int i = 0; i < BATCH; i++) {
            Offer o = offers.poll();
            if (o == null) {
                break;
            }
            try {
                if (!closed) {
                    BlockEntry e = write(o);
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
    private BlockEntry write(Offer o) {
        if (policy.contains(o.key())) {
            return null;
        }
        int len = o.data().readableBytes();
        CachePolicy.Admission<BlockEntry> a = policy.admit(o.key(), footprint(len), o.pinned());
        if (!a.admitted()) {
            metrics.refused(refusal(a));
            return null;
        }
        if (!a.victims().isEmpty()) {
            metrics.eviction(L1Metrics.Tier.NVME, a.floorBound() ? "disk-floor" : "size", a.victims().size());
            deleteNow(a.victims(), false);
        }
        AtomicFiles.Staged staged = null;
        try {
            int[] subs = files.subCrcs(o.data());
            int crc = files.crc(subs, len);
            staged = files.stage(o.key(), o.data());
            AtomicFiles.Staged s = staged;
            BlockEntry fresh = new BlockEntry(o.key(), len, crc, subs, o.pinned(), o.ttlNanos(), ctx.clock().nanoTime());
            boolean[] added = new boolean[1];
            epochs.ifCurrent(o.stamp(), () -> {
                try {
                    s.commit();
                } catch (IOException ex) {
                    throw new UncheckedIOException(ex);
                }
                added[0] = policy.addIfAbsent(fresh);
            });
            if (!added[0]) {
                staged.abandon();
                return null;
            }
            return fresh;
        } catch (IOException | UncheckedIOException | StrataException ex) {
            LOG.debug("L1: writing block {} to NVMe failed: {}", o.key(), ex.toString());
            metrics.refused("write-error");
            if (staged != null) {
                staged.abandon();
            }
            return null;
        }
    }

    private static String refusal(CachePolicy.Admission<BlockEntry> a) {
        return switch (a.refusal()) {
            case PINNED_OVER_CAPACITY -> "capacity";
            case LESS_POPULAR -> a.floorBound() ? "disk-floor" : "admission";
            case NO_ROOM -> a.floorBound() ? "disk-floor" : "capacity";
        };
    }

    private void commitPuts(List<BlockEntry> written) {
        try {
            ctx.faults().fire(INDEX_COMMIT);
            index.put(written);
        } catch (RuntimeException ex) {
            LOG.warn("L1: indexing {} NVMe blocks failed ({}); dropping them", written.size(), ex.toString());
            for (BlockEntry e : written) {
                if (policy.remove(e)) {
                    metrics.refused("write-error");
                    files.unlink(e.key());
                }
            }
        }
    }

    // ---- removal ----

    /** Takes the given blocks out of the in-memory index (callers then {@link #deleteAsync} them). */
    List<BlockEntry> remove(Collection<BlockKey> keys) {
        return policy.removeAll(keys);
    }

    /** Takes every block whose key matches out of the in-memory index. */
    List<BlockEntry> removeIf(Predicate<BlockKey> which) {
        return policy.removeIf(which);
    }

    /**
     * Deletes removed entries from the LMDB index (then flushed to disk when {@code durable}) and
     * unlinks their files, on the writer thread, after everything asked before. A key that was
     * indexed again meanwhile (a fresh block under the same key) keeps its new entry and file.
     */
    CompletableFuture<Void> deleteAsync(List<BlockEntry> entries, boolean durable) {
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
        } catch (RejectedExecutionException closing) {
            f.completeExceptionally(new StrataException(Status.SHUTTING_DOWN, "L1 NVMe cache is closed"));
        }
        return f;
    }

    private void deleteNow(List<BlockEntry> entries, boolean durable) {
        List<BlockKey> gone = new ArrayList<>();
        for (BlockEntry e : entries) {
            if (!policy.contains(e.key())) {
                gone.add(e.key());
            }
        }
        if (gone.isEmpty()) {
            return;
        }
        index.delete(gone);
        if (durable) {
            index.flush();
        }
        for (BlockKey k : gone) {
            files.unlink(k);
        }
    }

    // ---- maintenance ----

    /**
     * Drops blocks idle past their TTL and, when the disk's free space is under {@code min-free},
     * least-recently-used unpinned blocks until it is not; flushes the index. Returns when done.
     */
    CompletableFuture<Void> sweep() {
        CompletableFuture<Void> f = new CompletableFuture<>();
        List<BlockEntry> expired = policy.expire(ctx.clock().nanoTime());
        if (!expired.isEmpty()) {
            metrics.eviction(L1Metrics.Tier.NVME, "expired", expired.size());
        }
        try {
            writer.execute(() -> {
                try {
                    enforceLimits(expired);
                    index.flush();
                    f.complete(null);
                } catch (RuntimeException ex) {
                    f.completeExceptionally(ex);
                }
            });
        } catch (RejectedExecutionException closing) {
            f.complete(null);
        }
        return f;
    }

    /** Writer thread: deletes {@code removed}, then evicts until capacity and the free-space floor hold. */
    private void enforceLimits(List<BlockEntry> removed) {
        CachePolicy.Eviction<BlockEntry> ev = policy.evictToLimits();
        if (!ev.victims().isEmpty()) {
            metrics.eviction(L1Metrics.Tier.NVME, ev.floorBound() ? "disk-floor" : "size", ev.victims().size());
        }
        List<BlockEntry> all = new ArrayList<>(removed);
        all.addAll(ev.victims());
        deleteNow(all, false);
    }

    /** Writer thread, at open: deletes temporary files and block files the index does not name. */
    private void removeOrphans() {
        int n = files.removeOrphans(policy::contains, () -> closed);
        if (n > 0) {
            LOG.info("L1: removed {} block files the NVMe index did not name (an interrupted write or delete)", n);
        }
    }

    private void executeQuietly(Runnable r) {
        try {
            writer.execute(r);
        } catch (RejectedExecutionException closing) {
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
        } catch (RejectedExecutionException closing) {
            f.complete(null);
        }
        return f;
    }

    // ---- views ----

    long usedBytes() {
        return policy.usedBytes();
    }

    long pinnedBytes() {
        return policy.pinnedBytes();
    }

    int blockCount() {
        return policy.size();
    }

    long queuedBytes() {
        return queuedBytes.get();
    }

    /** [blocks, bytes, pinned bytes] of the blocks whose key matches. */
    long[] usage(Predicate<BlockKey> which) {
        long n = 0;
        long bytes = 0;
        long pin = 0;
        for (BlockEntry e : policy.matching(which)) {
            n++;
            bytes += e.length;
            if (e.pinned()) {
                pin += e.length;
            }
        }
        return new long[]{n, bytes, pin};
    }

    /** Whether the block is indexed (tests). */
    boolean contains(BlockKey k) {
        return policy.contains(k);
    }

    /** Where the block's file is (tests that damage it on purpose; tools). */
    Path path(BlockKey k) {
        return files.path(k);
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
            index.flush();
        } catch (RuntimeException e) {
            LOG.debug("L1: final index flush: {}", e.toString());
        }
        index.close();
        dir.close();
    }
}
