package io.strata.protocol.meta;

import io.strata.core.ChainId;
import io.strata.core.InodeId;
import io.strata.core.tier.FileChunks;
import java.util.List;

/**
 * Where a file's chunks live, fixed when the file is created (docs/design.md, "Data model"): chunk
 * {@code i} is on chain {@code chains[i % stripeWidth]}. The chains were drawn from chain table
 * {@code tableId} version {@code tableVersion} by {@link ChainChooser} version
 * {@code chooserVersion} from {@code baseIndex} and {@code seed}, which are kept so that the
 * choice can be recomputed and audited; {@code chains} is the result, so a client needs no
 * table to map a chunk to its chain.
 */
public record Layout(int chunkSize, int stripeWidth, int tableId, int tableVersion, int replicas,
                     int chooserVersion, int baseIndex, long seed, List<ChainId> chains) {
    public Layout {
        if (chunkSize < 64 * 1024 || chunkSize > 64 * 1024 * 1024 || Integer.bitCount(chunkSize) != 1) {
            throw new IllegalArgumentException("chunk size must be a power of two in [64KiB, 64MiB], got " + chunkSize);
        }
        if (chains == null || chains.size() != stripeWidth || stripeWidth < 1) {
            throw new IllegalArgumentException("a layout of stripe width " + stripeWidth + " needs as many chains, got " + chains);
        }
        chains = List.copyOf(chains);
    }

    /** The chain holding chunk {@code index}. */
    public ChainId chainOf(long index) {
        return chains.get((int) Long.remainderUnsigned(index, stripeWidth));
    }

    /** The chunks of file {@code inode} under this layout, as tiers address them. */
    public FileChunks chunks(InodeId inode) {
        return new FileChunks(inode, chunkSize, chains);
    }

    /** How many chunks hold {@code length} bytes. */
    public long chunksFor(long length) {
        return length <= 0 ? 0 : (length + chunkSize - 1) / chunkSize;
    }
}
