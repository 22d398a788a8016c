package io.strata.core.tier;

/**
 * What a file's directory policy asks of the L2 pool for one I/O (policy {@code tiers.l2} and
 * {@code durability}). Tiers other than L2 ignore it.
 *
 * @param stage      the file is staged: writes go to L2 agents and are drained to L3 in the background
 * @param durableL2  fsync and close return once both L2 copies are on stable storage
 *                   ({@code durability = l2}); false: they wait until the bytes are durable in L3
 * @param replicas   copies of each staged chunk, on distinct agents
 * @param cached     where a prefetch put copies of the file's chunks in L2 (reads try them before
 *                   L3); null when it has none at the file's current data version
 */
public record StageHints(boolean stage, boolean durableL2, int replicas, CachedCopies cached) {
    /** Not staged. */
    public static final StageHints NONE = new StageHints(false, false, 2, null);

    public StageHints(boolean stage, boolean durableL2, int replicas) {
        this(stage, durableL2, replicas, null);
    }

    public StageHints {
        if (replicas < 1 || replicas > 8) {
            throw new IllegalArgumentException("l2 replicas must be 1..8, got " + replicas);
        }
        if (durableL2 && !stage) {
            throw new IllegalArgumentException("durability in L2 needs staging");
        }
    }

    /** The same hints with the file's prefetched copies ({@code null}: none). */
    public StageHints withCached(CachedCopies c) {
        return c == cached ? this : new StageHints(stage, durableL2, replicas, c);
    }
}
