package io.strata.core.time;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/** A clock that moves only when a test advances it. Thread-safe. */
public final class ManualClock implements StrataClock {
    private final AtomicLong nanos = new AtomicLong();
    private final Instant epoch;

    public ManualClock() {
        this(Instant.parse("2026-01-01T00:00:00Z"));
    }

    public ManualClock(Instant start) {
        this.epoch = start;
    }

    public void advance(Duration d) {
        nanos.addAndGet(d.toNanos());
    }

    @Override
    public long nanoTime() {
        return nanos.get();
    }

    @Override
    public Instant now() {
        return epoch.plusNanos(nanos.get());
    }
}
