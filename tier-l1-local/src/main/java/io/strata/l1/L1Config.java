package io.strata.l1;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.DataSize;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * The {@code [l1]} table of a client's config file: the L1 cache of one compute node.
 * <pre>
 * [l1]
 * name = "l1"                 # tag on every metric (two caches in one process need two names)
 * memory = "1GiB"             # memory tier capacity (Caffeine, weighed by bytes)
 * block-size = "1MiB"         # cache block: a power of two, 4KiB..16MiB (capped at the chunk size)
 * sweep-interval = "1s"       # TTL expiry, free-space floor, index sync
 * small-miss = "range"        # a read of at most a quarter block that misses: "range" fetches its
 *                             # bytes only (the whole block once its misses cost as much), "block"
 *                             # the whole block at once
 * [l1.nvme]                   # absent: no NVMe tier
 * dir = "/nvme/strata-l1"     # block files + LMDB index; survives restarts
 * capacity = "100GiB"         # bytes of blocks kept there
 * min-free = "10GiB"          # never let the disk's free space fall below this
 * fsync = true                # fdatasync each block file before indexing it
 * max-queued = "64MiB"        # blocks waiting to be written to NVMe; more are not cached there
 * index-map-size = "1GiB"     # LMDB map size
 * read-on-caller = true       # read NVMe hits on the calling thread unless it is a Netty event loop
 * [l1.write-back]
 * buffer = "256MiB"           # absorbed, unflushed bytes across all files; a write beyond waits
 * small-write-max = "1MiB"    # larger writes go through (after the file's absorbed writes)
 * flush-concurrency = 16      # files flushed to the tier below in parallel
 * retries = 5                 # attempts per flush before the error is kept for the next fsync
 * retry-backoff = "20ms"      # first backoff between attempts (doubles, at most 1s)
 * close-timeout = "60s"       # how long close() waits for absorbed writes to reach the tier below
 * </pre>
 *
 * <p>Per-file behaviour (whether to cache at all, write-back on/off with its max age and max
 * bytes, pin, TTL) comes with each I/O in {@link io.strata.core.tier.CacheHints}, from the
 * directory's policy; this table sizes the node's resources.
 */
