package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.strata.core.InodeId;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.FileChunks;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.Tier;
import io.strata.core.tier.TierKind;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A real tier with its calls counted: reads and bytes asked, writes, the most calls in flight at
 * once, and an optional delay before each read or write reaches the tier below (to make
 * parallelism and out-of-order completion observable); writes may be made to fail (a chain
 * member down past the I/O timeout, injected).
 */
final class CountingTier implements Tier {
    final Tier below;
    final AtomicLong reads = new AtomicLong();
    final AtomicLong readBytes = new AtomicLong();
    final AtomicLong writes = new AtomicLong();
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger maxInFlight = new AtomicInteger();
    final ConcurrentLinkedQueue<ChunkAddress> written = new ConcurrentLinkedQueue<>();
    final ConcurrentHashMap<Long, Long> delayMsByInode = new ConcurrentHashMap<>();
    private final java.util.concurrent.ScheduledExecutorService timer;
    volatile long delayMs;
    /** The next this many writes fail with a timeout, after {@link #delayMs}, without reaching the tier. */
    final AtomicInteger failWrites = new AtomicInteger();

    CountingTier(Tier below, java.util.concurrent.ScheduledExecutorService timer) {
        this.below = below;
        this.timer = timer;
    }

    private <T> CompletableFuture<T> counted(ChunkAddress c, java.util.function.Supplier<CompletableFuture<T>> call) {
        int now = inFlight.incrementAndGet();
        maxInFlight.accumulateAndGet(now, Math::max);
        long d = delayMsByInode.getOrDefault(c.id().inode().value(), delayMs);
        CompletableFuture<T> f;
        if (d > 0) {
            CompletableFuture<Void> wait = new CompletableFuture<>();
            timer.schedule(() -> wait.complete(null), d, TimeUnit.MILLISECONDS);
            f = wait.thenCompose(v -> call.get());
        } else {
            f = call.get();
        }
        return f.whenComplete((v, e) -> inFlight.decrementAndGet());
    }

    void reset() {
        reads.set(0);
        readBytes.set(0);
        writes.set(0);
        maxInFlight.set(0);
        written.clear();
    }

    @Override
    public TierKind kind() {
        return below.kind();
    }

    @Override
    public CompletableFuture<ByteBuf> readAsync(ChunkAddress chunk, long offset, int length, IoOptions options) {
        reads.incrementAndGet();
        readBytes.addAndGet(length);
        return counted(chunk, () -> below.readAsync(chunk, offset, length, options));
    }

    @Override
    public CompletableFuture<Void> writeAsync(ChunkAddress chunk, long offset, ByteBuf data, IoOptions options) {
        writes.incrementAndGet();
        written.add(chunk);
        if (failWrites.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            return counted(chunk, () -> CompletableFuture.failedFuture(
                    new io.strata.core.StrataException(io.strata.core.Status.TIMEOUT, "injected: write of " + chunk + " timed out")));
        }
        return counted(chunk, () -> below.writeAsync(chunk, offset, data, options));
    }

    @Override
    public CompletableFuture<Void> truncateAsync(ChunkAddress chunk, long length, IoOptions options) {
        return below.truncateAsync(chunk, length, options);
    }

    @Override
    public CompletableFuture<Void> removeAsync(ChunkAddress chunk, IoOptions options) {
        return below.removeAsync(chunk, options);
    }

    @Override
    public CompletableFuture<long[]> chunksOfAsync(FileChunks file, long fromIndex, IoOptions options) {
        return below.chunksOfAsync(file, fromIndex, options);
    }

    @Override
    public CompletableFuture<Void> flushAsync(InodeId inode, IoOptions options) {
        return below.flushAsync(inode, options);
    }

    @Override
    public void close() {
        below.close();
    }
}
