package io.strata.core.util;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Polls a condition until it holds, for state that settles asynchronously (a leader elected,
 * a resync finished, every replica committed). The one poller of the project: tests, the
 * cluster harness and {@code strata up} use it. A condition that does not hold in time fails
 * with TIMEOUT naming what was awaited.
 */
public final class Eventually {
    private Eventually() {
    }

    /** Waits until {@code condition} holds or fails with {@code what} after {@code timeout}. */
    public static void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long sleep = 5;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new StrataException(Status.TIMEOUT, "timed out after " + timeout.toMillis() + " ms waiting for " + what);
            }
            sleep(sleep);
            sleep = Math.min(200, sleep * 2);
        }
    }

    /** Waits until {@code supplier} returns non-null and returns it. */
    public static <T> T value(String what, Duration timeout, Supplier<T> supplier) {
        Object[] box = new Object[1];
        await(what, timeout, () -> (box[0] = supplier.get()) != null);
        @SuppressWarnings("unchecked")
        T t = (T) box[0];
        return t;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StrataException(Status.CANCELLED, "interrupted while waiting for a condition");
        }
    }
}
