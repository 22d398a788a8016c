package io.strata.core.util;

import io.strata.core.time.StrataClock;
import java.util.concurrent.TimeUnit;

/**
 * A rate limit for background work (resync bytes, garbage-collected chunks): a reservation of
 * {@code units} takes its place on a virtual timeline that advances at {@code unitsPerSecond};
 * up to a tenth of a second of unused rate may be spent at once. {@link #reserve} never blocks
 * (an asynchronous caller schedules itself after the wait it returns); {@link #acquire} sleeps
 * the calling thread, for callers on a thread of their own, never an event loop. Time comes from
 * the injected clock.
 */
public final class RateLimiter {
    private final StrataClock clock;
    private double nanosPerUnit;
    private long rate;
    private final long burstNanos = TimeUnit.MILLISECONDS.toNanos(100);
    private long next;

    public RateLimiter(StrataClock clock, long unitsPerSecond) {
        if (unitsPerSecond <= 0) {
            throw new IllegalArgumentException("rate must be positive, got " + unitsPerSecond);
        }
        this.clock = clock;
        this.rate = unitsPerSecond;
        this.nanosPerUnit = 1e9 / unitsPerSecond;
        this.next = clock.nanoTime();
    }

    /**
     * Changes the rate from now on; units reserved already keep their place on the timeline (a
     * lower rate delays only what is reserved after it).
     */
    public synchronized void setRate(long unitsPerSecond) {
        if (unitsPerSecond <= 0) {
            throw new IllegalArgumentException("rate must be positive, got " + unitsPerSecond);
        }
        this.rate = unitsPerSecond;
        this.nanosPerUnit = 1e9 / unitsPerSecond;
    }

    /** The rate, in units per second. */
    public synchronized long rate() {
        return rate;
    }

    /** Reserves {@code units}; returns how many nanoseconds the caller must wait before using them (0: at once). */
    public long reserve(long units) {
        return reserveWithin(units, Long.MAX_VALUE);
    }

    /**
     * Reserves {@code units} only if they may be used within {@code maxWaitNanos}; returns the
     * wait as {@link #reserve} does, or -1 (nothing reserved) when it would be longer.
     */
    public synchronized long reserveWithin(long units, long maxWaitNanos) {
        long now = clock.nanoTime();
        if (next < now - burstNanos) {
            next = now - burstNanos;
        }
        long wait = next - now;
        if (wait > maxWaitNanos) {
            return -1;
        }
        next += (long) (units * nanosPerUnit);
        return Math.max(0, wait);
    }

    /** Waits until {@code units} may be used. */
    public void acquire(long units) throws InterruptedException {
        long wait = reserve(units);
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
        }
    }
}
