package io.strata.core.tier;

/** The three tiers, top to bottom. */
public enum TierKind {
    /** Memory and NVMe cache on the compute node. */
    L1,
    /** Pooled NVMe of the compute nodes. */
    L2,
    /** CRAQ-replicated storage nodes: the durable copy. */
    L3
}
