package io.strata.l1;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.IllegalReferenceCountException;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.CacheHints;
import io.strata.core.tier.ChunkAddress;
import java.util.Optional;
import java.util.Map;
import java.util.LinkedHashMap;
import io.strata.core.tier.CacheControl;
import io.strata.core.tier.FileChunks;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.Tier;
import io.strata.core.tier.TierKind;
import io.strata.core.tier.WrittenContent;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The L1 tier: a memory cache ({@link MemoryTier}, Caffeine) over an optional NVMe cache
 * ({@link NvmeStore}, block files + LMDB) over the tier below, plus write-back of small writes
 * ({@link WriteBack}). The client builds it per policy as {@code L1(L2(L3))} or {@code L1(L3)};
 * it knows nothing of the tiers below but the {@link Tier} interface.
 *
 * <p><b>Blocks.</b> A chunk is cached in blocks of {@code block-size} bytes (at most the chunk
 * size), keyed by (inode, {@link IoOptions#dataVersion()}, chunk, block): a file rewritten
 * elsewhere has a new data version and never meets its old blocks. A block holds what the tier
 * below returned for its range; a block shorter than the block size marks the end of the chunk.
 * A read assembles the blocks it spans (zero-copy slices of memory blocks) and stops at the end.
 *
 * <p><b>Where a block comes from.</b> Memory, else NVMe (length and CRC32C checked; a damaged
 * block is dropped, counted and fetched again), else the tier below. Concurrent misses of one
 * block share one fetch. A block read from below enters memory (if Caffeine admits it) and is
 * offered to NVMe (written in the background if the NVMe admission admits it), so NVMe holds a
 * superset of what survived in memory and a restart finds it there.
 *
 * <p><b>Consistency.</b> {@link CacheHints#cacheData()} false (strict) bypasses both caches for
 * data. Writes that are not absorbed go to the tier below; around each one the chunk's cached
 * blocks under that data version are dropped (durably on NVMe before the write is sent) and
 * {@link Epochs} keeps a fetch that overlapped it from caching stale bytes. Absorbed writes are
 * laid over every read of their chunk until they are at the tier below (read-your-writes); a
 * truncate, remove, strict or large write of a file with absorbed writes first flushes them, so
 * the tier below sees one file's changes in the order they were made.
 *
 * <p>Buffer ownership follows {@link Tier}: reads return an <b>owned</b>, read-only buffer;
 * writes <b>borrow</b> {@code data} until their future completes (absorbed writes are copied).
 * Cache blocks are {@link BlockBuf}s: a block buffer object is never recycled, so a reader
 * racing an eviction sees a released buffer (and re-fetches), never another block's bytes. L1
 * does not close the tier below: whoever built the stack does, after closing L1.
 */
public final class L1Tier implements Tier {
    private static final Logger LOG = LoggerFactory.getLogger(L1Tier.class);

    private final NodeContext ctx;
    private final L1Config config;
    private final Tier below;
    private final L1Metrics metrics;
    private final Epochs epochs = new Epochs();
    private final MemoryTier memory;
    private final NvmeStore nvme;
    private final WriteBack writeBack;
    private final ConcurrentHashMap<BlockKey, CompletableFuture<ByteBuf>> inflight = new ConcurrentHashMap<>();
    /**
     * What small misses of a block have cost so far, fetched as ranges
     * ({@link L1Config.SmallMiss#RANGE}): a ski rental. Each range costs its length, at least
     * {@link #RANGE_COST_FLOOR}; once a block's ranges have cost as much as the block, its next
     * miss loads it whole (and caches it). A block read often is cached after a few misses; a
     * block read once or twice in a random pass over a data set larger than the cache never
     * moves more than its reads (and at worst a block is paid twice). Bounded (twice the blocks
     * the cache can hold, at least 4096 entries), so old rentals are forgotten.
     */
    private final Cache<BlockKey, AtomicLong> rented;
    private final ScheduledFuture<?> sweeper;
    /**
     * The least a range fetched from below costs, in bytes of a block: a storage node reads and
     * checks at least one 64 KiB CRC block for any read, and each request has its round trip.
     */
    static final int RANGE_COST_FLOOR = 64 * 1024;
    /** The largest file a client hands over as it publishes it, unless a block is larger ({@link WrittenContent}). */
    static final int KEPT_WRITTEN_MAX = 1 << 20;
    private volatile boolean closed;

    /** An L1 tier over {@code below}, with the resources of {@code config}; opens (or creates) the NVMe tier. */
    public L1Tier(NodeContext ctx, L1Config config, Tier below) {
        this(ctx, config, below, null);
    }

    /** As above, with the disk's free space reported by {@code freeSpace} (tests of the free-space floor). */
    L1Tier(NodeContext ctx, L1Config config, Tier below, LongSupplier freeSpace) {
        long direct = io.netty.util.internal.PlatformDependent.maxDirectMemory();
        if (direct > 0 && config.memory().bytes() > direct - (64L << 20)) {
            throw new io.strata.config.ConfigException("l1.memory", config.memory() + " of cached blocks does not fit in this JVM's "
                    + "direct memory (" + io.strata.core.DataSize.human(direct) + "); raise -XX:MaxDirectMemorySize or lower l1.memory");
        }
        this.ctx = ctx;
        this.config = config;
        this.below = below;
        this.metrics = new L1Metrics(ctx.meters(), config.name());
        this.memory = new MemoryTier(config.memory().bytes(), ctx.clock(), this::removedFromMemory);
        try {
            this.nvme = config.nvme().map(n -> new NvmeStore(n, config.blockSize().toIntExact(), ctx, metrics, epochs,
                    ctx.blocking(), freeSpace)).orElse(null);
        } catch (RuntimeException e) {
            metrics.close();
            throw e;
        }
        long blocks = (config.memory().bytes() + config.nvme().map(n -> n.capacity().bytes()).orElse(0L)) / config.blockSize().bytes();
        this.rented = Caffeine.newBuilder().maximumSize(Math.max(4096, Math.min(1L << 22, 2 * blocks))).executor(Runnable::run).build();
        this.writeBack = new WriteBack(ctx, config.writeBack(), metrics,
                (chunk, offset, data, io) -> mutate(chunk, io, () -> below.writeAsync(chunk, offset, data, io)));
        metrics.gauge("strata.l1.cached.bytes", "bytes held by the tier", memory, MemoryTier::weightedBytes, "tier", "memory");
        metrics.gauge("strata.l1.cached.blocks", "blocks held by the tier", memory, MemoryTier::blocks, "tier", "memory");
        if (nvme != null) {
            metrics.gauge("strata.l1.cached.bytes", "bytes held by the tier", nvme, NvmeStore::usedBytes, "tier", "nvme");
            metrics.gauge("strata.l1.cached.blocks", "blocks held by the tier", nvme, NvmeStore::blockCount, "tier", "nvme");
            metrics.gauge("strata.l1.pinned.bytes", "NVMe bytes of pinned blocks", nvme, NvmeStore::pinnedBytes);
        }
        long every = config.sweepInterval().toNanos();
        this.sweeper = ctx.scheduler().scheduleWithFixedDelay(this::sweepQuietly, every, every, TimeUnit.NANOSECONDS);
    }

    private void removedFromMemory(MemoryTier.Block b, RemovalCause cause) {
        switch (cause) {
            case SIZE -> metrics.eviction(L1Metrics.Tier.MEMORY, "size", 1);
            case EXPIRED -> metrics.eviction(L1Metrics.Tier.MEMORY, "expired", 1);
            default -> {
            }
        }
    }

    @Override
    public TierKind kind() {
        return TierKind.L1;
    }

    public L1Config config() {
        return config;
    }

    /** The tier this one caches. */
    public Tier below() {
        return below;
    }

    private int blockSize(ChunkAddress chunk) {
        return Math.min(config.blockSize().toIntExact(), chunk.chunkSize());
    }

    private static long ttlNanos(CacheHints h) {
        return h.ttl().map(java.time.Duration::toNanos).orElse(0L);
    }

    // ---- reads ----

    @Override
    public CompletableFuture<ByteBuf> readAsync(ChunkAddress chunk, long offset, int length, IoOptions io) {
        try {
            checkOpen();
            chunk.checkRange(offset, length);
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        long inode = chunk.id().inode().value();
        if (!io.cache().cacheData()) {
            metrics.bypass.increment();
            return flushIfPending(inode).thenCompose(v -> below.readAsync(chunk, offset, length, io));
        }
        if (length == 0) {
            return CompletableFuture.completedFuture(Unpooled.EMPTY_BUFFER);
        }
        // absorbed writes are captured before the blocks are read: one that lands meanwhile is in
        // both, and laying a write over bytes that already hold it changes nothing
        List<WriteBack.Pending> overlay = writeBack.pendingWrites(inode, chunk.id().index());
        int b = blockSize(chunk);
        int first = (int) (offset / b);
        int last = (int) ((offset + length - 1) / b);
        if (first == last && length <= b / 4) {
            CompletableFuture<ByteBuf> small = smallRead(chunk, io, first, b, offset, length);
            return overlay.isEmpty() ? small : small.thenApply(base -> overlay(base, overlay, offset, length));
        }
        // blocks are fetched in parallel, but not past a cached block that ends the chunk
        List<CompletableFuture<ByteBuf>> issued = new ArrayList<>(last - first + 1);
        for (int i = first; i <= last; i++) {
            CompletableFuture<ByteBuf> f = block(chunk, io, i, b);
            issued.add(f);
            if (f.isDone() && !f.isCompletedExceptionally() && f.join().readableBytes() < b) {
                break;
            }
        }
        @SuppressWarnings("unchecked")
        CompletableFuture<ByteBuf>[] parts = issued.toArray(CompletableFuture[]::new);
        return CompletableFuture.allOf(parts).handle((v, err) -> {
            ByteBuf[] bufs = new ByteBuf[parts.length];
            for (int i = 0; i < parts.length; i++) {
                bufs[i] = parts[i].isCompletedExceptionally() ? null : parts[i].join();
            }
            try {
                if (err != null) {
                    throw StrataException.wrap(err);
                }
                ByteBuf base = assemble(bufs, first, b, offset, length);
                return overlay.isEmpty() ? base : overlay(base, overlay, offset, length);
            } finally {
                for (ByteBuf x : bufs) {
                    if (x != null) {
                        x.release();
                    }
                }
            }
        });
    }

    /** Slices [offset, offset+length) out of consecutive blocks (borrowed), stopping at the chunk's end. Returns an owned buffer. */
    private static ByteBuf assemble(ByteBuf[] blocks, int first, int b, long offset, int length) {
        long end = offset + length;
        long pos = offset;
        List<ByteBuf> slices = new ArrayList<>(blocks.length);
        for (int i = 0; i < blocks.length; i++) {
            long start = (long) (first + i) * b;
            ByteBuf blk = blocks[i];
            int n = blk.readableBytes();
            int from = (int) (pos - start);
            int to = (int) Math.min(end - start, n);
            if (to > from) {
                slices.add(blk.retainedSlice(blk.readerIndex() + from, to - from));
                pos = start + to;
            }
            if (n < b) {
                break; // the chunk ends in this block
            }
        }
        if (slices.isEmpty()) {
            return Unpooled.EMPTY_BUFFER;
        }
        if (slices.size() == 1) {
            return slices.get(0);
        }
        CompositeByteBuf c = Unpooled.compositeBuffer(slices.size());
        c.addComponents(true, slices);
        return c;
    }

    /**
     * Lays absorbed writes over a read: {@code base} (owned, released here) holds what the tier
     * below has for [offset, offset+length), shorter when the chunk ends. Returns an owned buffer.
     */
    private static ByteBuf overlay(ByteBuf base, List<WriteBack.Pending> writes, long offset, int length) {
        try {
            int baseN = base.readableBytes();
            long end = offset + baseN;
            if (baseN < length) {
                for (WriteBack.Pending p : writes) {
                    end = Math.max(end, Math.min(offset + length, p.end()));
                }
            } else {
                end = offset + length;
            }
            int n = (int) (end - offset);
            ByteBuf out = Unpooled.buffer(n, n);
            out.writeBytes(base, base.readerIndex(), baseN);
            out.writeZero(n - baseN);
            for (WriteBack.Pending p : writes) {
                long s = Math.max(offset, p.offset());
                long e = Math.min(end, p.end());
                if (e > s) {
                    out.setBytes((int) (s - offset), p.data(), (int) (s - p.offset()), (int) (e - s));
                }
            }
            return out.asReadOnly();
        } finally {
            base.release();
        }
    }

    /**
     * A read inside one block, of at most a quarter of it. A memory hit or a load already in
     * flight serves it as any read; but an NVMe hit reads only the sub-blocks the range covers
     * ({@link NvmeStore#readRange}) and does not promote the block to memory. Random small reads
     * over a data set larger than memory (a dataloader's samples) would otherwise read and
     * checksum a whole block per read (256 times the bytes of a 4 KiB read in a 1 MiB block) and
     * churn the memory tier. A miss in both that starts inside the block fetches only the range
     * until the block's ranges have cost as much as the block, then the whole block, cached
     * ({@link L1Config.SmallMiss#RANGE}, see {@link #rented}); one at the block's start (a small
     * file read whole, a file read in order) loads the whole block, as every miss does under
     * {@code BLOCK}. Returns an owned buffer.
     */
    private CompletableFuture<ByteBuf> smallRead(ChunkAddress chunk, IoOptions io, int index, int b, long offset, int length) {
        BlockKey k = new BlockKey(chunk.id().inode().value(), io.dataVersion(), chunk.id().index(), index);
        CacheHints h = io.cache();
        ByteBuf m = memory.get(k);
        CompletableFuture<ByteBuf> whole;
        if (m != null) {
            whole = memoryHit(k, h, m);
        } else {
            metrics.miss(L1Metrics.Tier.MEMORY);
            boolean joining = inflight.containsKey(k);
            BlockEntry e = joining || nvme == null ? null : nvme.lookup(k, h.pin(), ttlNanos(h));
            if (e != null) {
                int from = (int) (offset - (long) index * b);
                return nvme.readRange(e, from, length).thenCompose(buf -> {
                    if (buf != null) {
                        metrics.hit(L1Metrics.Tier.NVME, buf.readableBytes());
                        return CompletableFuture.completedFuture(buf);
                    }
                    // unusable (dropped and counted): the whole block from below
                    return slice(shared(k, chunk, io, b, false), index, b, offset, length);
                });
            }
            // a miss at a block's start loads the block, as does any miss under "block": a small
            // file read whole, or a file read in order (the rest of the block follows, or the
            // file ends in it); a miss inside a block rents its range first (see #rented)
            if (!joining && config.smallMiss() == L1Config.SmallMiss.RANGE && offset != (long) index * b) {
                AtomicLong paid = rented.get(k, x -> new AtomicLong());
                if (paid.get() < b) {
                    paid.addAndGet(Math.max(length, RANGE_COST_FLOOR));
                    if (nvme != null) {
                        metrics.miss(L1Metrics.Tier.NVME);
                    }
                    return rangeBelow(chunk, io, offset, length);
                }
                rented.invalidate(k); // the ranges cost as much as the block: load it whole, cached
            }
            whole = shared(k, chunk, io, b, joining); // not joining: NVMe was just looked at
        }
        return slice(whole, index, b, offset, length);
    }

    /** A small miss's own bytes from the tier below, not cached (see {@link L1Config.SmallMiss}). Owned. */
    private CompletableFuture<ByteBuf> rangeBelow(ChunkAddress chunk, IoOptions io, long offset, int length) {
        return readBelow(chunk, io, offset, length).thenApply(buf -> {
            metrics.rangeReads.increment();
            metrics.hit(L1Metrics.Tier.BELOW, buf.readableBytes());
            return buf;
        });
    }

    /** [offset, offset+length) from the tier below (owned); a failure counts as a miss there. */
    private CompletableFuture<ByteBuf> readBelow(ChunkAddress chunk, IoOptions io, long offset, int length) {
        CompletableFuture<ByteBuf> r;
        try {
            r = below.readAsync(chunk, offset, length, io);
        } catch (RuntimeException e) {
            r = CompletableFuture.failedFuture(e);
        }
        return r.whenComplete((buf, err) -> {
            if (err != null) {
                metrics.miss(L1Metrics.Tier.BELOW);
            }
        });
    }

    /** The range [offset, offset+length) of a whole block (released here); an owned buffer. */
    private static CompletableFuture<ByteBuf> slice(CompletableFuture<ByteBuf> block, int index, int b, long offset, int length) {
        return block.thenApply(blk -> {
            try {
                return assemble(new ByteBuf[] {blk}, index, b, offset, length);
            } finally {
                blk.release();
            }
        });
    }

    private CompletableFuture<ByteBuf> memoryHit(BlockKey k, CacheHints h, ByteBuf m) {
        metrics.hit(L1Metrics.Tier.MEMORY, m.readableBytes());
        if (nvme != null) {
            nvme.recordAccess(k, h.pin(), ttlNanos(h));
        }
        return CompletableFuture.completedFuture(m);
    }

    /** One block, with a reference for the caller (owned). */
    private CompletableFuture<ByteBuf> block(ChunkAddress chunk, IoOptions io, int index, int b) {
        BlockKey k = new BlockKey(chunk.id().inode().value(), io.dataVersion(), chunk.id().index(), index);
        CacheHints h = io.cache();
        ByteBuf m = memory.get(k);
        if (m != null) {
            return memoryHit(k, h, m);
        }
        metrics.miss(L1Metrics.Tier.MEMORY);
        return shared(k, chunk, io, b, true);
    }

    /**
     * The block loaded once however many reads want it: joins a load in flight, else starts one
     * (from NVMe when {@code lookNvme} and it is there, else from below). Owned.
     */
    private CompletableFuture<ByteBuf> shared(BlockKey k, ChunkAddress chunk, IoOptions io, int b, boolean lookNvme) {
        CompletableFuture<ByteBuf> mine = new CompletableFuture<>();
        CompletableFuture<ByteBuf> other = inflight.putIfAbsent(k, mine);
        if (other != null) {
            // another read is fetching this block: share its result, or start over if it is gone already
            return other.thenCompose(buf -> {
                try {
                    return CompletableFuture.completedFuture(buf.retain());
                } catch (IllegalReferenceCountException released) {
                    inflight.remove(k, other);
                    return shared(k, chunk, io, b, lookNvme);
                }
            });
        }
        load(k, chunk, io, b, mine, lookNvme);
        return mine;
    }

    private record Fetched(ByteBuf data, L1Metrics.Tier tier) {
    }

    private void load(BlockKey k, ChunkAddress chunk, IoOptions io, int b, CompletableFuture<ByteBuf> mine, boolean lookNvme) {
        CacheHints h = io.cache();
        long ttl = ttlNanos(h);
        Epochs.Stamp stamp = epochs.stamp(k.inode(), k.chunk());
        CompletableFuture<Fetched> src;
        try {
            BlockEntry e = nvme == null || !lookNvme ? null : nvme.lookup(k, h.pin(), ttl);
            if (e != null) {
                src = nvme.read(e).thenCompose(buf -> {
                    if (buf != null) {
                        return CompletableFuture.completedFuture(new Fetched(buf, L1Metrics.Tier.NVME));
                    }
                    metrics.miss(L1Metrics.Tier.NVME);
                    return fetchBelow(chunk, io, k.block(), b);
                });
            } else {
                if (nvme != null) {
                    metrics.miss(L1Metrics.Tier.NVME);
                }
                src = fetchBelow(chunk, io, k.block(), b);
            }
        } catch (RuntimeException ex) {
            src = CompletableFuture.failedFuture(ex);
        }
        src.whenComplete((f, err) -> {
            if (err != null) {
                inflight.remove(k, mine);
                mine.completeExceptionally(StrataException.wrap(err));
                return;
            }
            ByteBuf blk = f.data().asReadOnly();
            metrics.hit(f.tier(), blk.readableBytes());
            if (!closed) {
                epochs.ifCurrent(stamp, () -> memory.put(k, blk, ttl));
                if (f.tier() == L1Metrics.Tier.BELOW && nvme != null && stamp.cacheable() && blk.isReadable()) {
                    nvme.offer(k, blk, stamp, h.pin(), ttl);
                }
            }
            // out of the map first: a read arriving from now on starts afresh; the ones already
            // attached run inside complete(), while this loader still holds its reference
            inflight.remove(k, mine);
            mine.complete(blk);
        });
    }

    /** Fetches block {@code index} from the tier below into an exact-size unpooled buffer. */
    private CompletableFuture<Fetched> fetchBelow(ChunkAddress chunk, IoOptions io, int index, int b) {
        return readBelow(chunk, io, (long) index * b, b).thenApply(buf -> {
            try {
                int n = Math.min(b, buf.readableBytes());
                ByteBuf copy = BlockBuf.allocate(n);
                copy.writeBytes(buf, buf.readerIndex(), n);
                return new Fetched(copy, L1Metrics.Tier.BELOW);
            } finally {
                buf.release();
            }
        });
    }

    // ---- writes ----

    @Override
    public CompletableFuture<Void> writeAsync(ChunkAddress chunk, long offset, ByteBuf data, IoOptions io) {
        int n = data.readableBytes();
        try {
            checkOpen();
            chunk.checkRange(offset, n);
            CacheHints h = io.cache();
            if (h.writeBack() && n <= config.writeBack().smallWriteMax().bytes() && writeBack.absorb(chunk, offset, data, io)) {
                return CompletableFuture.completedFuture(null);
            }
            if (!h.cacheData()) {
                metrics.bypass.increment();
            }
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return flushIfPending(chunk.id().inode().value()).thenCompose(v -> mutate(chunk, io, () -> below.writeAsync(chunk, offset, data, io)));
    }

    @Override
    public CompletableFuture<Void> truncateAsync(ChunkAddress chunk, long length, IoOptions io) {
        try {
            checkOpen();
            if (length < 0 || length > chunk.chunkSize()) {
                chunk.checkRange(0, length);
            }
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return flushIfPending(chunk.id().inode().value()).thenCompose(v -> mutate(chunk, io, () -> below.truncateAsync(chunk, length, io)));
    }

    @Override
    public CompletableFuture<Void> removeAsync(ChunkAddress chunk, IoOptions io) {
        try {
            checkOpen();
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return flushIfPending(chunk.id().inode().value()).thenCompose(v -> mutate(chunk, io, () -> below.removeAsync(chunk, io)));
    }

    /** The file's chunks below, once its absorbed writes are flushed (a chunk only absorbed here exists too). */
    @Override
    public CompletableFuture<long[]> chunksOfAsync(FileChunks file, long fromIndex, IoOptions io) {
        try {
            checkOpen();
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return flushIfPending(file.inode().value()).thenCompose(v -> below.chunksOfAsync(file, fromIndex, io));
    }

    /**
     * Flushes the file's absorbed writes to the tier below, then asks the tier below to make the
     * file durable ({@link Tier#flushAsync}). Fails if any write absorbed before the call could not
     * be written (the writes are kept and retried by the next flush).
     */
    @Override
    public CompletableFuture<Void> flushAsync(InodeId inode, IoOptions io) {
        try {
            checkOpen();
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return writeBack.flush(inode.value()).thenCompose(v -> below.flushAsync(inode, io));
    }

    private CompletableFuture<Void> flushIfPending(long inode) {
        return writeBack.hasPending(inode) ? writeBack.flush(inode) : CompletableFuture.completedFuture(null);
    }

    /**
     * Runs a change of the chunk on the tier below: its cached blocks (under the change's data
     * version) are dropped from memory and, durably, from NVMe first, and no fetch overlapping the
     * change may cache what it read.
     */
    private CompletableFuture<Void> mutate(ChunkAddress chunk, IoOptions io, Supplier<CompletableFuture<Void>> change) {
        long inode = chunk.id().inode().value();
        int index = chunk.id().index();
        int b = blockSize(chunk);
        int n = chunk.chunkSize() / b;
        List<BlockKey> keys = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            keys.add(new BlockKey(inode, io.dataVersion(), index, i));
        }
        List<List<BlockEntry>> removed = new ArrayList<>(1);
        epochs.begin(inode, index, () -> {
            for (BlockKey k : keys) {
                memory.invalidate(k);
            }
            removed.add(nvme == null ? List.of() : nvme.remove(keys));
        });
        CompletableFuture<Void> r;
        try {
            r = (nvme == null ? CompletableFuture.<Void>completedFuture(null) : nvme.deleteAsync(removed.get(0), true))
                    .thenCompose(v -> change.get());
        } catch (RuntimeException e) {
            r = CompletableFuture.failedFuture(e);
        }
        return r.whenComplete((v, e) -> epochs.end(inode, index));
    }

    // ---- a file's content from the client that wrote it ----

    /**
     * L1 as {@link WrittenContent}: a small file (up to {@link #KEPT_WRITTEN_MAX} or one block,
     * and a sixteenth of memory) that this node's client wrote whole and published is put in
     * memory under its new data version, block by block as fetches from below would have put it,
     * so that reading it back here (a small file created and then read, a dataset written and
     * then loaded) needs no fetch. Memory only: NVMe fills from reads, as before.
     */
    private final WrittenContent writtenContent = new WrittenContent() {
        @Override
        public int maxBytes() {
            long max = Math.min(Math.max(KEPT_WRITTEN_MAX, config.blockSize().bytes()), config.memory().bytes() / 16);
            return closed ? 0 : (int) max;
        }

        @Override
        public void published(InodeId inode, int chunkSize, ByteBuf content, IoOptions io) {
            keepWritten(inode.value(), chunkSize, content, io);
        }
    };

    /**
     * Splits {@code content} (borrowed), the whole file at {@code io.dataVersion()}, into the
     * blocks a read would fetch (a block is the chunk's bytes in its range, shorter where the file
     * ends) and puts them in memory, each unless a change of its chunk is in flight here.
     */
    private void keepWritten(long inode, int chunkSize, ByteBuf content, IoOptions io) {
        int len = content.readableBytes();
        if (closed || !io.cache().cacheData() || len == 0 || len > writtenContent.maxBytes()) {
            return;
        }
        long ttl = ttlNanos(io.cache());
        int b = Math.min(config.blockSize().toIntExact(), chunkSize);
        int pos = 0;
        while (pos < len) {
            int chunk = pos / chunkSize;
            int block = (pos - chunk * chunkSize) / b;
            int n = (int) Math.min(Math.min(b, (long) (chunk + 1) * chunkSize - pos), len - pos);
            BlockKey k = new BlockKey(inode, io.dataVersion(), chunk, block);
            ByteBuf blk = BlockBuf.allocate(n);
            try {
                blk.writeBytes(content, content.readerIndex() + pos, n);
                ByteBuf ro = blk.asReadOnly();
                if (epochs.ifCurrent(epochs.stamp(inode, chunk), () -> memory.put(k, ro, ttl))) {
                    metrics.keptWrittenBytes.increment(n);
                }
            } finally {
                blk.release();
            }
            pos += n;
        }
    }

    // ---- stats and drop (strata cache stat|drop) ----

    /** L1 exposes {@link CacheControl} and {@link WrittenContent}. */
    @Override
    public <T> Optional<T> facet(Class<T> type) {
        if (type == CacheControl.class) {
            return Optional.of(type.cast(cacheControl));
        }
        return type == WrittenContent.class ? Optional.of(type.cast(writtenContent)) : Optional.empty();
    }

    /**
     * L1 as {@link CacheControl}. Keys of the cache report: {@code memory.bytes|blocks|capacity},
     * {@code nvme.bytes|blocks|capacity}, {@code pinned.bytes}, {@code hits.memory|nvme},
     * {@code misses}, {@code hit-ratio}, {@code evictions.memory|nvme}, {@code corruptions},
     * {@code writeback.bytes|writes|files|oldest-ms}; of a file's report: {@code memory.blocks|bytes},
     * {@code nvme.blocks|bytes}, {@code pinned.bytes}, {@code writeback.writes|bytes}.
     */
    private final CacheControl cacheControl = new CacheControl() {
        @Override
        public String name() {
            return config.name();
        }

        @Override
        public Map<String, Object> report() {
            L1Stats s = stats();
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("memory.bytes", s.memoryBytes());
            v.put("memory.blocks", s.memoryBlocks());
            v.put("memory.capacity", s.memoryCapacity());
            v.put("nvme.bytes", s.nvmeBytes());
            v.put("nvme.blocks", s.nvmeBlocks());
            v.put("nvme.capacity", s.nvmeCapacity());
            v.put("pinned.bytes", s.pinnedBytes());
            v.put("hits.memory", s.memoryHits());
            v.put("hits.nvme", s.nvmeHits());
            v.put("misses", s.belowReads());
            v.put("hit-ratio", String.format(java.util.Locale.ROOT, "%.4f", s.hitRatio()));
            v.put("evictions.memory", (long) metrics.evictions(L1Metrics.Tier.MEMORY));
            v.put("evictions.nvme", (long) metrics.evictions(L1Metrics.Tier.NVME));
            v.put("corruptions", s.corruptions());
            v.put("writeback.bytes", s.unflushedBytes());
            v.put("writeback.writes", s.unflushedWrites());
            v.put("writeback.files", s.unflushedFiles());
            v.put("writeback.oldest-ms", s.oldestUnflushed().toMillis());
            return v;
        }

        @Override
        public Map<String, Object> report(InodeId inode) {
            FileStats f = stats(inode);
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("memory.blocks", f.memoryBlocks());
            v.put("memory.bytes", f.memoryBytes());
            v.put("nvme.blocks", f.nvmeBlocks());
            v.put("nvme.bytes", f.nvmeBytes());
            v.put("pinned.bytes", f.pinnedBytes());
            v.put("writeback.writes", f.unflushedWrites());
            v.put("writeback.bytes", f.unflushedBytes());
            return v;
        }

        @Override
        public CompletableFuture<Void> dropAsync(InodeId inode) {
            return L1Tier.this.dropAsync(inode);
        }

        @Override
        public CompletableFuture<Void> dropAllAsync() {
            return L1Tier.this.dropAllAsync();
        }
    };

    /** What the cache holds and has served since it opened. */
    public L1Stats stats() {
        return new L1Stats(memory.weightedBytes(), memory.blocks(), config.memory().bytes(),
                nvme == null ? 0 : nvme.usedBytes(), nvme == null ? 0 : nvme.blockCount(),
                config.nvme().map(n -> n.capacity().bytes()).orElse(0L), nvme == null ? 0 : nvme.pinnedBytes(),
                (long) metrics.hits(L1Metrics.Tier.MEMORY), (long) metrics.hits(L1Metrics.Tier.NVME),
                (long) metrics.hits(L1Metrics.Tier.BELOW), (long) totalCorruptions(),
                writeBack.bufferedBytes(), writeBack.pendingWrites(), writeBack.pendingFiles(), writeBack.oldestAge());
    }

    private double totalCorruptions() {
        double n = 0;
        for (String kind : List.of("crc", "missing", "short", "io")) {
            n += metrics.count("strata.l1.corruptions", "kind", kind);
        }
        return n;
    }

    /** What the cache holds of one file (all data versions). */
    public FileStats stats(InodeId inode) {
        long i = inode.value();
        long[] m = memory.usage(k -> k.inode() == i);
        long[] d = nvme == null ? new long[3] : nvme.usage(k -> k.inode() == i);
        long[] p = writeBack.pending(i);
        return new FileStats(inode, m[0], m[1], d[0], d[1], d[2], p[0], p[1]);
    }

    /**
     * Empties the cache of one file: its absorbed writes are flushed first (a drop never loses a
     * write; it fails if they cannot be flushed), then its blocks leave memory and NVMe.
     */
    public CompletableFuture<Void> dropAsync(InodeId inode) {
        long i = inode.value();
        return flushIfPending(i).thenCompose(v -> {
            memory.removeIf(k -> k.inode() == i);
            return nvme == null ? CompletableFuture.<Void>completedFuture(null) : nvme.deleteAsync(nvme.removeIf(k -> k.inode() == i), true);
        });
    }

    /** Empties the whole cache, after flushing every absorbed write. */
    public CompletableFuture<Void> dropAllAsync() {
        return writeBack.flushAll().thenCompose(v -> {
            memory.clear();
            return nvme == null ? CompletableFuture.<Void>completedFuture(null) : nvme.deleteAsync(nvme.removeIf(k -> true), true);
        });
    }

    /**
     * Runs the periodic maintenance now: TTL expiry in memory and on NVMe, the free-space floor,
     * and an index flush. Completes when done (it also runs every {@code sweep-interval}).
     */
    public CompletableFuture<Void> sweepAsync() {
        memory.cleanUp();
        return nvme == null ? CompletableFuture.completedFuture(null) : nvme.sweep();
    }

    private void sweepQuietly() {
        try {
            sweepAsync();
        } catch (RuntimeException e) {
            LOG.warn("L1: maintenance failed: {}", e.toString());
        }
    }

    /**
     * Completes once every block offered to the NVMe tier so far has been written there (or
     * refused); at once without an NVMe tier. For benchmarks and tools that want a settled cache.
     */
    public CompletableFuture<Void> drainAsync() {
        return nvme == null ? CompletableFuture.completedFuture(null) : nvme.barrier();
    }

    // package-private views for tests
    NvmeStore nvme() {
        return nvme;
    }

    L1Metrics metrics() {
        return metrics;
    }

    private void checkOpen() {
        if (closed) {
            throw new StrataException(Status.SHUTTING_DOWN, "L1 cache " + config.name() + " is closed");
        }
    }

    /**
     * Flushes every absorbed write to the tier below (waiting up to {@code close-timeout}), then
     * closes the caches; the NVMe tier keeps its blocks for the next open. Throws, after closing,
     * if absorbed writes could not be flushed (they are lost, and the exception names the files).
     * Does not close the tier below.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        sweeper.cancel(false);
        List<String> lost = writeBack.close();
        if (nvme != null) {
            nvme.close();
        }
        memory.clear();
        metrics.close();
        if (!lost.isEmpty()) {
            LOG.error("L1 {}: absorbed writes lost at close: {}", config.name(), lost);
            throw new StrataException(Status.IO_ERROR, "L1 " + config.name() + " closed with unflushed writes (lost): "
                    + String.join("; ", lost));
        }
    }
}
