package io.strata.config.policy;

/** Where a write must be before fsync/close returns (policy field {@code durability}). */
public enum Durability {
    /** On every serving replica of the L3 chain (default). */
    L3,
    /** On the L2 pool's replicas; the drain copies it to L3 later. Needs {@code tiers.l2 = stage}. */
    L2;

    public String policyName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
