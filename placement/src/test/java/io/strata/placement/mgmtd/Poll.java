package io.strata.placement.mgmtd;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Polling for this module's tests (test-support's Eventually cannot be used here: test-support
 * depends on placement for its manager harness, and Maven forbids the cycle).
 */
public final class Poll {
    private Poll() {
    }

    public static void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long sleep = 5;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what);
            }
            try {
                Thread.sleep(sleep);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted");
            }
            sleep = Math.min(100, sleep * 2);
        }
    }

    public static <T> T value(String what, Duration timeout, Supplier<T> supplier) {
        Object[] box = new Object[1];
        await(what, timeout, () -> (box[0] = supplier.get()) != null);
        @SuppressWarnings("unchecked")
        T t = (T) box[0];
        return t;
    }
}
