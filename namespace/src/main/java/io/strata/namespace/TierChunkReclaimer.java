package io.strata.namespace;

import io.strata.core.InodeId;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.Tier;
import io.strata.protocol.meta.Layout;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Frees a deleted file's chunks through a tier (the meta service's garbage collector calls it,
 * in the {@code background} QoS class): lists the chunks the file has ({@link Tier#chunksOfAsync},
 * which asks each of the file's chains once) and removes each; cuts what a dead writer left past
 * a file's length the same way. L1 caches need nothing: their
 * entries are keyed by inode ids, which are never reused.
 */
public final class TierChunkReclaimer implements ChunkReclaimer {
    private final Tier tier;
    private final IoOptions io;

    /** {@code tier} stays owned by the caller. */
    public TierChunkReclaimer(Tier tier, Duration timeout) {
        this.tier = tier;
        this.io = new IoOptions(0, QosClass.BACKGROUND, timeout);
    }

    @Override
    public CompletableFuture<long[]> chunksAsync(InodeId inode, Layout layout, long from) {
        return tier.chunksOfAsync(layout.chunks(inode), from, io);
    }

    @Override
    public CompletableFuture<Void> removeAsync(InodeId inode, Layout layout, long index) {
        try {
            return tier.removeAsync(layout.chunks(inode).address(index), io);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Void> truncateAsync(InodeId inode, Layout layout, long index, long length) {
        try {
            return tier.truncateAsync(layout.chunks(inode).address(index), length, io);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
