package io.strata.store;

/**
 * What {@link CachePolicy} knows of one stored entry: its key, the bytes it takes, whether it is
 * pinned (never evicted for room), its time-to-idle and its last access. A store extends it with
 * what its index records (length, checksums...). Pin and TTL change under the policy's lock and
 * may be read anywhere; the last access and the segment belong to the policy.
 */
public class CacheEntry<K> {
    private final K key;
    private final long footprint;
    private volatile boolean pinned;
    private volatile long ttlNanos;
    long lastAccess;
    int segment;

    /**
     * @param footprint  bytes the entry takes in the store (what counts against its capacity)
     * @param ttlNanos   time-to-idle: the entry expires this long after its last access (0: never)
     * @param lastAccess the clock's nanoseconds at the entry's last access (or its creation)
     */
    protected CacheEntry(K key, long footprint, boolean pinned, long ttlNanos, long lastAccess) {
        this.key = key;
        this.footprint = footprint;
        this.pinned = pinned;
        this.ttlNanos = ttlNanos;
        this.lastAccess = lastAccess;
    }

    public final K key() {
        return key;
    }

    public final long footprint() {
        return footprint;
    }

    public final boolean pinned() {
        return pinned;
    }

    public final long ttlNanos() {
        return ttlNanos;
    }

    final void pinned(boolean p) {
        this.pinned = p;
    }

    final void ttlNanos(long t) {
        this.ttlNanos = t;
    }

    final boolean expired(long now) {
        return ttlNanos > 0 && now - lastAccess >= ttlNanos;
    }
}
