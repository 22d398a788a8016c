package io.strata.core;

/**
 * Chunk {@code index} of file {@code inode}. A file of N chunks has indexes 0..N-1; the
 * largest file is {@link #MAX_INDEX}+1 chunks.
 */
public record ChunkId(InodeId inode, int index) implements Comparable<ChunkId> {
    /** Indexes are non-negative ints: at 64 MiB chunks that is 128 PiB per file. */
    public static final int MAX_INDEX = Integer.MAX_VALUE;

    public ChunkId {
        if (inode == null) {
            throw new IllegalArgumentException("chunk id needs an inode");
        }
        if (index < 0) {
            throw new IllegalArgumentException("chunk index must be >= 0, got " + index);
        }
    }

    public static ChunkId of(long inode, int index) {
        return new ChunkId(InodeId.of(inode), index);
    }

    /**
     * A well-spread 64-bit hash of (inode, index), for spreading chunks over stripes or replicas
     * in memory. Not stable across versions: never persist it.
     */
    public static long mix(long inode, int index) {
        long h = inode * 0x9E3779B97F4A7C15L ^ ((long) index * 0xC2B2AE3D27D4EB4FL);
        h ^= h >>> 31;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 29;
        return h;
    }

    /** {@link #mix(long, int)} of this chunk. */
    public long mix() {
        return mix(inode.value(), index);
    }

    @Override
    public int compareTo(ChunkId o) {
        int c = inode.compareTo(o.inode);
        return c != 0 ? c : Integer.compare(index, o.index);
    }

    @Override
    public String toString() {
        return Long.toUnsignedString(inode.value()) + ":" + index;
    }
}
