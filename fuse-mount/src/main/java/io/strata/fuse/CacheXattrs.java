package io.strata.fuse;

import io.strata.client.FileStatus;
import io.strata.client.StrataFileSystem;
import io.strata.config.policy.Consistency;
import io.strata.config.policy.Policy;
import io.strata.config.policy.PolicyOverrides;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.CacheControl;
import io.strata.core.util.Futures;
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
    private final Optional<CacheControl> l1;
    private final PageCache pageCache;
    private final Duration metaBound;
    private final Duration ioBound;

    CacheXattrs(StrataFileSystem fs, PageCache pageCache, Duration metaBound, Duration ioBound) {
        this.fs = fs;
        this.l1 = fs.facet(CacheControl.class);
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
        CacheControl cache = l1.get();
        v.put("l1", "on");
        v.put("cache", cache.name());
        if (st.isFile()) {
            v.put("scope", "file");
            Policy p = Policy.DEFAULT.with(PolicyOverrides.fromMap(st.policy()));
            v.put("inode", st.inode().value());
            v.put("size", st.size());
            v.put("policy.cached", !p.l1() ? "no (tiers.l1=off)" : p.consistency() == Consistency.STRICT ? "no (consistency=strict)" : "yes");
            v.put("policy.pin", p.pin() ? "on" : "off");
            v.put("policy.ttl", p.ttl().map(io.strata.config.Durations::format).orElse("none"));
            v.put("policy.write-back", p.writeBack() ? "on" : "off");
            v.putAll(cache.report(st.inode()));
            return text(v);
        }
        v.put("scope", mountRoot ? "mount" : "mount (from a directory)");
        v.putAll(cache.report());
        return text(v);
    }

    /** Drops the cache of {@code path} (see the class comment); the value is ignored. */
    void drop(StrataFileSystem who, String path, boolean mountRoot) {
        FileStatus st = Futures.join(who.statAsync(path), metaBound);
        if (l1.isEmpty()) {
            throw new StrataException(Status.UNSUPPORTED, "this mount has no L1 cache");
        }
        CacheControl cache = l1.get();
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

    private void dropFile(CacheControl cache, InodeId inode) {
        pageCache.forget(inode);
        Futures.join(cache.dropAsync(inode), ioBound);
    }

    private static byte[] text(Map<String, Object> v) {
        StringBuilder sb = new StringBuilder();
        v.forEach((k, x) -> sb.append(k).append('=').append(x).append('\n'));
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }
}
