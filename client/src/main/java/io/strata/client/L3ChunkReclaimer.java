package io.strata.client;

import io.strata.core.InodeId;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.Tier;
import io.strata.namespace.ChunkReclaimer;
import io.strata.namespace.Layout;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Frees a deleted file's chunks on the L3 chains (the meta service's garbage collector calls
 * it): removes chunks {@code 0..knownChunks-1}, each on {@code layout.chainOf(i)}, at most
 * {@link ChunkIo#TRUNCATE_PARALLELISM} at a time, in the {@code background} QoS class. Removing
 * a missing chunk succeeds, so a repeated call after a partial failure is harmless. L1 caches
 * need nothing: their entries are keyed by inode ids, which are never reused.
 */
public final class L3ChunkReclaimer implements ChunkReclaimer {
    private final Tier l3;
    private final IoOptions io;

    /** {@code l3} stays owned by the caller. */
    public L3ChunkReclaimer(Tier l3, Duration timeout) {
        this.l3 = l3;
        this.io = new IoOptions(0, QosClass.BACKGROUND, timeout);
    }

    @Override
    public CompletableFuture<Void> reclaimAsync(InodeId inode, Layout layout, long knownChunks) {
        return ChunkIo.bounded(0, knownChunks, ChunkIo.TRUNCATE_PARALLELISM,
                i -> l3.removeAsync(ChunkIo.address(inode, layout, i), io));
    }
}
