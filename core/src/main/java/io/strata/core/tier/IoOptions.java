package io.strata.core.tier;

import io.strata.core.trace.Trace;
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
 * @param minAck      fewest L3 replicas that must hold a write before it is acknowledged
 *                    (capped at the chain's replicas): 1..{@value #MAX_MIN_ACK}
 * @param trace       the user operation this I/O serves ({@link Trace}), sent with every call
 *                    it makes, retries on other threads included; 0 for none
 */
public record IoOptions(long dataVersion, QosClass qos, Duration timeout, CacheHints cache, StageHints stage, int minAck,
                        long trace) {
    /** The default of {@code minAck}: a write is never acknowledged from a single replica of a replicated chain. */
    public static final int DEFAULT_MIN_ACK = 2;
    public static final int MAX_MIN_ACK = 5;
    public static final IoOptions DEFAULT = new IoOptions(0, QosClass.INTERACTIVE, Duration.ofSeconds(30), CacheHints.DEFAULT);

    public IoOptions {
        if (qos == null || timeout == null || timeout.isNegative() || timeout.isZero() || cache == null || stage == null) {
            throw new IllegalArgumentException("io options need a qos, a positive timeout, cache hints and stage hints");
        }
        if (minAck < 1 || minAck > MAX_MIN_ACK) {
            throw new IllegalArgumentException("min-ack replicas must be in 1.." + MAX_MIN_ACK + ", got " + minAck);
        }
    }

    /** Options for the user operation the calling thread works for ({@link Trace#current()}). */
    public IoOptions(long dataVersion, QosClass qos, Duration timeout, CacheHints cache, StageHints stage, int minAck) {
        this(dataVersion, qos, timeout, cache, stage, minAck, Trace.current());
    }

    /** Options with the default {@code minAck}. */
    public IoOptions(long dataVersion, QosClass qos, Duration timeout, CacheHints cache, StageHints stage) {
        this(dataVersion, qos, timeout, cache, stage, DEFAULT_MIN_ACK);
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
        return new IoOptions(v, qos, timeout, cache, stage, minAck, trace);
    }

    public IoOptions withTimeout(Duration d) {
        return new IoOptions(dataVersion, qos, d, cache, stage, minAck, trace);
    }

    public IoOptions withQos(QosClass q) {
        return new IoOptions(dataVersion, q, timeout, cache, stage, minAck, trace);
    }

    public IoOptions withCache(CacheHints c) {
        return new IoOptions(dataVersion, qos, timeout, c, stage, minAck, trace);
    }

    public IoOptions withStage(StageHints s) {
        return new IoOptions(dataVersion, qos, timeout, cache, s, minAck, trace);
    }

    public IoOptions withTrace(long t) {
        return new IoOptions(dataVersion, qos, timeout, cache, stage, minAck, t);
    }

    public IoOptions withMinAck(int n) {
        return new IoOptions(dataVersion, qos, timeout, cache, stage, n, trace);
    }
}
