package io.strata.config.policy;

/** How a directory uses the L2 pool (policy field {@code tiers.l2}). */
public enum L2Mode {
    /** Not at all (default). */
    OFF,
    /** Writes land in L2 and drain to L3 in the background (checkpoints). */
    STAGE,
    /** Reads are served from L2 where a scheduler prefetched them. */
    PREFETCH;

    public String policyName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
