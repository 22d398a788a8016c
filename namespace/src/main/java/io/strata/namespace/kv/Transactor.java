package io.strata.namespace.kv;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.time.StrataClock;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.random.RandomGenerator;

/**
 * Runs transaction bodies with retries. A body that fails with a retryable transaction status
 * ({@code TXN_CONFLICT}, or {@code TXN_MAYBE_COMMITTED}: the commit may or may not have
 * happened) is run again in a new transaction after a backoff; any other failure ends the
 * attempt with nothing written. Because a maybe-committed body is run again, every body must be
 * idempotent; the namespace makes its read-write operations so with request-id records.
 *
 * <p>Bodies run on {@code executor} (they block on the store); never on an event loop.
 * Metrics: {@code strata.kv.transactions{store,result}} and {@code strata.kv.retries{store,reason}}.
 */
public final class Transactor {
    private final KvStore store;
    private final Executor executor;
    private final StrataClock clock;
    private final RandomGenerator random;
    private final RetryPolicy policy;
    private final Metrics metrics;

    /** {@code clock} and {@code random} time and jitter the retries (the node's, from its context). */
    public Transactor(KvStore store, Executor executor, RetryPolicy policy, MeterRegistry meters, StrataClock clock,
                      RandomGenerator random) {
        this.store = store;
        this.executor = executor;
        this.clock = clock;
        this.random = random;
        this.policy = policy;
        this.metrics = meters == null ? null : new Metrics(meters, store.name());
    }

    public KvStore store() {
        return store;
    }

    /**
     * Runs {@code body} on the executor with retries; the future fails with a StrataException.
     * The executor's thread is not held while the commit is in flight: the body runs, its commit
     * is queued ({@link KvTransaction#commitAsync()}), and the thread goes on to other work. The
     * future completes (on the executor) once the commit is durable; a retryable failure runs
     * the body again on the executor after the same jittered backoff as {@link #run}.
     */
    public <T> CompletableFuture<T> runAsync(Function<KvTransaction, T> body) {
        CompletableFuture<T> out = new CompletableFuture<>();
        long deadline = clock.nanoTime() + policy.deadline().toNanos();
        submit(executor, () -> attempt(body, out, 1, deadline, policy.firstBackoff().toNanos()), out);
        return out;
    }

    private <T> void attempt(Function<KvTransaction, T> body, CompletableFuture<T> out, int attempt, long deadline, long backoff) {
        T result;
        CompletableFuture<Void> commit;
        try (KvTransaction tx = store.begin()) {
            result = body.apply(tx);
            commit = tx.commitAsync();
        } catch (RuntimeException e) {
            retryOrFail(body, out, e, attempt, deadline, backoff);
            return;
        } catch (Error e) {
            out.completeExceptionally(e);
            throw e;
        }
        if (commit.isDone() && !commit.isCompletedExceptionally()) {
            committed(out, result); // read-only, or a store that commits in the call: no hand-off
            return;
        }
        commit.whenComplete((v, e) -> {
            if (e == null) {
                // completed by the store's committer: answer on the executor, keep the committer free
                submit(executor, () -> committed(out, result), out);
            } else {
                retryOrFail(body, out, e, attempt, deadline, backoff);
            }
        });
    }

    private <T> void committed(CompletableFuture<T> out, T result) {
        if (metrics != null) {
            metrics.ok.increment();
        }
        out.complete(result);
    }

    private <T> void retryOrFail(Function<KvTransaction, T> body, CompletableFuture<T> out, Throwable e, int attempt,
                                 long deadline, long backoff) {
        StrataException se = StrataException.wrap(e);
        boolean retryable = se.status() == Status.TXN_CONFLICT || se.status() == Status.TXN_MAYBE_COMMITTED;
        if (!retryable) {
            if (metrics != null) {
                metrics.failed.increment();
            }
            out.completeExceptionally(se);
            return;
        }
        if (metrics != null) {
            (se.status() == Status.TXN_CONFLICT ? metrics.conflicts : metrics.maybeCommitted).increment();
        }
        if (attempt >= policy.maxAttempts() || clock.nanoTime() + backoff > deadline) {
            if (metrics != null) {
                metrics.failed.increment();
            }
            out.completeExceptionally(new StrataException(se.status(), "gave up after " + attempt + " attempts: " + se.getMessage(), se));
            return;
        }
        long next = Math.min(policy.maxBackoff().toNanos(), Math.max(backoff * 2, 1000));
        long pause = jittered(backoff);
        Executor later = pause <= 0 ? executor : CompletableFuture.delayedExecutor(pause, TimeUnit.NANOSECONDS, executor);
        submit(later, () -> attempt(body, out, attempt + 1, deadline, next), out);
    }

    private static void submit(Executor executor, Runnable task, CompletableFuture<?> out) {
        try {
            executor.execute(task);
        } catch (RejectedExecutionException e) {
            out.completeExceptionally(new StrataException(Status.SHUTTING_DOWN, "transaction workers stopped", e));
        }
    }

    /** Runs {@code body} on the calling thread with retries (for callers already on a worker). */
    public <T> T run(Function<KvTransaction, T> body) {
        long deadline = clock.nanoTime() + policy.deadline().toNanos();
        long backoff = policy.firstBackoff().toNanos();
        for (int attempt = 1; ; attempt++) {
            try (KvTransaction tx = store.begin()) {
                T result = body.apply(tx);
                tx.commit();
                if (metrics != null) {
                    metrics.ok.increment();
                }
                return result;
            } catch (RuntimeException e) {
                StrataException se = StrataException.wrap(e);
                boolean retryable = se.status() == Status.TXN_CONFLICT || se.status() == Status.TXN_MAYBE_COMMITTED;
                if (!retryable) {
                    if (metrics != null) {
                        metrics.failed.increment();
                    }
                    throw se;
                }
                if (metrics != null) {
                    (se.status() == Status.TXN_CONFLICT ? metrics.conflicts : metrics.maybeCommitted).increment();
                }
                if (attempt >= policy.maxAttempts() || clock.nanoTime() + backoff > deadline) {
                    if (metrics != null) {
                        metrics.failed.increment();
                    }
                    throw new StrataException(se.status(), "gave up after " + attempt + " attempts: " + se.getMessage(), se);
                }
            }
            sleepJittered(backoff);
            backoff = Math.min(policy.maxBackoff().toNanos(), Math.max(backoff * 2, 1000));
        }
    }

    private long jittered(long nanos) {
        return nanos <= 0 ? 0 : nanos / 2 + random.nextLong(nanos / 2 + 1);
    }

    private void sleepJittered(long nanos) {
        if (nanos <= 0) {
            return;
        }
        long n = jittered(nanos);
        try {
            TimeUnit.NANOSECONDS.sleep(n);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StrataException(Status.CANCELLED, "interrupted between transaction retries");
        }
    }

    static final class Metrics {
        final Counter ok;
        final Counter failed;
        final Counter conflicts;
        final Counter maybeCommitted;

        Metrics(MeterRegistry r, String store) {
            ok = Counter.builder("strata.kv.transactions").tag("store", store).tag("result", "committed").register(r);
            failed = Counter.builder("strata.kv.transactions").tag("store", store).tag("result", "failed").register(r);
            conflicts = Counter.builder("strata.kv.retries").tag("store", store).tag("reason", "conflict").register(r);
            maybeCommitted = Counter.builder("strata.kv.retries").tag("store", store).tag("reason", "maybe-committed").register(r);
        }
    }
}
