package io.strata.namespace;

import io.strata.protocol.meta.Layout;
import io.strata.core.InodeId;
import java.util.concurrent.CompletableFuture;

/**
 * The data tiers as the garbage collector sees them: list what a deleted file left, remove it
 * chunk by chunk; for a file whose writer died, list and cut what lies past its length. The collector decides the pace (a rate limit, a bound on removals in flight);
 * an implementation only talks to the tiers (the client's over the tier stack; tests use a
 * directory of chunk files they can count).
 *
 * <p>Contract: {@link #chunksAsync} lists every chunk of {@code inode} that exists, whatever the
 * file's recorded length was (a client that crashed mid-write can leave chunks past it), at a
 * cost that follows the chunks that exist, never the file's length. Removing a missing chunk
 * succeeds, so a repeated pass after a failure is harmless.
 */
public interface ChunkReclaimer {
    /** The indexes of the chunks of {@code inode} (laid out by {@code layout}) that exist, ascending. */
    default CompletableFuture<long[]> chunksAsync(InodeId inode, Layout layout) {
        return chunksAsync(inode, layout, 0);
    }

    /** As {@link #chunksAsync(InodeId, Layout)}, from chunk index {@code from} on. */
    CompletableFuture<long[]> chunksAsync(InodeId inode, Layout layout, long from);

    /** Removes chunk {@code index} of {@code inode}. */
    CompletableFuture<Void> removeAsync(InodeId inode, Layout layout, long index);

    /** Cuts chunk {@code index} of {@code inode} to {@code length} bytes (a shorter chunk reads as zeros up to it). */
    CompletableFuture<Void> truncateAsync(InodeId inode, Layout layout, long index, long length);

    /** Frees nothing (a namespace without data tiers, e.g. a metadata benchmark). */
    ChunkReclaimer NONE = new ChunkReclaimer() {
        @Override
        public CompletableFuture<long[]> chunksAsync(InodeId inode, Layout layout, long from) {
            return CompletableFuture.completedFuture(new long[0]);
        }

        @Override
        public CompletableFuture<Void> removeAsync(InodeId inode, Layout layout, long index) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> truncateAsync(InodeId inode, Layout layout, long index, long length) {
            return CompletableFuture.completedFuture(null);
        }
    };
}
