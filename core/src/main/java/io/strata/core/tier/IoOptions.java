package io.strata.core.tier;

import java.time.Duration;

/**
 * Per-call options every tier sees. {@code dataVersion} is the file's version at open: a cache
 * tier keys entries on it so that a file changed elsewhere is never served stale.
 *
 * @param dataVersion the file's data version this I/O belongs to
 * @param qos         scheduling class
 * @param timeout     how long the caller waits before the call fails with TIMEOUT
 * @param cache       what the directory's policy lets cache tiers do with this I/O
 * @param stage       what the directory's policy asks of the L2 pool
 */
public record IoOptions(long dataVersion, QosClass qos, Duration timeout, CacheHints cache, StageHints stage) {
    public static final IoOptions DEFAULT = new IoOptions(0, QosClass.INTERACTIVE, Duration.ofSeconds(30), CacheHints.DEFAULT);

    public IoOptions {
        if (qos == null || timeout == null || timeout.isNegative() || timeout.isZero() || cache == null || stage == null) {
            throw new IllegalArgumentException("io options need a qos, a positive timeout, cache hints and stage hints");
        }
    }

    /** Options of a file that is not staged. */
    public IoOptions(long dataVersion, QosClass qos, Duration timeout, CacheHints cache) {
        this(dataVersion, qos, timeout, cache, StageHints.NONE);
    }

    /** Options with the default cache hints. */
    public IoOptions(long dataVersion, QosClass qos, Duration timeout) {
        this(dataVersion, qos, timeout, CacheHints.DEFAULT, StageHints.NONE);
    }

    public IoOptions withDataVersion(long v) {
        return new IoOptions(v, qos, timeout, cache, stage);
    }

    public IoOptions withTimeout(Duration d) {
        return new IoOptions(dataVersion, qos, d, cache, stage);
    }

    public IoOptions withQos(QosClass q) {
        return new IoOptions(dataVersion, q, timeout, cache, stage);
    }

    public IoOptions withCache(CacheHints c) {
        return new IoOptions(dataVersion, qos, timeout, c, stage);
    }

    public IoOptions withStage(StageHints s) {
        return new IoOptions(dataVersion, qos, timeout, cache, s);
    }
}
