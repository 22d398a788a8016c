package io.strata.storage;

import io.strata.core.ChunkId;
import io.strata.core.TargetId;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * Serialises the updates of each chunk on a target without blocking a thread: a holder runs,
 * the next one starts (on {@code executor}) when the holder's future completes. Entries exist
 * only while a chunk has work queued.
 */
final class ChunkLocks {
    private record Key(TargetId target, ChunkId chunk) {
    }

    private final ConcurrentHashMap<Key, CompletableFuture<Void>> tails = new ConcurrentHashMap<>();
    private final Executor executor;

    ChunkLocks(Executor executor) {
        this.executor = executor;
    }

    /** Runs {@code body} once every earlier holder of the chunk is done; releases when its future completes. */
    <T> CompletableFuture<T> withLock(TargetId target, ChunkId chunk, Supplier<CompletableFuture<T>> body) {
        Key key = new Key(target, chunk);
        CompletableFuture<Void> mine = new CompletableFuture<>();
        CompletableFuture<Void> prev = tails.put(key, mine);
        CompletableFuture<Void> start = prev == null ? CompletableFuture.completedFuture(null) : prev;
        return start.thenComposeAsync(x -> {
            CompletableFuture<T> f;
            try {
                f = body.get();
            } catch (Throwable t) {
                f = CompletableFuture.failedFuture(t);
            }
            return f.whenComplete((r, e) -> {
                tails.remove(key, mine);
                mine.complete(null);
            });
        }, executor);
    }

    /**
     * Completes once every holder of a chunk lock on {@code target} at the time of the call, and
     * every body queued behind one, is done. Later holders are not waited for.
     */
    CompletableFuture<Void> drained(TargetId target) {
        List<CompletableFuture<Void>> now = new ArrayList<>();
        tails.forEach((k, f) -> {
            if (k.target().equals(target)) {
                now.add(f);
            }
        });
        return CompletableFuture.allOf(now.toArray(CompletableFuture[]::new));
    }

    int held() {
        return tails.size();
    }
}
