package io.strata.client;

import io.strata.core.InodeId;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Directory path -> inode, remembered for {@code ttl} per caller uid (the namespace checks
 * search permission on the way, so one user's walk is not reused for another). A path op then
 * costs one namespace call (the lookup of its last name) instead of two. Local renames and
 * removals drop the entries under the path at once; another client's rename is seen after the
 * ttl at the latest (as a kernel's entry cache behaves). A ttl of zero disables it.
 */
final class DirCache {
    private record Key(int uid, String path) {
    }

    private record Entry(InodeId dir, long expiresNanos) {
    }

    private static final int MAX_ENTRIES = 65_536;
    private final long ttlNanos;
    private final ConcurrentHashMap<Key, Entry> entries = new ConcurrentHashMap<>();

    private final io.strata.core.time.StrataClock clock;

    DirCache(java.time.Duration ttl, io.strata.core.time.StrataClock clock) {
        this.clock = clock;
        this.ttlNanos = ttl.toNanos();
    }

    InodeId get(int uid, String path) {
        if (ttlNanos == 0) {
            return null;
        }
        Key k = new Key(uid, path);
        Entry e = entries.get(k);
        if (e == null) {
            return null;
        }
        if (clock.nanoTime() - e.expiresNanos > 0) {
            entries.remove(k, e);
            return null;
        }
        return e.dir;
    }

    void put(int uid, String path, InodeId dir) {
        if (ttlNanos == 0) {
            return;
        }
        if (entries.size() >= MAX_ENTRIES) {
            entries.clear();
        }
        entries.put(new Key(uid, path), new Entry(dir, clock.nanoTime() + ttlNanos));
    }

    /** Forgets {@code path} and everything under it. */
    void invalidate(String path) {
        if (ttlNanos == 0 || entries.isEmpty()) {
            return;
        }
        String prefix = path.equals("/") ? "/" : path + "/";
        entries.keySet().removeIf(k -> k.path.equals(path) || k.path.startsWith(prefix));
    }
}
