package io.strata.l1;

import io.strata.core.InodeId;

/**
 * What the L1 cache holds of one file, over all its data versions (for {@code strata cache stat PATH}).
 *
 * @param inode           the file
 * @param memoryBlocks    its blocks in memory
 * @param memoryBytes     their bytes
 * @param nvmeBlocks      its blocks on NVMe
 * @param nvmeBytes       their bytes
 * @param pinnedBytes     NVMe bytes of its pinned blocks
 * @param unflushedWrites its absorbed writes not yet at the tier below
 * @param unflushedBytes  their bytes
 */
public record FileStats(InodeId inode, long memoryBlocks, long memoryBytes, long nvmeBlocks, long nvmeBytes, long pinnedBytes,
                        long unflushedWrites, long unflushedBytes) {
}
