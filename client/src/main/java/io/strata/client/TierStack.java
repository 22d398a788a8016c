package io.strata.client;

import io.strata.core.tier.Tier;
import java.util.Optional;

/**
 * The data tiers this client reads and writes through: L3 (the storage client) always, and L1
 * over it when the client has an L1 cache configured. Which one a file uses is its policy's
 * business ({@code tiers.l1}). The stack owns both tiers and closes L1 before L3.
 */
final class TierStack implements AutoCloseable {
    private final Tier l3;
    private final Tier l1;

    TierStack(Tier l3, Tier l1) {
        this.l3 = l3;
        this.l1 = l1;
    }

    /** The top of the stack for a file with {@code policy}. */
    Tier tierFor(FilePolicy policy) {
        return l1 != null && policy.policy().l1() ? l1 : l3;
    }

    Tier l3() {
        return l3;
    }

    Optional<Tier> l1() {
        return Optional.ofNullable(l1);
    }

    @Override
    public void close() {
        if (l1 != null) {
            l1.close();
        }
        l3.close();
    }
}
