package io.strata.core.tier;

import java.time.Duration;

/**
 * Per-call options every tier sees. {@code dataVersion} is the file's version at open: a cache
 * tier keys entries on it so that a file changed elsewhere is never served stale.
 *
 * @param dataVersion the file's data version this I/O belongs to
 * @param qos         scheduling class
 * @param timeout     how long the caller waits before the call fails with TIMEOUT
 */
public record IoOptions(long dataVersion, QosClass qos, Duration timeout) {
    public static final IoOptions DEFAULT = new IoOptions(0, QosClass.INTERACTIVE, Duration.ofSeconds(30));

    public IoOptions {
        if (qos == null || timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("io options need a qos and a positive timeout");
        }
    }

    public IoOptions withDataVersion(long v) {
        return new IoOptions(v, qos, timeout);
    }

    public IoOptions withTimeout(Duration d) {
        return new IoOptions(dataVersion, qos, d);
    }
}
