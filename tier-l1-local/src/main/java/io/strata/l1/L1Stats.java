package io.strata.l1;

import java.time.Duration;

/**
 * What the L1 cache of this node holds and has done since it opened (for {@code strata cache stat}).
 *
 * @param memoryBytes        bytes held by the memory tier (weighed, including per-block bookkeeping)
 * @param memoryBlocks       blocks in the memory tier
 * @param memoryCapacity     the memory tier's capacity
 * @param nvmeBytes          bytes the NVMe tier's blocks take on disk (0 without an NVMe tier)
 * @param nvmeBlocks         blocks in the NVMe tier
 * @param nvmeCapacity       the NVMe tier's capacity (0 without one)
 * @param pinnedBytes        NVMe bytes of pinned blocks
 * @param memoryHits         blocks served from memory
 * @param nvmeHits           blocks served from NVMe
 * @param belowReads         blocks fetched from the tier below
 * @param corruptions        NVMe blocks found damaged or missing, dropped and fetched again
 * @param unflushedBytes     absorbed (write-back) bytes not yet at the tier below
 * @param unflushedWrites    absorbed writes not yet at the tier below
 * @param unflushedFiles     files with absorbed writes not yet at the tier below
 * @param oldestUnflushed    age of the oldest of them
 */
public record L1Stats(long memoryBytes, long memoryBlocks, long memoryCapacity, long nvmeBytes, long nvmeBlocks,
                      long nvmeCapacity, long pinnedBytes, long memoryHits, long nvmeHits, long belowReads,
                      long corruptions, long unflushedBytes, long unflushedWrites, int unflushedFiles,
                      Duration oldestUnflushed) {
    /** Blocks served by L1 (memory or NVMe) over all blocks served. */
    public double hitRatio() {
        long all = memoryHits + nvmeHits + belowReads;
        return all == 0 ? 0 : (double) (memoryHits + nvmeHits) / all;
    }
}
