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
 */
public record IoOptions(long dataVersion, QosClass qos, Duration timeout, CacheHints cache) {
    public static final IoOptions DEFAULT = new IoOptions(0, QosClass.INTERACTIVE, Duration.ofSeconds(30), CacheHints.DEFAULT);

    public IoOptions {
        if (qos == null || timeout == null || timeout.isNegative() || timeout.isZero() || cache == null) {
            throw new IllegalArgumentException("io options need a qos, a positive timeout and cache hints");
        }
    }

    /** Options with the default cache hints. */
    public IoOptions(long dataVersion, QosClass qos, Duration timeout) {
        this(dataVersion, qos, timeout, CacheHints.DEFAULT);
    }

    public IoOptions withDataVersion(long v) {
        return new IoOptions(v, qos, timeout, cache);
    }

    public IoOptions withTimeout(Duration d) {
        return new IoOptions(dataVersion, qos, d, cache);
    }

    public IoOptions withQos(QosClass q) {
        return new IoOptions(dataVersion, q, timeout, cache);
    }

    public IoOptions withCache(CacheHints c) {
        return new IoOptions(dataVersion, qos, timeout, c);
    }
}
