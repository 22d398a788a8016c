package io.strata.l2.agent;

import java.util.List;

/**
 * What an agent knows of one chunk copy it holds (or held): the staging epoch and the update
 * sequence the copy reflects, its length, the last update known durable in L3, where the chunk
 * lives in L3 (chain, chunk size), its holders, and when its oldest undrained update was
 * acknowledged. A copy that is not {@code present} is a tombstone: its bytes were evicted after
 * the drain (so L3 has them); it tells readers to go below instead of reporting a lost chunk.
 *
 * @param seq          the last update applied (sequences of a chunk only grow, across epochs too)
 * @param drainedSeq   the last update known durable in L3; -1: none
 * @param stagedMillis when the oldest update not yet drained was acknowledged (drain order, lag)
 * @param removed      the last update removed the chunk (the drain removes it in L3)
 */
record Copy(long epoch, long seq, long length, long drainedSeq, int chain, int chunkSize, List<Integer> holders,
            long stagedMillis, boolean present, boolean removed) {
    Copy {
        holders = List.copyOf(holders);
    }

    /** Whether an update of this copy is not yet durable in L3. */
    boolean undrained() {
        return present && drainedSeq < seq;
    }

    Copy drainedAt(long s) {
        return new Copy(epoch, seq, length, Math.max(drainedSeq, s), chain, chunkSize, holders, stagedMillis, present, removed);
    }

    /** The tombstone left when the bytes are evicted. */
    Copy evicted() {
        return new Copy(epoch, seq, 0, drainedSeq, chain, chunkSize, holders, stagedMillis, false, removed);
    }
}
