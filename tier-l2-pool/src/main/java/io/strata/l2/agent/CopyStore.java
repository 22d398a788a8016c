package io.strata.l2.agent;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.strata.core.DataSize;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.store.AtomicFiles;
import io.strata.store.ChannelIo;
import io.strata.store.IndexEnv;
import io.strata.store.PrivateFiles;
import io.strata.store.SpaceBudget;
import io.strata.store.StoreDir;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.lmdbjava.CursorIterable;
import org.lmdbjava.Dbi;
import org.lmdbjava.Txn;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The chunk copies an L2 agent holds on its node's disk, on the shared local store: one file per
 * copy ({@code chunks/XX/<inode>-<index>}, the chunk's bytes, updated in place) and an LMDB index
 * ({@code index/}, database {@code copies}: the {@link Copy} record of each chunk). Every record
 * is also kept in memory; the index is its durable mirror. Directories and files are private to
 * the agent's user ({@link PrivateFiles}: 0700 and 0600).
 *
 * <p>Durability: updates reach the page cache; {@link #sync} fdatasyncs the files of one file's
 * copies written since the last sync, then flushes the index ({@code MDB_NOSYNC} otherwise: a
 * process crash loses nothing, the pages are in the kernel). A copy whose file is missing at
 * open (a power loss before its first sync) is forgotten; files no record names are deleted.
 *
 * <p>Space: each present copy reserves its full chunk size. {@link #admit} makes room for a new
 * copy by evicting drained copies, least recently used first (undrained and pinned copies are
 * never evicted), or refuses when the store is full of those.
 *
 * <p>Pins: a prefetch hint's owner pins the copies fetched for it ({@link #pinIfPresent},
 * {@link #recordPinned}); a chunk may be pinned by several owners. The relation is kept in both
 * directions in memory and in database {@code pins} (key: owner, inode, index), loaded at open.
 * {@link #unpin} drops one owner's pins; a copy dropped, or replaced by a copy of another epoch
 * (a staged write over a prefetched copy), loses its pins.
 *
 * <p>Reads and whole changes: every copy has a read/write lock (striped by key, {@link #lockOf}).
 * Reads of a copy's record and bytes ({@link #readCopy}, {@link #read}) hold the read lock, and
 * so do updates in place ({@link #shared}: a read concurrent with a write may see old or new
 * bytes per region, as POSIX allows). What replaces or removes the file as a whole holds the
 * write lock around the file operation and the new record: creating or replacing a copy
 * ({@link #replace}), cutting it ({@link #setLength}), dropping it ({@link #drop}) and evicting
 * it ({@link #admit}); so a reader gets the record and the bytes of one copy, never bytes of
 * another copy, nor an error because a file vanished under it. Reads use cached read channels
 * ({@link #OPEN_FILES} at most, closed when evicted from the cache, when their copy is replaced,
 * cut, dropped or evicted, and at close).
 */
final class CopyStore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CopyStore.class);
    private static final int KEY_BYTES = 12;
    private static final int PIN_KEY_BYTES = 8 + KEY_BYTES;
    private static final ByteBuffer PIN_VALUE = ByteBuffer.allocateDirect(1).put(0, (byte) 1);
    /** Lock stripes: a power of two. */
    private static final int STRIPES = 1024;
    /** Read channels kept open at most. */
    static final int OPEN_FILES = 256;
    /** How long {@link #admit} waits for a copy it would evict while every candidate is being read or written. */
    private static final long ADMIT_WAIT_MILLIS = 10_000;

    /** A chunk: inode and index. Ordered by inode, then index. */
    record Key(long inode, int index) implements Comparable<Key> {
        @Override
        public int compareTo(Key o) {
            int c = Long.compareUnsigned(inode, o.inode);
            return c != 0 ? c : Integer.compare(index, o.index);
        }

        @Override
        public String toString() {
            return "inode-" + Long.toUnsignedString(inode) + ":" + index;
        }
    }

    private final StoreDir dir;
    private final IndexEnv env;
    private final Dbi<ByteBuffer> db;
    private final Dbi<ByteBuffer> pinsDb;
    private final Path chunks;
    private final SpaceBudget budget;
    private final ConcurrentSkipListMap<Key, Copy> copies = new ConcurrentSkipListMap<>();
    private final Map<Key, Long> lastUsed = new ConcurrentHashMap<>();
    /** Copies written since their last fdatasync, with a count of their writes. */
    private final Map<Key, Long> dirty = new ConcurrentHashMap<>();
    private final Set<Key> syncBehindQueued = ConcurrentHashMap.newKeySet();
    private final AtomicLong writes = new AtomicLong();
    private volatile Executor syncBehind;
    private final AtomicLong reserved = new AtomicLong();
    private final AtomicLong evictions = new AtomicLong();
    /** Pins, both ways: the chunks each owner pinned, the owners pinning each chunk. Changed under this store's lock. */
    private final Map<Long, Set<Key>> pinsByOwner = new ConcurrentHashMap<>();
    private final Map<Key, Set<Long>> pinsByChunk = new ConcurrentHashMap<>();
    private final LongSupplier nowMillis;
    private volatile String failure;
    private final ReentrantReadWriteLock[] stripes = new ReentrantReadWriteLock[STRIPES];
    /** Open read channels of copies' files; a removed one closes once no read uses it. */
    private final Cache<Key, OpenFile> openFiles = Caffeine.newBuilder()
            .maximumSize(OPEN_FILES)
            .executor(Runnable::run) // close at once, on the thread that removed it
            .removalListener((Key k, OpenFile f, RemovalCause cause) -> {
                if (f != null) {
                    f.release();
                }
            })
            .build();
    private volatile boolean closed;

    /** A cached read channel, reference counted: the cache holds one reference, each read using it another. */
    private static final class OpenFile {
        final FileChannel channel;
        private final AtomicInteger refs = new AtomicInteger(1);

        OpenFile(FileChannel channel) {
            this.channel = channel;
        }

        boolean retain() {
            for (int r = refs.get(); r > 0; r = refs.get()) {
                if (refs.compareAndSet(r, r + 1)) {
                    return true;
                }
            }
            return false;
        }

        void release() {
            if (refs.decrementAndGet() == 0) {
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // opened for reading only
                }
            }
        }
    }

    private CopyStore(StoreDir dir, IndexEnv env, SpaceBudget budget, LongSupplier nowMillis) {
        this.dir = dir;
        this.env = env;
        this.db = env.db("copies");
        this.pinsDb = env.db("pins");
        this.chunks = dir.path().resolve("chunks");
        this.budget = budget;
        this.nowMillis = nowMillis;
        for (int i = 0; i < STRIPES; i++) {
            stripes[i] = new ReentrantReadWriteLock();
        }
    }

    /** The lock of chunk {@code k}'s copy (shared by the keys of one stripe). */
    ReentrantReadWriteLock lockOf(Key k) {
        long h = k.inode() * 0x9E3779B97F4A7C15L + k.index() * 0xC2B2AE3D27D4EB4FL;
        return stripes[(int) (h ^ (h >>> 32)) & (STRIPES - 1)];
    }

    /**
     * Runs {@code work} holding the copy's write lock: for whole changes of a copy (creating or
     * replacing its file, cutting it) together with the record that describes the result, so no
     * read sees the one without the other. Not to be called holding the copy's read lock.
     */
    <T> T exclusive(Key k, Supplier<T> work) {
        Lock l = lockOf(k).writeLock();
        l.lock();
        try {
            return work.get();
        } finally {
            l.unlock();
        }
    }

    /**
     * Runs {@code work} holding the copy's read lock: for updates in place and their record
     * (concurrent reads may see old or new bytes per region), shut out from whole changes.
     */
    <T> T shared(Key k, Supplier<T> work) {
        Lock l = lockOf(k).readLock();
        l.lock();
        try {
            return work.get();
        } finally {
            l.unlock();
        }
    }

    /**
     * Opens (creating when new) the store in {@code path} for agent {@code nodeId}: at most
     * {@code capacity} bytes of copies, never leaving less than {@code minFree} free on the disk.
     */
    static CopyStore open(Path path, int nodeId, DataSize capacity, DataSize minFree, LongSupplier nowMillis) throws IOException {
        StoreDir d = StoreDir.open(path, "l2.lock", "an L2 agent",
                new StoreDir.Identity("agent.properties", "node-id", Integer.toString(nodeId), "Strata L2 agent store"));
        IndexEnv env = null;
        try {
            env = IndexEnv.open(path.resolve("index"), 1L << 32, IndexEnv.Sync.NO_SYNC, 2, 256);
            PrivateFiles.createDirectories(path.resolve("chunks"));
            CopyStore s = new CopyStore(d, env, new SpaceBudget(capacity.bytes(), minFree.bytes(), SpaceBudget.usableSpace(path)),
                    nowMillis);
            s.load();
            return s;
        } catch (IOException | RuntimeException e) {
            if (env != null) {
                env.close();
            }
            d.close();
            throw e;
        }
    }

    private void load() throws IOException {
        List<Key> forget = new ArrayList<>();
        try (Txn<ByteBuffer> txn = env.txnRead(); CursorIterable<ByteBuffer> it = db.iterate(txn)) {
            for (CursorIterable.KeyVal<ByteBuffer> kv : it) {
                Key k = new Key(kv.key().getLong(0), kv.key().getInt(8));
                Copy c = decode(kv.val());
                if (c == null || (c.present() && !Files.exists(file(k)))) {
                    forget.add(k);
                    continue;
                }
                copies.put(k, c);
                if (c.present()) {
                    reserved.addAndGet(c.chunkSize());
                }
            }
        }
        if (!forget.isEmpty()) {
            LOG.warn("{}: {} copies in the index had no file (never synced before a crash) and are forgotten", dir.path(), forget.size());
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                for (Key k : forget) {
                    db.delete(txn, key(k));
                }
                txn.commit();
            }
        }
        sweepOrphans();
        loadPins();
    }

    /** Loads the pins; a pin of a chunk with no present copy (forgotten above) is deleted. */
    private void loadPins() {
        List<ByteBuffer> stale = new ArrayList<>();
        try (Txn<ByteBuffer> txn = env.txnRead(); CursorIterable<ByteBuffer> it = pinsDb.iterate(txn)) {
            for (CursorIterable.KeyVal<ByteBuffer> kv : it) {
                ByteBuffer b = kv.key();
                long owner = b.getLong(0);
                Key k = new Key(b.getLong(8), b.getInt(16));
                Copy c = copies.get(k);
                if (c == null || !c.present()) {
                    stale.add(pinKey(owner, k));
                    continue;
                }
                pinsByOwner.computeIfAbsent(owner, o -> ConcurrentHashMap.newKeySet()).add(k);
                pinsByChunk.computeIfAbsent(k, x -> ConcurrentHashMap.newKeySet()).add(owner);
            }
        }
        if (!stale.isEmpty()) {
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                stale.forEach(key -> pinsDb.delete(txn, key));
                txn.commit();
            }
        }
    }

    /** Deletes chunk files no present copy names (a crash between creating a file and recording it). */
    private void sweepOrphans() throws IOException {
        int n = 0;
        try (Stream<Path> shards = Files.list(chunks)) {
            for (Path shard : shards.toList()) {
                try (Stream<Path> files = Files.list(shard)) {
                    for (Path f : files.toList()) {
                        Key k = parse(f.getFileName().toString());
                        Copy c = k == null ? null : copies.get(k);
                        if (c == null || !c.present() || AtomicFiles.isTemporary(f.getFileName().toString())) {
                            Files.deleteIfExists(f);
                            n++;
                        }
                    }
                }
            }
        }
        if (n > 0) {
            LOG.info("{}: deleted {} chunk files no copy names", dir.path(), n);
        }
    }

    private static Key parse(String name) {
        int dash = name.indexOf('-');
        if (dash <= 0) {
            return null;
        }
        try {
            return new Key(Long.parseUnsignedLong(name.substring(0, dash)), Integer.parseInt(name.substring(dash + 1)));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    Path file(Key k) {
        return chunks.resolve(String.format("%02x", k.inode() & 0xFF)).resolve(Long.toUnsignedString(k.inode()) + "-" + k.index());
    }

    Copy get(Key k) {
        Copy c = copies.get(k);
        if (c != null) {
            lastUsed.put(k, nowMillis.getAsLong());
        }
        return c;
    }

    /** Every record, in key order (a snapshot view). */
    Map<Key, Copy> all() {
        return copies;
    }

    /** The records of one file's chunks at or past {@code fromIndex}. */
    Map<Key, Copy> ofInode(long inode, int fromIndex) {
        return copies.subMap(new Key(inode, fromIndex), true, new Key(inode, Integer.MAX_VALUE), true);
    }

    /**
     * Records {@code c} for {@code k} (in memory, and in the index without a sync). A copy of
     * another epoch replacing the chunk's copy takes none of its pins.
     */
    void record(Key k, Copy c) {
        Copy old = copies.put(k, c);
        long delta = (c.present() ? c.chunkSize() : 0) - (old != null && old.present() ? old.chunkSize() : 0);
        reserved.addAndGet(delta);
        lastUsed.put(k, nowMillis.getAsLong());
        synchronized (this) {
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                db.put(txn, key(k), encode(c));
                if (old != null && old.epoch() != c.epoch()) {
                    unpinChunk(txn, k);
                }
                txn.commit();
            }
        }
    }

    /** Records {@code c} (present) for {@code k} and pins it for {@code owner}, before any eviction can take it. */
    synchronized void recordPinned(Key k, Copy c, long owner) {
        record(k, c);
        pin(k, owner);
    }

    /** Forgets the chunk, its pins and its file (under the copy's write lock). */
    void drop(Key k) {
        exclusive(k, () -> {
            dropLocked(k);
            return null;
        });
    }

    private void dropLocked(Key k) {
        Copy old = copies.remove(k);
        lastUsed.remove(k);
        dirty.remove(k);
        syncBehindQueued.remove(k);
        if (old != null && old.present()) {
            reserved.addAndGet(-old.chunkSize());
        }
        synchronized (this) {
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                db.delete(txn, key(k));
                unpinChunk(txn, k);
                txn.commit();
            }
        }
        closeFile(k);
        deleteFile(k);
    }

    /** Closes the copy's cached read channel, if any (its file is about to change as a whole, or go). */
    private void closeFile(Key k) {
        openFiles.invalidate(k);
    }

    /** Read channels open now (tests). */
    long openFiles() {
        openFiles.cleanUp();
        return openFiles.estimatedSize();
    }

    private void deleteFile(Key k) {
        try {
            Files.deleteIfExists(file(k));
        } catch (IOException e) {
            LOG.warn("{}: cannot delete {}: {}", dir.path(), file(k), e.toString());
        }
    }

    // ---- pins ----

    /** Pins the chunk's copy for {@code owner} if the copy is present (an eviction may just have taken it); whether it is. */
    synchronized boolean pinIfPresent(Key k, long owner) {
        Copy c = copies.get(k);
        if (c == null || !c.present()) {
            return false;
        }
        pin(k, owner);
        return true;
    }

    private void pin(Key k, long owner) {
        if (!pinsByOwner.computeIfAbsent(owner, o -> ConcurrentHashMap.newKeySet()).add(k)) {
            return;
        }
        pinsByChunk.computeIfAbsent(k, x -> ConcurrentHashMap.newKeySet()).add(owner);
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            pinsDb.put(txn, pinKey(owner, k), PIN_VALUE.duplicate());
            txn.commit();
        }
    }

    /** Drops every pin of {@code owner}; how many there were. Its copies stay, evictable unless another owner pins them. */
    synchronized long unpin(long owner) {
        Set<Key> mine = pinsByOwner.remove(owner);
        if (mine == null) {
            return 0;
        }
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            for (Key k : mine) {
                pinsDb.delete(txn, pinKey(owner, k));
                Set<Long> owners = pinsByChunk.get(k);
                if (owners != null) {
                    owners.remove(owner);
                    if (owners.isEmpty()) {
                        pinsByChunk.remove(k);
                    }
                }
            }
            txn.commit();
        }
        return mine.size();
    }

    /** Drops every pin of chunk {@code k} within {@code txn} (the caller holds this store's lock). */
    private void unpinChunk(Txn<ByteBuffer> txn, Key k) {
        Set<Long> owners = pinsByChunk.remove(k);
        if (owners == null) {
            return;
        }
        for (long owner : owners) {
            pinsDb.delete(txn, pinKey(owner, k));
            Set<Key> theirs = pinsByOwner.get(owner);
            if (theirs != null) {
                theirs.remove(k);
                if (theirs.isEmpty()) {
                    pinsByOwner.remove(owner);
                }
            }
        }
    }

    /** Whether some owner pins the chunk's copy. */
    boolean pinned(Key k) {
        Set<Long> owners = pinsByChunk.get(k);
        return owners != null && !owners.isEmpty();
    }

    /** The pinned chunks (a live view). */
    Set<Key> pinnedChunks() {
        return pinsByChunk.keySet();
    }

    // ---- space ----

    /** Bytes reserved by present copies. */
    long used() {
        return reserved.get();
    }

    long capacity() {
        return budget.capacity();
    }

    long evictions() {
        return evictions.get();
    }

    /**
     * Makes room for {@code bytes} more, evicting drained copies no owner pins, least recently
     * used first; false when only undrained or pinned copies are left to evict. A copy is evicted
     * under its write lock, taken without waiting (this store's lock is held, and a writer holding
     * a copy's lock may want it): one being read or updated now is passed over for the next, and
     * when all are busy the eviction waits a moment and looks again. Not to be called holding a
     * copy's lock.
     */
    synchronized boolean admit(long bytes) {
        Set<Key> busy = new java.util.HashSet<>();
        long deadline = 0;
        while (true) {
            SpaceBudget.Need need = budget.need(reserved.get(), bytes, budget.usable());
            if (need.bytes() <= 0) {
                return true;
            }
            Key victim = copies.entrySet().stream()
                    .filter(e -> evictable(e.getKey(), e.getValue()) && !busy.contains(e.getKey()))
                    .min(Comparator.comparingLong(e -> lastUsed.getOrDefault(e.getKey(), 0L)))
                    .map(Map.Entry::getKey).orElse(null);
            if (victim == null) {
                if (busy.isEmpty()) {
                    return false;
                }
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + TimeUnit.MILLISECONDS.toNanos(ADMIT_WAIT_MILLIS);
                } else if (now > deadline) {
                    return false;
                }
                try {
                    wait(1); // lets go of this store's lock meanwhile
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
                busy.clear();
                continue;
            }
            Lock w = lockOf(victim).writeLock();
            if (!w.tryLock()) {
                busy.add(victim);
                continue;
            }
            try {
                Copy c = copies.get(victim);
                if (c == null || !evictable(victim, c)) {
                    continue; // changed before we got its lock: look again
                }
                record(victim, c.evicted());
                closeFile(victim);
                deleteFile(victim);
                evictions.incrementAndGet();
            } finally {
                w.unlock();
            }
        }
    }

    private boolean evictable(Key k, Copy c) {
        return c.present() && !c.undrained() && !pinned(k);
    }

    // ---- bytes ----

    /** Makes {@code whole} the copy's entire content (borrowed). The caller holds the copy's write lock ({@link #exclusive}). */
    void replace(Key k, ByteBuf whole) {
        assert lockOf(k).isWriteLockedByCurrentThread() : "replace of " + k + " without its write lock";
        closeFile(k);
        Path f = file(k);
        try {
            PrivateFiles.createDirectories(f.getParent());
            try (FileChannel ch = PrivateFiles.open(f, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                if (whole.isReadable()) {
                    ChannelIo.writeFully(ch, whole, whole.readerIndex(), whole.readableBytes(), 0);
                }
            }
        } catch (IOException e) {
            throw ioError("write", k, e);
        }
        written(k);
    }

    /** Writes {@code data} (borrowed) at {@code offset} of the copy's file. The caller holds the copy's lock ({@link #shared}). */
    void write(Key k, long offset, ByteBuf data) {
        assert lockOf(k).getReadHoldCount() > 0 || lockOf(k).isWriteLockedByCurrentThread() : "write of " + k + " without its lock";
        try (FileChannel ch = FileChannel.open(file(k), StandardOpenOption.WRITE)) {
            ChannelIo.writeFully(ch, data, data.readerIndex(), data.readableBytes(), offset);
        } catch (IOException e) {
            throw ioError("write", k, e);
        }
        written(k);
    }

    /** Sets the copy's file length (growing adds zeros). The caller holds the copy's write lock ({@link #exclusive}). */
    void setLength(Key k, long length) {
        assert lockOf(k).isWriteLockedByCurrentThread() : "truncate of " + k + " without its write lock";
        closeFile(k);
        try (RandomAccessFile f = new RandomAccessFile(file(k).toFile(), "rw")) {
            f.setLength(length);
        } catch (IOException e) {
            throw ioError("truncate", k, e);
        }
        written(k);
    }

    /** What {@link #readCopy} found: the chunk's record (null: none), and the bytes read when the copy was offered (else null). */
    record Found(Copy copy, ByteBuf bytes) {
    }

    /**
     * Reads a copy without waiting for the chunk's queue: under the copy's read lock, takes its
     * record and, when it is present and {@code offer} accepts it, up to {@code length} bytes at
     * {@code offset} (an owned buffer). The bytes are the record's copy's: nothing replaces or
     * removes the copy meanwhile (updates in place may land, old or new bytes per region).
     */
    Found readCopy(Key k, Predicate<Copy> offer, long offset, int length, ByteBufAllocator alloc) {
        Lock l = lockOf(k).readLock();
        l.lock();
        try {
            Copy c = get(k);
            if (c == null || !c.present() || !offer.test(c)) {
                return new Found(c, null);
            }
            return new Found(c, readLocked(k, offset, length, c.length(), alloc));
        } finally {
            l.unlock();
        }
    }

    /** Up to {@code length} bytes at {@code offset} of a copy of {@code copyLength} bytes: an owned buffer. */
    ByteBuf read(Key k, long offset, int length, long copyLength, ByteBufAllocator alloc) {
        Lock l = lockOf(k).readLock();
        l.lock();
        try {
            return readLocked(k, offset, length, copyLength, alloc);
        } finally {
            l.unlock();
        }
    }

    private ByteBuf readLocked(Key k, long offset, int length, long copyLength, ByteBufAllocator alloc) {
        int n = (int) Math.max(0, Math.min(length, copyLength - offset));
        ByteBuf out = alloc.buffer(n);
        if (n == 0) {
            return out;
        }
        OpenFile f = null;
        try {
            f = openForRead(k);
            ChannelIo.readFully(f.channel, out, offset, n);
            return out;
        } catch (IOException e) {
            out.release();
            throw ioError("read", k, e);
        } catch (RuntimeException e) {
            out.release();
            throw e;
        } finally {
            if (f != null) {
                f.release();
            }
        }
    }

    /** The copy's read channel, retained for the caller (who holds the copy's lock, so the file is the copy's). */
    private OpenFile openForRead(Key k) throws IOException {
        OpenFile f = openFiles.getIfPresent(k);
        if (f != null && f.retain()) {
            return f;
        }
        OpenFile fresh = new OpenFile(FileChannel.open(file(k), StandardOpenOption.READ));
        fresh.retain(); // the caller's; the cache holds the first
        openFiles.put(k, fresh); // a channel another reader cached meanwhile is let go
        if (closed) {
            openFiles.invalidate(k); // the store closed meanwhile: keep nothing open
        }
        return fresh;
    }

    /**
     * Syncs copies behind the writes on {@code executor}: a copy written is fdatasync'd soon after,
     * in the background, so that a client's {@link #sync} finds little left to do (a checkpoint's
     * chunks are written once each; waiting to sync them all at close made close pay every fsync).
     */
    void syncBehind(Executor executor) {
        this.syncBehind = executor;
    }

    private void written(Key k) {
        dirty.merge(k, writes.incrementAndGet(), Math::max);
        Executor e = syncBehind;
        if (e != null && syncBehindQueued.add(k)) {
            try {
                e.execute(() -> {
                    syncBehindQueued.remove(k);
                    try {
                        force(k);
                    } catch (RuntimeException ignored) {
                        // the client's sync retries it and reports the error
                    }
                });
            } catch (RejectedExecutionException closing) {
                syncBehindQueued.remove(k);
            }
        }
    }

    /** fdatasyncs one copy if it is dirty; clears the mark unless it was written again meanwhile. */
    private void force(Key k) {
        Long gen = dirty.get(k);
        if (gen == null) {
            return;
        }
        Copy c = copies.get(k);
        if (c == null || !c.present()) {
            dirty.remove(k, gen);
            return;
        }
        try (FileChannel ch = FileChannel.open(file(k), StandardOpenOption.WRITE)) {
            ch.force(false);
        } catch (NoSuchFileException gone) {
            dirty.remove(k, gen); // dropped or evicted meanwhile
            return;
        } catch (IOException e) {
            throw ioError("sync", k, e);
        }
        dirty.remove(k, gen);
    }

    /**
     * fdatasyncs the files of {@code inode}'s copies written since their last sync (in parallel on
     * {@code executor}), then flushes the index.
     */
    void sync(long inode, Executor executor) {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (Key k : dirty.keySet()) {
            if (k.inode() == inode) {
                all.add(CompletableFuture.runAsync(() -> force(k), executor));
            }
        }
        try {
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
        } catch (CompletionException e) {
            throw StrataException.wrap(e);
        }
        env.flush();
    }

    /**
     * The error for a failed file operation: NO_SPACE when the disk is full, else IO_ERROR, and
     * then the store counts as failed (the first I/O error: L2 holds staged copies, and an agent
     * whose disk errs steps aside so writers place new chunks elsewhere).
     */
    private StrataException ioError(String what, Key k, IOException e) {
        String m = e.getMessage() == null ? e.toString() : e.getMessage();
        if (m.contains("No space left")) {
            return new StrataException(Status.NO_SPACE, "L2 store " + dir.path() + ": " + what + " of " + k + " failed: " + m, e);
        }
        String why = what + " of " + k + " failed: " + e;
        if (failure == null) {
            failure = why;
            LOG.error("{}: disk failure, taking no new copies until restarted: {}", dir.path(), why);
        }
        return new StrataException(Status.IO_ERROR, "L2 store " + dir.path() + ": " + why, e);
    }

    /** Why the store's disk failed, if it did. */
    Optional<String> failure() {
        return Optional.ofNullable(failure);
    }

    // ---- index values ----

    private static ByteBuffer key(Key k) {
        ByteBuffer b = ByteBuffer.allocateDirect(KEY_BYTES);
        b.putLong(0, k.inode()).putInt(8, k.index());
        return b;
    }

    /** A pin's key: owner, inode, index. Its value is one byte, {@link #PIN_VALUE}: the key is the pin. */
    private static ByteBuffer pinKey(long owner, Key k) {
        ByteBuffer b = ByteBuffer.allocateDirect(PIN_KEY_BYTES);
        b.putLong(0, owner).putLong(8, k.inode()).putInt(16, k.index());
        return b;
    }

    private static ByteBuffer encode(Copy c) {
        ByteBuffer b = ByteBuffer.allocateDirect(8 * 5 + 4 * 2 + 2 + 1 + 4 * c.holders().size());
        b.putLong(c.epoch()).putLong(c.seq()).putLong(c.length()).putLong(c.drainedSeq()).putInt(c.chain()).putInt(c.chunkSize())
                .putLong(c.stagedMillis()).put((byte) (c.present() ? 1 : 0)).put((byte) (c.removed() ? 1 : 0))
                .put((byte) c.holders().size());
        c.holders().forEach(b::putInt);
        return b.flip();
    }

    private static Copy decode(ByteBuffer v) {
        try {
            ByteBuffer b = v.duplicate();
            long epoch = b.getLong();
            long seq = b.getLong();
            long length = b.getLong();
            long drained = b.getLong();
            int chain = b.getInt();
            int chunkSize = b.getInt();
            long staged = b.getLong();
            boolean present = b.get() != 0;
            boolean removed = b.get() != 0;
            int n = b.get() & 0xFF;
            List<Integer> holders = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                holders.add(b.getInt());
            }
            return new Copy(epoch, seq, length, drained, chain, chunkSize, holders, staged, present, removed);
        } catch (RuntimeException e) {
            return null; // a damaged value: the copy is forgotten
        }
    }

    @Override
    public void close() {
        closed = true;
        openFiles.invalidateAll();
        openFiles.cleanUp();
        try {
            env.flush();
        } catch (RuntimeException e) {
            LOG.warn("{}: flushing the index at close: {}", dir.path(), e.toString());
        }
        env.close();
        dir.close();
    }
}
