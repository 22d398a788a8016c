package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.strata.core.InodeId;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.FileChunks;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.Tier;
import io.strata.core.tier.TierKind;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts the reads and writes that reach a tier (the tier below L1 in tests) and passes everything
 * on; does not close it. Subclasses change one path and keep the rest.
 */
class CountingTier implements Tier {
    private final Tier inner;
    final AtomicInteger reads = new AtomicInteger();
    final AtomicInteger writes = new AtomicInteger();
    /** The bytes the reads asked for. */
    final java.util.concurrent.atomic.AtomicLong readLength = new java.util.concurrent.atomic.AtomicLong();

    CountingTier(Tier inner) {
        this.inner = inner;
    }

    @Override
    public TierKind kind() {
        return inner.kind();
    }

    @Override
    public CompletableFuture<ByteBuf> readAsync(ChunkAddress chunk, long offset, int length, IoOptions options) {
        reads.incrementAndGet();
        readLength.addAndGet(length);
        return inner.readAsync(chunk, offset, length, options);
    }

    @Override
    public CompletableFuture<Void> writeAsync(ChunkAddress chunk, long offset, ByteBuf data, IoOptions options) {
        writes.incrementAndGet();
        return inner.writeAsync(chunk, offset, data, options);
    }

    @Override
    public CompletableFuture<Void> truncateAsync(ChunkAddress chunk, long length, IoOptions options) {
        writes.incrementAndGet();
        return inner.truncateAsync(chunk, length, options);
    }

    @Override
    public CompletableFuture<Void> removeAsync(ChunkAddress chunk, IoOptions options) {
        writes.incrementAndGet();
        return inner.removeAsync(chunk, options);
    }

    @Override
    public CompletableFuture<long[]> chunksOfAsync(FileChunks file, long fromIndex, IoOptions options) {
        return inner.chunksOfAsync(file, fromIndex, options);
    }

    @Override
    public CompletableFuture<Void> flushAsync(InodeId inode, IoOptions options) {
        return inner.flushAsync(inode, options);
    }

    @Override
    public void close() {
    }
}
