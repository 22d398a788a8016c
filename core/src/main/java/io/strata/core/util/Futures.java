package io.strata.core.util;

import io.netty.util.internal.ThreadExecutorMap;
import io.strata.core.Status;
import io.strata.core.StrataException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The one place where async code is waited on. It refuses to block a Netty event loop (that
 * would stall every connection on the loop) and turns failures into {@link StrataException}s.
 * Only edges call it: the CLI, FUSE callbacks, tests.
 */
public final class Futures {
    private Futures() {
    }

    public static <T> T join(CompletableFuture<T> f, Duration timeout) {
        if (ThreadExecutorMap.currentExecutor() != null) {
            throw new IllegalStateException("refusing to block on an event loop thread (" + Thread.currentThread().getName() + ")");
        }
        try {
            return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StrataException(Status.CANCELLED, "interrupted while waiting");
        } catch (ExecutionException e) {
            throw StrataException.wrap(e.getCause());
        } catch (TimeoutException e) {
            throw new StrataException(Status.TIMEOUT, "no answer within " + timeout.toMillis() + " ms");
        }
    }

    /** Joins with a generous bound (5 minutes) for work that has its own deadlines. */
    public static <T> T join(CompletableFuture<T> f) {
        return join(f, Duration.ofMinutes(5));
    }

    /** A future failed with {@code e} (never thrown). */
    public static <T> CompletableFuture<T> failed(StrataException e) {
        return CompletableFuture.failedFuture(e);
    }
}
