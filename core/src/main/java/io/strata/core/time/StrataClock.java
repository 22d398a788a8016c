package io.strata.core.time;

import java.time.Instant;

/**
 * Time as components see it: a monotonic {@link #nanoTime()} for deadlines and leases, and a
 * wall-clock {@link #now()} for timestamps users read. Injected through
 * {@link io.strata.core.NodeContext} so tests can use a {@link ManualClock}.
 */
public interface StrataClock {
    long nanoTime();

    Instant now();

    static StrataClock system() {
        return SystemClock.INSTANCE;
    }

    final class SystemClock implements StrataClock {
        static final SystemClock INSTANCE = new SystemClock();

        private SystemClock() {
        }

        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public Instant now() {
            return Instant.now();
        }
    }
}
