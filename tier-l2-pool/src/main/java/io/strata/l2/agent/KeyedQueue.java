package io.strata.l2.agent;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * Runs tasks one at a time per key, in submission order, on {@code executor}; tasks of different
 * keys run in parallel. A task's future completing (normally or not) lets the next one start.
 * The agent orders every update, fetch and drain snapshot of one chunk through it (reads do not
 * wait in it: a copy's lock in {@link CopyStore} keeps them apart from whole changes).
 */
final class KeyedQueue<K> {
    private final ConcurrentHashMap<K, CompletableFuture<Void>> tails = new ConcurrentHashMap<>();
    private final Executor executor;

    KeyedQueue(Executor executor) {
        this.executor = executor;
    }

    <T> CompletableFuture<T> run(K key, Supplier<CompletableFuture<T>> task) {
        CompletableFuture<T> result = new CompletableFuture<>();
        CompletableFuture<Void> mine = tails.compute(key, (k, prev) -> {
            CompletableFuture<Void> start = prev == null ? CompletableFuture.completedFuture(null) : prev;
            CompletableFuture<T> f = start.thenComposeAsync(v -> {
                try {
                    return task.get();
                } catch (Throwable t) {
                    return CompletableFuture.failedFuture(t);
                }
            }, executor);
            f.whenComplete((v, e) -> {
                if (e != null) {
                    result.completeExceptionally(e);
                } else {
                    result.complete(v);
                }
            });
            return f.handle((v, e) -> null);
        });
        mine.thenRun(() -> tails.remove(key, mine)); // outside compute: it may run inline
        return result;
    }
}
