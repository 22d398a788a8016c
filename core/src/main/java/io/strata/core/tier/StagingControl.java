package io.strata.core.tier;

import io.strata.core.InodeId;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;

/** A staging tier's facet (the L2 pool): warming a file's copies before a restore reads it. */
public interface StagingControl {
    /** What a warm did: whether the file was staged at all, chunk copies already there, copies fetched back from below and their bytes. */
    record Warmed(boolean staged, int present, int fetched, long fetchedBytes) {
    }

    /**
     * Makes every chunk copy of {@code inode} the tier staged present again on the nodes that hold
     * it (copies evicted after they were made durable below are fetched back), so reads are served
     * from this tier. {@code address} gives a chunk index's address.
     */
    CompletableFuture<Warmed> warmAsync(InodeId inode, IntFunction<ChunkAddress> address, IoOptions io);
}
