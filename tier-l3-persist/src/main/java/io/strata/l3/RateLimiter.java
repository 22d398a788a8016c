package io.strata.l3;

import java.util.concurrent.TimeUnit;

/**
 * A byte-rate limit for background traffic (resync copies): {@link #acquire} reserves bytes on a
 * virtual timeline advancing at {@code bytesPerSecond} and sleeps the caller until its
 * reservation starts; up to a tenth of a second of unused rate may be spent at once. Blocks the
 * calling thread: call it from the resync's own (virtual) thread, never from an event loop.
 */
final class RateLimiter {
    private final double nanosPerByte;
    private final long burstNanos = TimeUnit.MILLISECONDS.toNanos(100);
    private long next = System.nanoTime();

    RateLimiter(long bytesPerSecond) {
        if (bytesPerSecond <= 0) {
            throw new IllegalArgumentException("rate must be positive, got " + bytesPerSecond);
        }
        this.nanosPerByte = 1e9 / bytesPerSecond;
    }

    /** Waits until {@code bytes} may be sent. */
    void acquire(long bytes) throws InterruptedException {
        long wait;
        synchronized (this) {
            long now = System.nanoTime();
            if (next < now - burstNanos) {
                next = now - burstNanos;
            }
            wait = next - now;
            next += (long) (bytes * nanosPerByte);
        }
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
        }
    }
}
