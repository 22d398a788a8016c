package io.strata.fuse;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.client.FileStatus;
import io.strata.client.StrataFileSystem;
import io.strata.config.policy.Consistency;
import io.strata.config.policy.Policy;
import io.strata.config.policy.PolicyOverrides;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.l1.FileStats;
import io.strata.l1.L1Stats;
import io.strata.l1.L1Tier;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.InodeType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The mount's L1 cache as virtual extended attributes, for {@code strata cache stat|drop PATH}
 * (and {@code getfattr}/{@code setfattr}):
 * <ul>
 *   <li>{@code user.strata.cache} (read-only, any path): {@code key=value} lines. On a file: what
 *       this mount's L1 holds of it (blocks and bytes in memory and on NVMe, pinned bytes,
 *       absorbed writes not yet below) and whether its policy caches it. On a directory: the
 *       whole cache of this mount (sizes and capacities, hits, misses, evictions, corruptions,
 *       the write-back queue and its oldest write's age). Without L1: {@code l1=off}.</li>
 *   <li>{@code user.strata.cache.drop} (write-only, any value): on a file, flushes the writes
 *       L1 absorbed for it (write-back) and then drops its blocks; on the mount's root, the
 *       same for the whole cache; on another directory, for every file under it (the tree is
 *       walked). It fails, dropping nothing of that file, if its absorbed writes cannot be
 *       flushed: a drop never loses a write. The next open of a dropped file also drops the
 *       kernel's page cache of it, so its next read really comes from below (except for
 *       {@code immutable} files, which always keep the page cache).</li>
 * </ul>
 * Neither is listed by {@code listxattr} (see {@link StrataFuse#listxattr}).
 */
final class CacheXattrs {
    static final String STATS = "user.strata.cache";
    static final String DROP = "user.strata.cache.drop";

    /** What a drop must also forget: the page cache version recorded for an inode (null: all). */
    interface PageCache {
        void forget(InodeId inode);
    }

    private final StrataFileSystem fs;
    private final Optional<L1Tier> l1;
    private final MeterRegistry meters;
    private final PageCache pageCache;
    private final Duration metaBound;
    private final Duration ioBound;

    CacheXattrs(StrataFileSystem fs, MeterRegistry meters, PageCache pageCache, Duration metaBound, Duration ioBound) {
        this.fs = fs;
        this.l1 = fs.l1();
        this.meters = meters;
        this.pageCache = pageCache;
        this.metaBound = metaBound;
        this.ioBound = ioBound;
    }

    static boolean handles(String name) {
        return name.equals(STATS) || name.equals(DROP);
    }

    /** The value of {@code name} at {@code path} ({@code who}: the caller's view; {@code mountRoot}: path is the mount's root). */
    byte[] get(StrataFileSystem who, String path, boolean mountRoot, String name) {
        if (name.equals(DROP)) {
            throw new StrataException(Status.NO_SUCH_ATTRIBUTE, DROP + " is write-only: set it to drop the cache");
        }
        FileStatus st = Futures.join(who.statAsync(path), metaBound);
        Map<String, Object> v = new LinkedHashMap<>();
        if (l1.isEmpty()) {
            v.put("l1", "off");
            return text(v);
        }
        L1Tier cache = l1.get();
        v.put("l1", "on");
        v.put("cache", cache.config().name());
        if (st.isFile()) {
            v.put("scope", "file");
            FileStats f = cache.stats(st.inode());
            Policy p = Policy.DEFAULT.with(PolicyOverrides.fromMap(st.policy()));
            v.put("inode", st.inode().value());
            v.put("size", st.size());
            v.put("policy.cached", !p.l1() ? "no (tiers.l1=off)" : p.consistency() == Consistency.STRICT ? "no (consistency=strict)" : "yes");
            v.put("policy.pin", p.pin() ? "on" : "off");
            v.put("policy.ttl", p.ttl().map(io.strata.config.Durations::format).orElse("none"));
            v.put("policy.write-back", p.writeBack() ? "on" : "off");
            v.put("memory.blocks", f.memoryBlocks());
            v.put("memory.bytes", f.memoryBytes());
            v.put("nvme.blocks", f.nvmeBlocks());
            v.put("nvme.bytes", f.nvmeBytes());
            v.put("pinned.bytes", f.pinnedBytes());
            v.put("writeback.writes", f.unflushedWrites());
            v.put("writeback.bytes", f.unflushedBytes());
            return text(v);
        }
        v.put("scope", mountRoot ? "mount" : "mount (from a directory)");
        L1Stats s = cache.stats();
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
        v.put("evictions.memory", evictions(cache, "memory"));
        v.put("evictions.nvme", evictions(cache, "nvme"));
        v.put("corruptions", s.corruptions());
        v.put("writeback.bytes", s.unflushedBytes());
        v.put("writeback.writes", s.unflushedWrites());
        v.put("writeback.files", s.unflushedFiles());
        v.put("writeback.oldest-ms", s.oldestUnflushed().toMillis());
        return text(v);
    }

    /** Drops the cache of {@code path} (see the class comment); the value is ignored. */
    void drop(StrataFileSystem who, String path, boolean mountRoot) {
        FileStatus st = Futures.join(who.statAsync(path), metaBound);
        if (l1.isEmpty()) {
            throw new StrataException(Status.UNSUPPORTED, "this mount has no L1 cache");
        }
        L1Tier cache = l1.get();
        if (st.isFile()) {
            dropFile(cache, st.inode());
        } else if (mountRoot) {
            pageCache.forget(null);
            Futures.join(cache.dropAllAsync(), ioBound);
        } else if (st.isDirectory()) {
            Deque<String> dirs = new ArrayDeque<>();
            dirs.add(path);
            while (!dirs.isEmpty()) {
                String d = dirs.poll();
                for (DirEntry e : Futures.join(who.listAsync(d, false), metaBound.multipliedBy(4))) {
                    if (e.type() == InodeType.DIRECTORY) {
                        dirs.add(d + "/" + e.name());
                    } else if (e.type() == InodeType.FILE) {
                        dropFile(cache, e.inode());
                    }
                }
            }
        }
    }

    private void dropFile(L1Tier cache, InodeId inode) {
        pageCache.forget(inode);
        Futures.join(cache.dropAsync(inode), ioBound);
    }

    private long evictions(L1Tier cache, String tier) {
        double n = 0;
        for (Counter c : meters.find("strata.l1.evictions").tag("cache", cache.config().name()).tag("tier", tier).counters()) {
            n += c.count();
        }
        return (long) n;
    }

    private static byte[] text(Map<String, Object> v) {
        StringBuilder sb = new StringBuilder();
        v.forEach((k, x) -> sb.append(k).append('=').append(x).append('\n'));
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }
}
