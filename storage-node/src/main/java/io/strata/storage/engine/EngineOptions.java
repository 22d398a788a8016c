package io.strata.storage.engine;

import io.strata.core.DataSize;

/**
 * Settings of a target's chunk engine.
 *
 * @param metaMapSize LMDB map size (the most chunk metadata the target can hold)
 * @param maxBatch    most metadata changes committed in one group commit
 * @param verifyReads check block CRCs on every read (off: reads may be sent with sendfile)
 * @param poolLow     create empty data files ahead when fewer than this many are ready
 * @param poolHigh    how many empty data files to keep ready
 */
public record EngineOptions(DataSize metaMapSize, int maxBatch, boolean verifyReads, int poolLow, int poolHigh) {
    public static final EngineOptions DEFAULTS = new EngineOptions(DataSize.ofGiB(1), 256, true, 16, 64);

    public EngineOptions {
        if (metaMapSize.bytes() < (1 << 20)) {
            throw new IllegalArgumentException("meta-map-size must be at least 1MiB, got " + metaMapSize);
        }
        if (maxBatch < 1 || poolLow < 0 || poolHigh < poolLow || poolHigh < 1) {
            throw new IllegalArgumentException("bad engine options: max-batch " + maxBatch + ", pool " + poolLow + ".." + poolHigh);
        }
    }

    public EngineOptions withVerifyReads(boolean v) {
        return new EngineOptions(metaMapSize, maxBatch, v, poolLow, poolHigh);
    }
}
