package io.strata.namespace;

import io.strata.core.InodeId;
import java.util.concurrent.CompletableFuture;

/**
 * Frees the data of a file the namespace deleted. The garbage collector calls it for every file
 * whose last name and last open session are gone; the client issue implements it over the tier
 * stack (remove the chunks from L3, and from L2/L1 where present). Tests use a directory of chunk
 * files they can count.
 *
 * <p>Contract: remove every chunk of {@code inode}. {@code knownChunks} is how many chunks the
 * metadata knows of (the file's high-water mark: indexes 0..knownChunks-1 on
 * {@code layout.chainOf(i)}); an implementation must remove at least those and may scan for more
 * (a client that crashed mid-write can leave chunks past the recorded length). Removing a missing
 * chunk succeeds, so a repeated call is harmless: the collector calls again after any failure.
 */
@FunctionalInterface
public interface ChunkReclaimer {
    CompletableFuture<Void> reclaimAsync(InodeId inode, Layout layout, long knownChunks);

    /** Frees nothing (a namespace without data tiers, e.g. a metadata benchmark). */
    ChunkReclaimer NONE = (inode, layout, n) -> CompletableFuture.completedFuture(null);
}
