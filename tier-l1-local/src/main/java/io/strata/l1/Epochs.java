package io.strata.l1;

import io.strata.core.ChunkId;

/**
 * Keeps a block fetched before a change from entering the cache after it. Chunks map to one of
 * {@value #STRIPES} stripes, each with a version and a count of changes in flight. A reader takes
 * a {@link #stamp} before it fetches a block; it may cache what it fetched only if no change of
 * the stripe was in flight when it started and none began since ({@link #ifCurrent}, checked
 * and acted on under the stripe's lock). A change ({@link #begin}/{@link #end}) bumps the
 * version on both sides of its write to the tier below, so that a fetch overlapping it in any
 * way is served but not cached. False sharing of a stripe only costs a skipped insert.
 */
final class Epochs {
    static final int STRIPES = 1024;

    private final long[] version = new long[STRIPES];
    private final int[] inflight = new int[STRIPES];
    private final Object[] locks = new Object[STRIPES];

    Epochs() {
        for (int i = 0; i < STRIPES; i++) {
            locks[i] = new Object();
        }
    }

    /** What a reader saw before fetching: its stripe, the version, whether caching is allowed. */
    record Stamp(int stripe, long version, boolean cacheable) {
    }

    static int stripe(long inode, int chunk) {
        return (int) (ChunkId.mix(inode, chunk) & (STRIPES - 1));
    }

    Stamp stamp(long inode, int chunk) {
        int s = stripe(inode, chunk);
        synchronized (locks[s]) {
            return new Stamp(s, version[s], inflight[s] == 0);
        }
    }

    /** Runs {@code action} under the stripe's lock if nothing changed since {@code stamp}; returns whether it ran. */
    boolean ifCurrent(Stamp stamp, Runnable action) {
        if (!stamp.cacheable()) {
            return false;
        }
        synchronized (locks[stamp.stripe()]) {
            if (version[stamp.stripe()] != stamp.version()) {
                return false;
            }
            action.run();
            return true;
        }
    }

    /** A change of the chunk starts: runs {@code invalidate} under the stripe's lock. */
    void begin(long inode, int chunk, Runnable invalidate) {
        int s = stripe(inode, chunk);
        synchronized (locks[s]) {
            version[s]++;
            inflight[s]++;
            invalidate.run();
        }
    }

    /** The change started by {@link #begin} is over (succeeded or failed). */
    void end(long inode, int chunk) {
        int s = stripe(inode, chunk);
        synchronized (locks[s]) {
            version[s]++;
            inflight[s]--;
        }
    }
}
