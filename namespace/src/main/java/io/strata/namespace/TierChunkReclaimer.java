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
 * which asks each of the file's chains once) and removes each. L1 caches need nothing: their
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
    public CompletableFuture<long[]> chunksAsync(InodeId inode, Layout layout) {
        return tier.chunksOfAsync(layout.chunks(inode), 0, io);
    }

    @Override
    public CompletableFuture<Void> removeAsync(InodeId inode, Layout layout, long index) {
        try {
            return tier.removeAsync(layout.chunks(inode).address(index), io);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
