package io.strata.storage.engine;

import io.strata.protocol.storage.Applied;
import io.strata.core.util.Crc32c;
import io.strata.protocol.storage.UpdateKind;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.fault.FaultPoint;
import io.strata.core.fault.FaultScope;
import io.strata.core.tier.ChunkAddress;
import io.strata.store.BlockCrcs;
import io.strata.store.ChannelIo;
import io.strata.store.CheckedReads;
import io.strata.store.IndexEnv;
import io.strata.store.StoreDir;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import org.lmdbjava.CursorIterable;
import org.lmdbjava.Dbi;
import org.lmdbjava.Txn;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The chunk store of one target (one directory on one disk).
 *
 * <p><b>Design.</b> Chunk data lives in files, one file per chunk <em>version</em>
 * ({@code chunks/}, see {@link FilePool}); chunk metadata lives in LMDB ({@code meta/}, see
 * {@link ChunkMeta}). An update never touches the bytes of an existing version: it writes the
 * new version into a fresh file (copying the untouched ranges of the committed version with
 * {@code FileChannel.transferTo}, i.e. in the kernel; a write that covers the whole chunk copies
 * nothing), fdatasyncs it, and only then records it in LMDB through the {@link GroupCommitter}.
 * A crash at any point therefore leaves the old version intact and referenced; a half-written
 * new file is unreferenced and reclaimed at the next open. That is copy-on-write at chunk
 * granularity; docs/internals/chunk-engine.md explains the choice and its cost.
 *
 * <p>Every version keeps a CRC32C per {@link #BLOCK} block and one for the whole content
 * (combined from the block CRCs). Reads check the blocks they touch; a mismatch, or a data file
 * that vanished, is {@code CHUNK_CORRUPT} and counted in {@code strata.storage.corruptions}.
 *
 * <p>From local-store the engine takes its directory ({@link StoreDir}: {@code target.lock},
 * the {@code target.properties} identity), its LMDB environment ({@link IndexEnv}, never wiped:
 * it is the durable truth), its CRC helpers and its checked reads; the copy-on-write versions,
 * the file pool and the group commit are its own.
 *
 * <p>Threading: the engine does not serialise updates of one chunk; its caller (the CRAQ layer)
 * does, per chunk. Blocking work runs on the executor given at open.
 */
public final class ChunkEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChunkEngine.class);

    /** Checksum block size. */
    public static final int BLOCK = 64 * 1024;
    /** Fires after half of a new version's payload is written (a crash here must leave no torn chunk). */
    public static final FaultPoint DATA_WRITE = FaultPoint.of("chunk.data-write");
    /** Fires before a new version's data file is fdatasync'ed. */
    public static final FaultPoint DATA_SYNC = FaultPoint.of("chunk.data-sync");
    /** Fires before a version's data is read. */
    public static final FaultPoint READ = FaultPoint.of("chunk.read");
    /**
     * Fires before an update's removal (a tombstone version) is recorded. A removal writes no data
     * file, so neither {@link #DATA_WRITE} nor {@link #DATA_SYNC} fires for it: this is where a
     * test makes the store of a REMOVE fail (the fault injector does nothing unless armed).
     */
    public static final FaultPoint REMOVAL = FaultPoint.of("chunk.removal");

    private static final BlockCrcs CRCS = new BlockCrcs(BLOCK);

    private final TargetId target;
    private final Path dir;
    private final NodeContext ctx;
    private final EngineOptions options;
    private final Executor io;
    private final StoreDir store;
    private final IndexEnv env;
    private final Dbi<ByteBuffer> dbi;
    private final FilePool files;
    private final GroupCommitter committer;
    private final Counter corruptions;
    private final Counter copiedBytes;
    private final FaultScope scope;
    /**
     * Commit records accepted but not yet in LMDB (see {@link #commitAsync}): the newest metadata
     * of those chunks. An entry leaves once its change is written.
     */
    private final ConcurrentHashMap<ChunkId, ChunkMeta> unwritten = new ConcurrentHashMap<>();
    private final Timer writeTime;
    private final ThreadLocal<ByteBuffer> keys = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(12));
    /** Consecutive failed writes / reads with an I/O error (a success of the same kind resets its count). */
    private final java.util.concurrent.atomic.AtomicInteger writeErrors = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger readErrors = new java.util.concurrent.atomic.AtomicInteger();
    private volatile int ioErrorLimit = Integer.MAX_VALUE;
    private volatile java.util.function.Consumer<TargetId> onFailed = t -> { };
    private volatile String failedBecause;
    private volatile boolean closed;

    private ChunkEngine(TargetId target, Path dir, NodeContext ctx, EngineOptions options, Executor io) throws IOException {
        this.target = target;
        this.dir = dir;
        this.ctx = ctx;
        this.options = options;
        this.io = io;
        this.scope = FaultScope.detail(target.toString());
        this.store = StoreDir.open(dir, "target.lock", target + ": " + dir + " is in use by another process",
                new StoreDir.Identity("target.properties", "target", String.valueOf(target.value()), "Strata target directory"));
        IndexEnv meta = null;
        try {
            meta = IndexEnv.open(dir.resolve("meta"), options.metaMapSize().bytes(), IndexEnv.Sync.NO_META_SYNC, 2, 512);
            this.env = meta;
            this.dbi = env.db("chunks");
            Set<Long> referenced = new HashSet<>();
            int chunks = 0;
            for (ChunkMeta m : scan()) {
                chunks++;
                if (m.committed() != null && m.committed().file() != 0) {
                    referenced.add(m.committed().file());
                }
                if (m.pending() != null && m.pending().file() != 0) {
                    referenced.add(m.pending().file());
                }
            }
            this.files = new FilePool(dir.resolve("chunks"), referenced, io, options.poolLow(), options.poolHigh());
            String t = String.valueOf(target.value());
            this.corruptions = Counter.builder("strata.storage.corruptions").description("chunk reads that failed their CRC32C check")
                    .tag("target", t).register(ctx.meters());
            this.copiedBytes = Counter.builder("strata.storage.cow.copied.bytes")
                    .description("bytes of committed versions copied into new versions (copy-on-write cost)")
                    .baseUnit("bytes").tag("target", t).register(ctx.meters());
            this.writeTime = Timer.builder("strata.storage.engine.write")
                    .description("writing one chunk version's data file, fdatasync included").tag("target", t).register(ctx.meters());
            this.committer = new GroupCommitter(target, ctx, env, dbi, files, options.maxBatch());
            LOG.info("{}: {} open at {} ({} chunks)", ctx.name(), target, dir, chunks);
        } catch (RuntimeException | IOException e) {
            if (meta != null) {
                meta.close();
            }
            store.close();
            throw e;
        }
    }

    /** Opens (creating when new) the target directory {@code dir}; blocking work runs on {@code io}. */
    public static ChunkEngine open(TargetId target, Path dir, NodeContext ctx, EngineOptions options, Executor io) {
        try {
            return new ChunkEngine(target, dir, ctx, options, io);
        } catch (IOException e) {
            throw new StrataException(Status.IO_ERROR, target + ": cannot open " + dir + ": " + e.getMessage(), e);
        }
    }

    public TargetId target() {
        return target;
    }

    public Path dir() {
        return dir;
    }

    public EngineOptions options() {
        return options;
    }

    // ---- health ----

    /**
     * Takes the target out of service after {@code limit} consecutive updates (or reads) that
     * failed with an I/O error ({@code IO_ERROR}; a full disk or a corrupt chunk does not count):
     * from then on every update and read fails with {@code IO_ERROR}, and {@code onFailed} runs
     * once (on the failing thread; it must not block).
     */
    public void watchHealth(int limit, java.util.function.Consumer<TargetId> listener) {
        if (limit < 1) {
            throw new IllegalArgumentException("I/O error limit must be at least 1, got " + limit);
        }
        this.onFailed = listener;
        this.ioErrorLimit = limit;
    }

    /** Why the target was taken out of service; empty while it is healthy. */
    public Optional<String> failure() {
        return Optional.ofNullable(failedBecause);
    }

    private void checkHealthy() {
        String why = failedBecause;
        if (why != null) {
            throw new StrataException(Status.IO_ERROR, target + " is out of service: " + why);
        }
    }

    /** Counts one outcome of an update ({@code write}) or a read. */
    private void noteIo(boolean write, Throwable err) {
        java.util.concurrent.atomic.AtomicInteger count = write ? writeErrors : readErrors;
        if (err == null) {
            count.set(0);
            return;
        }
        StrataException se = StrataException.wrap(StrataException.unwrapCompletion(err));
        if (se.status() != Status.IO_ERROR || closed || failedBecause != null) {
            return;
        }
        int n = count.incrementAndGet();
        if (n >= ioErrorLimit) {
            synchronized (this) {
                if (failedBecause != null) {
                    return;
                }
                failedBecause = n + " consecutive " + (write ? "writes" : "reads") + " failed with I/O errors, the last: " + se.getMessage();
            }
            LOG.error("{}: {} taken out of service: {}", ctx.name(), target, failedBecause);
            try {
                onFailed.accept(target);
            } catch (RuntimeException e) {
                LOG.warn("{}: failure listener of {} failed: {}", ctx.name(), target, e.toString());
            }
        }
    }

    /** Number of {@link #BLOCK} blocks that hold {@code length} bytes. */
    public static int blocks(long length) {
        return (int) ((length + BLOCK - 1) / BLOCK);
    }

    // ---- metadata ----

    /** The chunk's metadata, when the target has any (blocking: an LMDB read). */
    public Optional<ChunkMeta> find(ChunkId id) {
        checkOpen();
        ChunkMeta newest = unwritten.get(id);
        if (newest != null) {
            return Optional.of(newest);
        }
        try (Txn<ByteBuffer> txn = env.txnRead()) {
            ByteBuffer v = dbi.get(txn, ChunkMeta.key(id, keys.get()));
            return v == null ? Optional.empty() : Optional.of(ChunkMeta.decode(id, v)); // decoded inside the txn
        }
    }

    /** The chunk's metadata, or an absent chunk of {@code chunkSize}. */
    public ChunkMeta meta(ChunkId id, int chunkSize) {
        return find(id).orElseGet(() -> ChunkMeta.absent(id, chunkSize));
    }

    /** Every chunk's metadata (blocking; for recovery, resync and tests). */
    public List<ChunkMeta> scan() {
        List<ChunkMeta> out = new ArrayList<>();
        try (Txn<ByteBuffer> txn = env.txnRead(); CursorIterable<ByteBuffer> it = dbi.iterate(txn)) {
            for (CursorIterable.KeyVal<ByteBuffer> kv : it) {
                out.add(ChunkMeta.decode(ChunkMeta.keyToId(kv.key()), kv.val()));
            }
        }
        return out;
    }

    /**
     * Up to {@code limit} chunks' metadata in key order (inode, then index), starting after
     * {@code after} (from the first chunk when empty). Blocking: one LMDB read transaction.
     * Commit records not yet written are included (their newest state).
     */
    public List<ChunkMeta> scan(Optional<ChunkId> after, int limit) {
        checkOpen();
        List<ChunkMeta> out = new ArrayList<>();
        ByteBuffer from = after.map(id -> ChunkMeta.key(id, ByteBuffer.allocateDirect(12))).orElse(null);
        try (Txn<ByteBuffer> txn = env.txnRead();
             CursorIterable<ByteBuffer> it = dbi.iterate(txn, from == null ? org.lmdbjava.KeyRange.all()
                     : org.lmdbjava.KeyRange.greaterThan(from))) {
            for (CursorIterable.KeyVal<ByteBuffer> kv : it) {
                if (out.size() >= limit) {
                    break;
                }
                ChunkId id = ChunkMeta.keyToId(kv.key());
                ChunkMeta newest = unwritten.get(id);
                out.add(newest != null ? newest : ChunkMeta.decode(id, kv.val()));
            }
        }
        return out;
    }

    /**
     * The indexes of {@code inode}'s chunks at or past {@code fromIndex}, ascending, at most
     * {@code limit}: chunks with a pending version or a committed version that is not a removal
     * (a tombstone is a chunk already removed). Blocking: one LMDB read transaction over the
     * inode's key range only, so it costs what the inode holds, not what the target holds.
     */
    public List<Integer> indexesOf(io.strata.core.InodeId inode, int fromIndex, int limit) {
        checkOpen();
        List<Integer> out = new ArrayList<>();
        ByteBuffer from = ChunkMeta.key(new ChunkId(inode, fromIndex), ByteBuffer.allocateDirect(12));
        ByteBuffer to = ChunkMeta.key(new ChunkId(inode, ChunkId.MAX_INDEX), ByteBuffer.allocateDirect(12));
        try (Txn<ByteBuffer> txn = env.txnRead();
             CursorIterable<ByteBuffer> it = dbi.iterate(txn, org.lmdbjava.KeyRange.closed(from, to))) {
            for (CursorIterable.KeyVal<ByteBuffer> kv : it) {
                if (out.size() >= limit) {
                    break;
                }
                ChunkId id = ChunkMeta.keyToId(kv.key());
                ChunkMeta newest = unwritten.get(id);
                ChunkMeta m = newest != null ? newest : ChunkMeta.decode(id, kv.val());
                ChunkVersion c = m.committed();
                if (m.pending() != null || (c != null && !c.removed())) {
                    out.add(id.index());
                }
            }
        }
        return out;
    }

    // ---- resync ----

    /**
     * Makes the chunk hold exactly one committed version, {@code like} (its number, length,
     * CRC32C, request id and removed flag), with {@code data} as its content, {@code recent} as
     * its remembered request ids and {@code chainVersion} as the chain version of its last
     * update; any other version of {@code base} is dropped. This is resync's full-chunk replace:
     * the chunk becomes a copy of the predecessor's. The content is checked against
     * {@code like.crc()} ({@code CHECKSUM_MISMATCH}, nothing changed, when it differs). Durable
     * when the future completes.
     *
     * <p>{@code data} is <b>borrowed</b> until the future completes.
     */
    public CompletableFuture<ChunkMeta> installAsync(ChunkMeta base, int chunkSize, ChunkVersion like, ByteBuf data,
                                                     List<Applied> recent, long chainVersion) {
        try {
            checkOpen();
            checkHealthy();
            if (like.length() > chunkSize || (!like.removed() && data.readableBytes() != like.length())) {
                throw new StrataException(Status.INVALID_ARGUMENT, "resync of chunk " + base.id() + ": " + data.readableBytes()
                        + " bytes for a version of " + like.length() + " in a chunk of " + chunkSize);
            }
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        ChunkMeta shape = new ChunkMeta(base.id(), chunkSize, base.chainVersion(), null, null, List.of());
        return CompletableFuture.supplyAsync(() -> {
            if (like.removed()) {
                return new ChunkVersion(like.version(), 0, 0, 0, new int[0], true, like.request());
            }
            try {
                ChunkVersion v = writeVersion(shape, new Update(UpdateKind.REPLACE, 0, like.length(), like.request()), data, like.version());
                if (v.crc() != like.crc()) {
                    if (v.file() != 0) {
                        files.discard(v.file());
                    }
                    throw new StrataException(Status.CHECKSUM_MISMATCH, "resync copy of chunk " + base.id() + " v" + like.version()
                            + " does not match its CRC32C");
                }
                return v;
            } catch (IOException e) {
                throw new java.util.concurrent.CompletionException(GroupCommitter.mapError(e, false));
            }
        }, io).thenCompose(v -> {
            ChunkMeta next = new ChunkMeta(base.id(), chunkSize, chainVersion, v, null, recent);
            long[] free = java.util.stream.LongStream.of(base.committed() == null ? 0 : base.committed().file(),
                    base.pending() == null ? 0 : base.pending().file()).filter(f -> f != 0 && f != v.file()).toArray();
            return committer.submit(next, true, free).handle((ok, err) -> {
                if (err != null) {
                    if (v.file() != 0 && !(StrataException.unwrapCompletion(err) instanceof GroupCommitter.FlushFailed)) {
                        files.discard(v.file());
                    }
                    throw new java.util.concurrent.CompletionException(StrataException.wrap(err));
                }
                return next;
            });
        }).whenComplete((m, err) -> noteIo(true, err));
    }

    /** Forgets the chunk entirely (resync: a chunk the predecessor does not have). Durable when the future completes. */
    public CompletableFuture<ChunkMeta> dropAsync(ChunkMeta base) {
        try {
            checkOpen();
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        ChunkMeta none = ChunkMeta.absent(base.id(), base.chunkSize());
        long[] free = java.util.stream.LongStream.of(base.committed() == null ? 0 : base.committed().file(),
                base.pending() == null ? 0 : base.pending().file()).filter(f -> f != 0).toArray();
        return committer.submit(none, true, free).thenApply(x -> none);
    }

    // ---- updates ----

    /**
     * Writes version {@code version} of the chunk: {@code update} applied to the committed content
     * of {@code base}. The new version is stored as pending, or directly as committed when
     * {@code commit} (the chain's tail). Completes once data and metadata are durable. Any
     * pending version of {@code base} is replaced.
     *
     * <p>{@code data} is <b>borrowed</b> until the future completes (WRITE and REPLACE read it).
     */
    public CompletableFuture<ChunkMeta> applyAsync(ChunkMeta base, Update update, ByteBuf data, long version,
                                                   long chainVersion, boolean commit) {
        try {
            checkOpen();
            checkHealthy();
            validate(base, update, data);
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return writeAndRecord(base, update, data, version, chainVersion, commit)
                .whenComplete((m, err) -> noteIo(true, err));
    }

    private CompletableFuture<ChunkMeta> writeAndRecord(ChunkMeta base, Update update, ByteBuf data, long version,
                                                        long chainVersion, boolean commit) {
        return CompletableFuture.supplyAsync(() -> {
            long t0 = ctx.clock().nanoTime();
            try {
                return writeVersion(base, update, data, version);
            } catch (IOException e) {
                throw new java.util.concurrent.CompletionException(GroupCommitter.mapError(e, false));
            } finally {
                writeTime.record(ctx.clock().nanoTime() - t0, java.util.concurrent.TimeUnit.NANOSECONDS);
            }
        }, io).thenCompose(v -> {
            ChunkMeta next;
            List<Long> free = new ArrayList<>();
            if (base.pending() != null && base.pending().file() != v.file()) {
                free.add(base.pending().file());
            }
            if (commit) {
                if (base.committed() != null) {
                    free.add(base.committed().file());
                }
                next = base.withCommitted(v, chainVersion);
            } else {
                next = base.withPending(v, chainVersion);
            }
            long[] f = free.stream().mapToLong(Long::longValue).filter(x -> x != 0).toArray();
            return committer.submit(next, true, f).handle((ok, err) -> {
                if (err != null) {
                    if (v.file() != 0 && !(StrataException.unwrapCompletion(err) instanceof GroupCommitter.FlushFailed)) {
                        files.discard(v.file()); // the metadata never named it
                    }
                    throw new java.util.concurrent.CompletionException(StrataException.wrap(err));
                }
                return next;
            });
        });
    }

    /**
     * Promotes the pending version {@code version} of {@code meta} to committed. Durable: completes
     * once the change is flushed. Not durable: visible to this engine at once and written to LMDB
     * with the next group commit, without a flush of its own; a crash may then bring the pending
     * version back, which the CRAQ layer resolves by asking the tail.
     */
    public CompletableFuture<ChunkMeta> commitAsync(ChunkMeta meta, long version, boolean durable) {
        if (meta.pending() == null || meta.pending().version() != version) {
            return CompletableFuture.completedFuture(meta);
        }
        ChunkMeta next = meta.commitPending();
        long old = meta.committed() == null ? 0 : meta.committed().file();
        if (durable) {
            return committer.submit(next, true, old).thenApply(x -> next).whenComplete((m, err) -> noteIo(true, err));
        }
        unwritten.put(next.id(), next);
        committer.submit(next, false, old).whenComplete((x, e) -> unwritten.remove(next.id(), next));
        return CompletableFuture.completedFuture(next);
    }

    private void validate(ChunkMeta base, Update u, ByteBuf data) {
        int size = base.chunkSize();
        if (size < ChunkAddress.MIN_CHUNK_SIZE || size > ChunkAddress.MAX_CHUNK_SIZE || Integer.bitCount(size) != 1) {
            throw new StrataException(Status.INVALID_ARGUMENT, "chunk size " + size + " is not a power of two in [64KiB, 64MiB]");
        }
        long end = switch (u.kind()) {
            case WRITE -> u.offset() + u.length();
            case TRUNCATE, REPLACE -> u.length();
            case REMOVE -> 0;
        };
        if (u.offset() < 0 || u.length() < 0 || end > size || (u.kind() != UpdateKind.WRITE && u.offset() != 0)) {
            throw new StrataException(Status.OFFSET_OUT_OF_RANGE, u.kind() + " [" + u.offset() + ", " + end + ") outside chunk "
                    + base.id() + " of " + size + " bytes");
        }
        if ((u.kind() == UpdateKind.WRITE || u.kind() == UpdateKind.REPLACE) && data.readableBytes() != u.length()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "payload of " + data.readableBytes() + " bytes for a "
                    + u.length() + "-byte " + u.kind());
        }
    }

    private ChunkVersion writeVersion(ChunkMeta base, Update u, ByteBuf data, long version) throws IOException {
        ChunkVersion b = base.committed() == null || base.committed().removed() ? null : base.committed();
        int baseLen = b == null ? 0 : b.length();
        if (u.kind() == UpdateKind.REMOVE) {
            ctx.faults().fire(REMOVAL, scope);
            return new ChunkVersion(version, 0, 0, 0, new int[0], true, u.request());
        }
        int newLen = (int) u.resultLength(baseLen);
        if (newLen == 0) {
            return new ChunkVersion(version, 0, 0, 0, new int[0], false, u.request());
        }
        long file = files.take();
        boolean ok = false;
        boolean keepsBase = b != null && b.file() != 0 && u.kind() != UpdateKind.REPLACE;
        try (FileChannel out = FileChannel.open(files.path(file), StandardOpenOption.READ, StandardOpenOption.WRITE);
             FileChannel in = keepsBase ? openData(base.id(), b) : null) {
            long dataStart = u.kind() == UpdateKind.REPLACE ? 0 : u.offset();
            long dataEnd = u.kind() == UpdateKind.WRITE || u.kind() == UpdateKind.REPLACE ? dataStart + u.length() : 0;
            if (keepsBase) {
                if (u.kind() == UpdateKind.WRITE) {
                    copy(in, out, 0, Math.min(dataStart, baseLen));
                    if (dataEnd < baseLen) {
                        copy(in, out, dataEnd, baseLen - dataEnd);
                    }
                } else {
                    copy(in, out, 0, Math.min(baseLen, newLen));
                }
            }
            if (dataEnd > dataStart) {
                int n = data.readableBytes();
                int half = n / 2;
                ChannelIo.writeFully(out, data, data.readerIndex(), half, dataStart);
                ctx.faults().fire(DATA_WRITE, scope);
                ChannelIo.writeFully(out, data, data.readerIndex() + half, n - half, dataStart + half);
            }
            if (out.size() < newLen) {
                // a truncate that grows the chunk: the new range reads as zeros
                out.write(ByteBuffer.allocate(1), newLen - 1L);
            }
            int[] crcs = blockCrcs(base.id(), b, in, baseLen, u, data, dataStart, dataEnd, out, newLen);
            int whole = combine(crcs, newLen);
            ctx.faults().fire(DATA_SYNC, scope);
            out.force(false);
            ok = true;
            return new ChunkVersion(version, file, newLen, whole, crcs, false, u.request());
        } finally {
            if (!ok) {
                files.discard(file);
            }
        }
    }

    /**
     * The block CRCs of a new version. A block that keeps its bytes and extent keeps its CRC; any
     * other block is read back from the new file and checksummed. When such a block holds bytes
     * copied from the base version ({@code in}, null when none were copied), those bytes are
     * checked against the base's block CRC first: a fresh CRC over corrupt base bytes would make
     * the corruption pass every later check, so a corrupt base fails the update with
     * {@code CHUNK_CORRUPT} instead (the CRAQ layer repairs the chunk from a peer and retries).
     */
    private int[] blockCrcs(ChunkId id, ChunkVersion b, FileChannel in, int baseLen, Update u, ByteBuf data, long dataStart,
                            long dataEnd, FileChannel out, int newLen) throws IOException {
        int nb = blocks(newLen);
        int[] crcs = new int[nb];
        ByteBuf scratch = null;
        try {
            for (int i = 0; i < nb; i++) {
                long bs = (long) i * BLOCK;
                long be = Math.min(bs + BLOCK, newLen);
                if (dataEnd > dataStart && bs >= dataStart && be <= dataEnd) {
                    crcs[i] = Crc32c.of(data, data.readerIndex() + (int) (bs - dataStart), (int) (be - bs));
                } else if (b != null && u.kind() != UpdateKind.REPLACE && be <= baseLen && Math.min(bs + BLOCK, baseLen) == be
                        && (be <= dataStart || bs >= dataEnd || dataEnd == dataStart)) {
                    crcs[i] = b.blockCrc(i); // the block kept its bytes and its extent
                } else {
                    if (scratch == null) {
                        scratch = PooledByteBufAllocator.DEFAULT.directBuffer(BLOCK);
                    }
                    if (in != null && bs < baseLen) {
                        checkBaseBlock(id, b, in, i, scratch);
                    }
                    scratch.clear();
                    ChannelIo.readFully(out, scratch, bs, (int) (be - bs));
                    crcs[i] = Crc32c.of(scratch);
                }
            }
        } finally {
            if (scratch != null) {
                scratch.release();
            }
        }
        return crcs;
    }

    /**
     * The description of version {@code version} whose content is {@code data} (borrowed): its
     * length and block CRCs from the bytes, no data file yet. What {@link #installAsync} takes
     * for a copy fetched from another replica.
     */
    public static ChunkVersion versionOf(long version, ByteBuf data, io.strata.protocol.storage.RequestId request) {
        int n = data.readableBytes();
        int[] crcs = new int[blocks(n)];
        for (int i = 0; i < crcs.length; i++) {
            int at = i * BLOCK;
            crcs[i] = Crc32c.of(data, data.readerIndex() + at, Math.min(BLOCK, n - at));
        }
        return new ChunkVersion(version, 0, n, combine(crcs, n), crcs, false, request);
    }

    /** Checks block {@code i} of base version {@code b} (open as {@code in}) against its CRC; {@code scratch} is reused. */
    private void checkBaseBlock(ChunkId id, ChunkVersion b, FileChannel in, int i, ByteBuf scratch) throws IOException {
        long bs = (long) i * BLOCK;
        scratch.clear();
        int bad;
        try {
            bad = CheckedReads.read(in, scratch, bs, (int) (Math.min(bs + BLOCK, b.length()) - bs), CRCS, b::blockCrc);
        } catch (java.io.EOFException e) {
            bad = i;
        }
        if (bad >= 0) {
            corruptions.increment();
            LOG.error("{}: chunk {} {} block {} fails its CRC32C check (found while updating it)", ctx.name(), id, b, i);
            throw new StrataException(Status.CHUNK_CORRUPT, target + ": chunk " + id + " block " + i + " of " + b
                    + " fails its checksum; the update was not applied");
        }
    }

    /**
     * Reads the whole of version {@code v} and checks every block against its CRC32C, whatever
     * {@code verify-reads} says (the scrubber). Returns the bytes checked; throws
     * {@code CHUNK_CORRUPT} when a block fails its check or the data file is missing or short.
     * Blocking. A version superseded meanwhile may have lost its file: the caller looks at the
     * chunk's metadata again before it believes a missing file.
     */
    public long verify(ChunkId id, ChunkVersion v) {
        checkOpen();
        checkHealthy();
        if (v == null || v.removed() || v.file() == 0 || v.length() == 0) {
            return 0;
        }
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(BLOCK);
        try (FileChannel ch = openData(id, v)) {
            for (int i = 0; i < blocks(v.length()); i++) {
                long bs = (long) i * BLOCK;
                buf.clear();
                int bad;
                try {
                    bad = CheckedReads.read(ch, buf, bs, (int) (Math.min(bs + BLOCK, v.length()) - bs), CRCS, v::blockCrc);
                } catch (java.io.EOFException e) {
                    corruptions.increment();
                    throw new StrataException(Status.CHUNK_CORRUPT, target + ": data file of chunk " + id + " " + v + " is short");
                }
                if (bad >= 0) {
                    corruptions.increment();
                    LOG.error("{}: chunk {} {} block {} fails its CRC32C check (scrub)", ctx.name(), id, v, i);
                    throw new StrataException(Status.CHUNK_CORRUPT, target + ": chunk " + id + " block " + i + " of " + v
                            + " fails its checksum");
                }
            }
            noteIo(false, null);
            return v.length();
        } catch (IOException e) {
            StrataException se = GroupCommitter.mapError(e, false);
            noteIo(false, se);
            throw se;
        } finally {
            buf.release();
        }
    }

    /** The number of chunks the target holds metadata for (one LMDB statistic; cheap). */
    public long chunkCount() {
        checkOpen();
        try (Txn<ByteBuffer> txn = env.txnRead()) {
            return dbi.stat(txn).entries;
        }
    }

    /** The whole-content CRC from the block CRCs. */
    static int combine(int[] crcs, long length) {
        return CRCS.combine(crcs, length);
    }

    private void copy(FileChannel in, FileChannel out, long pos, long count) throws IOException {
        if (count <= 0) {
            return;
        }
        out.position(pos);
        long done = 0;
        while (done < count) {
            long n = in.transferTo(pos + done, count - done, out);
            if (n <= 0) {
                throw new StrataException(Status.CHUNK_CORRUPT, target + ": data file shorter than its version says");
            }
            done += n;
        }
        copiedBytes.increment(count);
    }

    // ---- reads ----

    /**
     * Opens the data file of {@code v} for reading; null when the version holds no bytes. Open it
     * before the version can be replaced: an open file stays readable after it is deleted.
     */
    public FileChannel openData(ChunkId id, ChunkVersion v) throws IOException {
        if (v == null || v.removed() || v.file() == 0) {
            return null;
        }
        try {
            return FileChannel.open(files.path(v.file()), StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            corruptions.increment();
            throw new StrataException(Status.CHUNK_CORRUPT, target + ": data file of chunk " + id + " " + v + " is missing");
        }
    }

    /**
     * Reads up to {@code length} bytes at {@code offset} of version {@code v} from its open data
     * file {@code ch} (borrowed), checking the CRC32C of every block it touches (unless reads are
     * not verified). Returns an <b>owned</b> buffer, shorter than asked at the end of the chunk.
     */
    public ByteBuf read(ChunkId id, ChunkVersion v, FileChannel ch, long offset, int length, ByteBufAllocator alloc) {
        if (v == null || v.removed() || offset >= v.length() || length == 0 || ch == null) {
            return Unpooled.EMPTY_BUFFER;
        }
        checkHealthy();
        try {
            ByteBuf b = readChecked(id, v, ch, offset, length, alloc);
            noteIo(false, null);
            return b;
        } catch (RuntimeException e) {
            noteIo(false, e);
            throw e;
        }
    }

    private ByteBuf readChecked(ChunkId id, ChunkVersion v, FileChannel ch, long offset, int length, ByteBufAllocator alloc) {
        ctx.faults().fire(READ, scope);
        int n = (int) Math.min(length, v.length() - offset);
        long bs = options.verifyReads() ? (offset / BLOCK) * BLOCK : offset;
        long be = options.verifyReads() ? Math.min(((offset + n + BLOCK - 1) / BLOCK) * BLOCK, v.length()) : offset + n;
        ByteBuf buf = alloc.directBuffer((int) (be - bs));
        try {
            int bad;
            try {
                bad = CheckedReads.read(ch, buf, bs, (int) (be - bs), options.verifyReads() ? CRCS : null, v::blockCrc);
            } catch (java.io.EOFException e) {
                corruptions.increment();
                throw new StrataException(Status.CHUNK_CORRUPT, target + ": data file of chunk " + id + " " + v + " is short: " + e.getMessage());
            }
            if (bad >= 0) {
                corruptions.increment();
                LOG.error("{}: chunk {} {} block {} fails its CRC32C check", ctx.name(), id, v, bad);
                throw new StrataException(Status.CHUNK_CORRUPT, target + ": chunk " + id + " block " + bad + " of " + v
                        + " fails its checksum");
            }
            buf.setIndex((int) (offset - bs), (int) (offset - bs) + n);
            return buf;
        } catch (IOException e) {
            buf.release();
            throw GroupCommitter.mapError(e, false);
        } catch (RuntimeException e) {
            buf.release();
            throw e;
        }
    }

    /**
     * The CRC32C of bytes [offset, offset+length) of {@code v} from its stored block CRCs, without
     * reading them; -1 (as a long) when the range does not start and end on block boundaries (or
     * at the end of the content).
     */
    public static long rangeCrc(ChunkVersion v, long offset, int length) {
        if (v == null || v.removed() || length == 0) {
            return 0;
        }
        long end = offset + length;
        if (offset % BLOCK != 0 || (end % BLOCK != 0 && end != v.length()) || end > v.length()) {
            return -1;
        }
        int first = (int) (offset / BLOCK);
        int last = blocks(end);
        int[] crcs = new int[last - first];
        for (int i = first; i < last; i++) {
            crcs[i - first] = v.blockCrc(i);
        }
        return combine(crcs, length) & 0xFFFFFFFFL;
    }

    /** Where a version's data file is (tests that corrupt it on purpose; tools). */
    public Path dataPath(ChunkVersion v) {
        return files.path(v.file());
    }

    int freeFiles() {
        return files.freeCount();
    }

    private void checkOpen() {
        if (closed) {
            throw new StrataException(Status.SHUTTING_DOWN, target + " is closed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        committer.close();
        env.close();
        store.close();
    }
}
