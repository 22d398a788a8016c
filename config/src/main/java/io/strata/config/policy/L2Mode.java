package io.strata.config.policy;

/** How a directory uses the L2 pool (policy field {@code tiers.l2}). */
public enum L2Mode {
    /** Not at all: scheduler hints leave the files in L3, and reads never ask L2. */
    OFF,
    /** Writes land in L2 and drain to L3 in the background (checkpoints); hints may prefetch too. */
    STAGE,
    /** Reads are served from L2 where a scheduler's hint prefetched the files (default). */
    PREFETCH;

    public String policyName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
