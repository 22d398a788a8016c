package io.strata.core.tier;

import io.strata.core.ChainId;
import io.strata.core.ChunkId;

/**
 * Where a chunk lives: its id, the chain its file's layout maps it to, and the chunk size of
 * that layout (reads and writes stay inside {@code [0, chunkSize)}).
 */
public record ChunkAddress(ChunkId id, ChainId chain, int chunkSize) {
    public static final int MIN_CHUNK_SIZE = 64 * 1024;
    public static final int MAX_CHUNK_SIZE = 64 * 1024 * 1024;

    public ChunkAddress {
        if (id == null || chain == null) {
            throw new IllegalArgumentException("a chunk address needs an id and a chain");
        }
        if (chunkSize < MIN_CHUNK_SIZE || chunkSize > MAX_CHUNK_SIZE || Integer.bitCount(chunkSize) != 1) {
            throw new IllegalArgumentException("chunk size must be a power of two in [64KiB, 64MiB], got " + chunkSize);
        }
    }

    /** Checks that [offset, offset+length) lies within the chunk. */
    public void checkRange(long offset, long length) {
        if (offset < 0 || length < 0 || offset + length > chunkSize) {
            throw new io.strata.core.StrataException(io.strata.core.Status.OFFSET_OUT_OF_RANGE,
                    "range [" + offset + ", " + (offset + length) + ") outside chunk " + id + " of " + chunkSize + " bytes");
        }
    }
}
