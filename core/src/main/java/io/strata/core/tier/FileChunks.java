package io.strata.core.tier;

import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import java.util.List;

/**
 * The chunks of one file as a tier sees them: chunk {@code i} of {@code inode} is
 * {@code chunkSize} bytes on chain {@code chains[i mod chains.size()]} (the file's layout, fixed
 * at create). Tiers use it for operations on a whole file: listing the chunks that exist, for
 * the garbage collector and truncate.
 */
public record FileChunks(InodeId inode, int chunkSize, List<ChainId> chains) {
    /** The most chains one file's chunks are spread over (policy field {@code stripe.width}). */
    public static final int MAX_STRIPE_WIDTH = 4096;

    public FileChunks {
        if (inode == null || chains == null || chains.isEmpty()) {
            throw new IllegalArgumentException("file chunks need an inode and at least one chain");
        }
        chains = List.copyOf(chains);
    }

    /** The chain holding chunk {@code index}. */
    public ChainId chainOf(long index) {
        return chains.get((int) Long.remainderUnsigned(index, chains.size()));
    }

    /** Where chunk {@code index} lives; FILE_TOO_LARGE past the largest chunk index. */
    public ChunkAddress address(long index) {
        if (index < 0 || index > ChunkId.MAX_INDEX) {
            throw new StrataException(Status.FILE_TOO_LARGE, "chunk " + index + " of " + inode + " is past the largest file");
        }
        return new ChunkAddress(new ChunkId(inode, (int) index), chainOf(index), chunkSize);
    }

    /** The distinct chains of the layout, in stripe order. */
    public List<ChainId> distinctChains() {
        return chains.stream().distinct().toList();
    }
}
