package io.strata.core.util;

import io.netty.util.internal.ThreadExecutorMap;
import io.strata.core.Status;
import io.strata.core.StrataException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongFunction;

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

    /**
     * Runs {@code task(i)} for i in [from, to) with at most {@code parallel} in flight; fails with
     * the first error (tasks already started finish first; none starts after it). Tasks that
     * complete at once do not deepen the stack: one thread at a time starts tasks, the others
     * only tell it to look again.
     */
    public static CompletableFuture<Void> bounded(long from, long to, int parallel, LongFunction<CompletableFuture<Void>> task) {
        if (parallel < 1) {
            throw new IllegalArgumentException("parallelism must be positive, got " + parallel);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        new Object() {
            long next = from;
            int running;
            Throwable error;
            boolean pumping;
            boolean again;

            void pump() {
                synchronized (this) {
                    if (pumping) {
                        again = true;
                        return;
                    }
                    pumping = true;
                }
                while (true) {
                    long i;
                    synchronized (this) {
                        if (error == null && next < to && running < parallel) {
                            i = next++;
                            running++;
                        } else if (again) {
                            again = false;
                            continue;
                        } else {
                            pumping = false;
                            if (running == 0 && (error != null || next >= to)) {
                                if (error == null) {
                                    done.complete(null);
                                } else {
                                    done.completeExceptionally(error);
                                }
                            }
                            return;
                        }
                    }
                    CompletableFuture<Void> f;
                    try {
                        f = task.apply(i);
                    } catch (RuntimeException e) {
                        f = CompletableFuture.failedFuture(e);
                    }
                    f.whenComplete((v, e) -> {
                        synchronized (this) {
                            running--;
                            if (e != null && error == null) {
                                error = StrataException.wrap(e);
                            }
                        }
                        pump();
                    });
                }
            }
        }.pump();
        return done;
    }
}
