package io.strata.store;

/**
 * TinyLFU's frequency sketch for {@link CachePolicy}'s admission: a count-min sketch of 4-bit
 * counters (four rows), halved every {@code 10 x width} increments so that old popularity fades.
 * A block from a one-time scan is seen once; a hot block many times: when the store is full, a
 * candidate is admitted only if the sketch says it is more popular than the entry it would
 * evict. Thread-safe (a lock; the sketch is touched once per access).
 */
final class FrequencySketch {
    private static final long[] SEEDS = {0xc3a5c85c97cb3127L, 0xb492b66fbe98f273L, 0x9ae16a3b2f90404fL, 0xcbf29ce484222325L};
    private static final long RESET_MASK = 0x7777777777777777L;

    private final long[] table;
    private final int mask;
    private final int sampleSize;
    private int additions;

    /** A sketch for about {@code expectedEntries} distinct hot keys. */
    FrequencySketch(long expectedEntries) {
        int n = (int) Math.min(1 << 22, Math.max(64, Long.highestOneBit(Math.max(1, expectedEntries - 1)) << 1));
        this.table = new long[n];
        this.mask = n - 1;
        this.sampleSize = 10 * n;
    }

    /** The estimated number of recent accesses of {@code hash}, 0..15. */
    synchronized int frequency(long hash) {
        int f = 15;
        for (int i = 0; i < 4; i++) {
            long h = rehash(hash, i);
            int slot = (int) (h & mask);
            int shift = (int) ((h >>> 40) & 15) << 2;
            f = Math.min(f, (int) ((table[slot] >>> shift) & 0xf));
        }
        return f;
    }

    /** Records one access of {@code hash}. */
    synchronized void increment(long hash) {
        boolean added = false;
        for (int i = 0; i < 4; i++) {
            long h = rehash(hash, i);
            int slot = (int) (h & mask);
            int shift = (int) ((h >>> 40) & 15) << 2;
            if (((table[slot] >>> shift) & 0xf) < 15) {
                table[slot] += 1L << shift;
                added = true;
            }
        }
        if (added && ++additions >= sampleSize) {
            reset();
        }
    }

    /** Halves every counter (aging). */
    private void reset() {
        for (int i = 0; i < table.length; i++) {
            table[i] = (table[i] >>> 1) & RESET_MASK;
        }
        additions /= 2;
    }

    private static long rehash(long hash, int row) {
        long h = (hash + SEEDS[row]) * 0x9E3779B97F4A7C15L;
        h ^= h >>> 29;
        h *= 0xbf58476d1ce4e5b9L;
        return h ^ (h >>> 32);
    }
}
