package io.strata.namespace.kv;

import java.time.Duration;

/**
 * How a transaction body is retried after a conflict or an unknown commit result: up to
 * {@code maxAttempts} runs, sleeping a jittered, doubling backoff from {@code firstBackoff} up to
 * {@code maxBackoff} between them, never past {@code deadline} in total.
 */
public record RetryPolicy(int maxAttempts, Duration firstBackoff, Duration maxBackoff, Duration deadline) {
    public static final RetryPolicy DEFAULT = new RetryPolicy(100, Duration.ofMillis(1), Duration.ofMillis(100), Duration.ofSeconds(30));

    public RetryPolicy {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be >= 1, got " + maxAttempts);
        }
        if (firstBackoff.isNegative() || maxBackoff.compareTo(firstBackoff) < 0 || deadline.isNegative() || deadline.isZero()) {
            throw new IllegalArgumentException("bad retry backoffs: " + firstBackoff + ".." + maxBackoff + " within " + deadline);
        }
    }
}