public record L1Config(String name, DataSize memory, DataSize blockSize, Duration sweepInterval,
                       Optional<Nvme> nvme, WriteBack writeBack, SmallMiss smallMiss) {
    public static final DataSize MIN_BLOCK = DataSize.ofKiB(4);
    public static final DataSize MAX_BLOCK = DataSize.ofMiB(16);

    /**
     * What a small read (at most a quarter of a block, inside one block, not at its start) that
     * misses memory and NVMe fetches from the tier below. A miss at a block's start always loads
     * the block: a small file read whole, or a file read in order, whose block is then cached
     * at once. {@code RANGE}: only its bytes, until the block's misses
     * have fetched as much as the block would have cost (each counted as at least 64 KiB), then
     * the whole block, cached (a ski rental: never more than twice the cheaper choice). A
     * dataloader's random samples over a data set larger than the cache then move about the
     * bytes they read, not a block each (256 times a 4 KiB read in 1 MiB blocks), while a block
     * read often is still cached. {@code BLOCK}: the whole block at the first miss, cached.
     */
    public enum SmallMiss {
        RANGE, BLOCK;

        static SmallMiss parse(String key, String v) {
            return switch (v) {
                case "range" -> RANGE;
                case "block" -> BLOCK;
                default -> throw new ConfigException(key, "must be \"range\" or \"block\", got \"" + v + "\"");
            };
        }
    }

    /** The defaults for what a small miss fetches ({@link SmallMiss#RANGE}). */
    public L1Config(String name, DataSize memory, DataSize blockSize, Duration sweepInterval, Optional<Nvme> nvme, WriteBack writeBack) {
        this(name, memory, blockSize, sweepInterval, nvme, writeBack, SmallMiss.RANGE);
    }

    /**
     * The NVMe tier. {@code readOnCaller}: a block found on NVMe is read on the thread that asked
     * for it when that thread is not a Netty event loop (an application or FUSE thread that waits
     * for the answer anyway): one thread hand-off less per block, about twice the NVMe hit
     * throughput on a small machine; on an event loop, and when false, on the node's blocking pool.
     */
    public record Nvme(Path dir, DataSize capacity, DataSize minFree, boolean fsync, DataSize maxQueued,
                       DataSize indexMapSize, boolean readOnCaller) {
        public Nvme {
            if (dir == null) {
                throw new ConfigException("l1.nvme.dir", "is required");
            }
            if (maxQueued.bytes() < 1) {
                throw new ConfigException("l1.nvme.max-queued", "must be positive");
            }
        }

        /** An NVMe tier in {@code dir} of {@code capacity}, defaults elsewhere (1 GiB floor, fsync on). */
        public static Nvme at(Path dir, DataSize capacity) {
            return new Nvme(dir, capacity, DataSize.ofGiB(1), true, DataSize.ofMiB(64), DataSize.ofGiB(1), true);
        }

        public Nvme withMinFree(DataSize d) {
            return new Nvme(dir, capacity, d, fsync, maxQueued, indexMapSize, readOnCaller);
        }

        public Nvme withFsync(boolean f) {
            return new Nvme(dir, capacity, minFree, f, maxQueued, indexMapSize, readOnCaller);
        }

        public Nvme withReadOnCaller(boolean r) {
            return new Nvme(dir, capacity, minFree, fsync, maxQueued, indexMapSize, r);
        }
    }

    /** Node-wide limits of write-back (which files use it is the policy's business). */
    public record WriteBack(DataSize buffer, DataSize smallWriteMax, int flushConcurrency, int retries,
                            Duration retryBackoff, Duration closeTimeout) {
        public static final WriteBack DEFAULTS = new WriteBack(DataSize.ofMiB(256), DataSize.ofMiB(1), 16, 5,
                Duration.ofMillis(20), Duration.ofSeconds(60));

        public WriteBack {
            if (buffer.bytes() < 1 || smallWriteMax.bytes() < 1 || smallWriteMax.compareTo(buffer) > 0) {
                throw new ConfigException("l1.write-back", "needs 0 < small-write-max <= buffer, got " + smallWriteMax + " and " + buffer);
            }
            if (flushConcurrency < 1 || retries < 1) {
                throw new ConfigException("l1.write-back", "flush-concurrency and retries must be at least 1");
            }
            if (retryBackoff.isNegative() || closeTimeout.isNegative() || closeTimeout.isZero()) {
                throw new ConfigException("l1.write-back", "retry-backoff must be >= 0 and close-timeout > 0");
            }
        }

        public WriteBack withRetries(int n, Duration backoff) {
            return new WriteBack(buffer, smallWriteMax, flushConcurrency, n, backoff, closeTimeout);
        }

        public WriteBack withBuffer(DataSize b, DataSize small) {
            return new WriteBack(b, small, flushConcurrency, retries, retryBackoff, closeTimeout);
        }
    }

    public L1Config {
        if (name == null || name.isBlank()) {
            throw new ConfigException("l1.name", "must not be empty");
        }
        if (smallMiss == null) {
            throw new ConfigException("l1.small-miss", "is required");
        }
        if (!blockSize.isPowerOfTwo() || blockSize.compareTo(MIN_BLOCK) < 0 || blockSize.compareTo(MAX_BLOCK) > 0) {
            throw new ConfigException("l1.block-size", "must be a power of two between " + MIN_BLOCK + " and " + MAX_BLOCK
                    + ", got " + blockSize);
        }
        if (memory.bytes() < blockSize.bytes()) {
            throw new ConfigException("l1.memory", "must hold at least one block (" + blockSize + "), got " + memory);
        }
        if (sweepInterval.isNegative() || sweepInterval.isZero()) {
            throw new ConfigException("l1.sweep-interval", "must be positive");
        }
        if (nvme.isPresent() && nvme.get().capacity().bytes() < blockSize.bytes()) {
            throw new ConfigException("l1.nvme.capacity", "must hold at least one block (" + blockSize + "), got "
                    + nvme.get().capacity());
        }
    }

    /** Memory only, 1 MiB blocks, default write-back limits. */
    public static L1Config memoryOnly(DataSize memory) {
        return new L1Config("l1", memory, DataSize.ofMiB(1), Duration.ofSeconds(1), Optional.empty(), WriteBack.DEFAULTS);
    }

    public L1Config withName(String n) {
        return new L1Config(n, memory, blockSize, sweepInterval, nvme, writeBack, smallMiss);
    }

    public L1Config withBlockSize(DataSize b) {
        return new L1Config(name, memory, b, sweepInterval, nvme, writeBack, smallMiss);
    }

    public L1Config withNvme(Nvme n) {
        return new L1Config(name, memory, blockSize, sweepInterval, Optional.ofNullable(n), writeBack, smallMiss);
    }

    public L1Config withWriteBack(WriteBack w) {
        return new L1Config(name, memory, blockSize, sweepInterval, nvme, w, smallMiss);
    }

    public L1Config withSweepInterval(Duration d) {
        return new L1Config(name, memory, blockSize, d, nvme, writeBack, smallMiss);
    }

    public L1Config withSmallMiss(SmallMiss m) {
        return new L1Config(name, memory, blockSize, sweepInterval, nvme, writeBack, m);
    }

    /** Reads the {@code [l1]} table {@code s} (the caller rejects unknown keys of the file). */
    public static L1Config read(ConfigNode s) {
        String name = s.string("name", "l1");
        DataSize memory = s.size("memory", DataSize.ofGiB(1), DataSize.ofMiB(1), DataSize.ofBytes(Long.MAX_VALUE));
        DataSize block = s.size("block-size", DataSize.ofMiB(1), MIN_BLOCK, MAX_BLOCK);
        if (!block.isPowerOfTwo()) {
            throw new ConfigException(key(s, "block-size"), "must be a power of two, got " + block);
        }
        Duration sweep = s.duration("sweep-interval", Duration.ofSeconds(1), Duration.ofMillis(10), Duration.ofHours(1));
        Optional<Nvme> nvme = Optional.empty();
        if (s.has("nvme")) {
            ConfigNode n = s.section("nvme");
            String dir = n.string("dir", null);
            if (dir == null) {
                throw new ConfigException(key(n, "dir"), "is required (the NVMe cache directory)");
            }
            nvme = Optional.of(new Nvme(Path.of(dir),
                    n.size("capacity", DataSize.ofGiB(100), block, DataSize.ofBytes(Long.MAX_VALUE)),
                    n.size("min-free", DataSize.ofGiB(1), DataSize.ZERO, DataSize.ofBytes(Long.MAX_VALUE)),
                    n.bool("fsync", true),
                    n.size("max-queued", DataSize.ofMiB(64), block, DataSize.ofGiB(64)),
                    n.size("index-map-size", DataSize.ofGiB(1), DataSize.ofMiB(1), DataSize.ofGiB(1024)),
                    n.bool("read-on-caller", true)));
        }
        WriteBack d = WriteBack.DEFAULTS;
        ConfigNode w = s.section("write-back");
        DataSize buffer = w.size("buffer", d.buffer(), DataSize.ofKiB(64), DataSize.ofBytes(Long.MAX_VALUE));
        DataSize small = w.size("small-write-max", d.smallWriteMax(), DataSize.ofBytes(1), DataSize.ofGiB(1));
        if (small.compareTo(buffer) > 0) {
            throw new ConfigException(key(w, "small-write-max"), "must not exceed " + key(w, "buffer") + " (" + buffer + "), got " + small);
        }
        WriteBack wb = new WriteBack(buffer, small, w.integer("flush-concurrency", d.flushConcurrency(), 1, 1024),
                w.integer("retries", d.retries(), 1, 1000),
                w.duration("retry-backoff", d.retryBackoff(), Duration.ZERO, Duration.ofMinutes(1)),
                w.duration("close-timeout", d.closeTimeout(), Duration.ofMillis(1), Duration.ofHours(24)));
        if (memory.bytes() < block.bytes()) {
            throw new ConfigException(key(s, "memory"), "must hold at least one block (" + block + "), got " + memory);
        }
        SmallMiss smallMiss = SmallMiss.parse(key(s, "small-miss"), s.string("small-miss", "range"));
        return new L1Config(name, memory, block, sweep, nvme, wb, smallMiss);
    }

    private static String key(ConfigNode n, String k) {
        return n.path().isEmpty() ? k : n.path() + "." + k;
    }
}
