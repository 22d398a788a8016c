package io.strata.l1;

import io.strata.store.CacheEntry;

/**
 * One block on NVMe, as the index records it: its length, the CRC32C of the whole block and of
 * each sub-block ({@link #subBlock} bytes; the last one may be shorter), and (in
 * {@link CacheEntry}) its pin, TTL and place in the eviction policy.
 */
final class BlockEntry extends CacheEntry<BlockKey> {
    /** Most sub-blocks per block: a block's CRC32C is also kept per sub-block so that a small read checks only what it reads. */
    static final int MAX_SUBS = 16;

    final int length;
    final int crc;
    final int[] subCrcs;

    BlockEntry(BlockKey key, int length, int crc, int[] subCrcs, boolean pinned, long ttlNanos, long lastAccess) {
        super(key, footprint(length), pinned, ttlNanos, lastAccess);
        this.length = length;
        this.crc = crc;
        this.subCrcs = subCrcs;
    }

    /** Bytes a block of {@code length} bytes takes on disk: whole 4 KiB pages plus an allowance for its inode and index entry. */
    static long footprint(int length) {
        return ((length + 4095L) & ~4095L) + 256;
    }

    /** Sub-block size for a block size: a sixteenth of the block, at least 4 KiB. */
    static int subBlock(int blockSize) {
        return Math.max(4096, (blockSize + MAX_SUBS - 1) / MAX_SUBS);
    }

    /** Number of sub-blocks of a block of {@code length} bytes. */
    static int subCount(int length, int blockSize) {
        int sub = subBlock(blockSize);
        return (length + sub - 1) / sub;
    }
}
