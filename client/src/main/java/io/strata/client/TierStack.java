package io.strata.client;

import io.strata.config.policy.Policy;
import io.strata.core.tier.Tier;
import io.strata.core.tier.TierKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The data tiers this client reads and writes through, composed bottom-up by one builder:
 * L3 (the storage client) always, each configured tier over the one below it ({@code L1(L3)}
 * today; {@code L1(L2(L3))} once L2 is configured). Each layer says which files use it
 * ({@code tiers.l1} for L1): a file enters the stack at the top-most layer its policy uses, and
 * a layer it enters passes calls down for what the file's policy does not ask of it. Optional
 * capabilities are found by {@link #facet}, top-down. The stack owns its tiers and closes them
 * top-down.
 */
final class TierStack implements AutoCloseable {
    private record Layer(Tier tier, Predicate<Policy> usedBy) {
    }

    /** Top first. */
    private final List<Layer> layers;

    private TierStack(List<Layer> layers) {
        this.layers = List.copyOf(layers);
    }

    static Builder over(Tier l3) {
        return new Builder(l3);
    }

    /** Composes the stack bottom-up; a layer that fails to build closes what was built. */
    static final class Builder {
        private final List<Layer> bottomUp = new ArrayList<>();

        private Builder(Tier l3) {
            if (l3.kind() != TierKind.L3) {
                throw new IllegalArgumentException("a tier stack stands on L3, not " + l3.kind());
            }
            bottomUp.add(new Layer(l3, p -> true));
        }

        /** Adds {@code make(tier below)} on top, used by files whose policy passes {@code usedBy}. */
        Builder layer(Function<Tier, Tier> make, Predicate<Policy> usedBy) {
            Tier below = bottomUp.get(bottomUp.size() - 1).tier();
            Tier t;
            try {
                t = make.apply(below);
            } catch (RuntimeException e) {
                build().close();
                throw e;
            }
            bottomUp.add(new Layer(t, usedBy));
            return this;
        }

        TierStack build() {
            List<Layer> top = new ArrayList<>(bottomUp);
            java.util.Collections.reverse(top);
            return new TierStack(top);
        }
    }

    /** The tier a file with {@code policy} enters the stack at: the top-most layer its policy uses. */
    Tier tierFor(FilePolicy policy) {
        for (Layer l : layers) {
            if (l.usedBy().test(policy.policy())) {
                return l.tier();
            }
        }
        throw new IllegalStateException("no tier for " + policy);
    }

    Tier l3() {
        return layers.get(layers.size() - 1).tier();
    }

    /** The first tier, top-down, that has the capability {@code type}. */
    <T> Optional<T> facet(Class<T> type) {
        for (Layer l : layers) {
            Optional<T> f = l.tier().facet(type);
            if (f.isPresent()) {
                return f;
            }
        }
        return Optional.empty();
    }

    /** The tiers, top first (tests and tools). */
    List<Tier> tiers() {
        return layers.stream().map(Layer::tier).toList();
    }

    @Override
    public void close() {
        for (Layer l : layers) {
            l.tier().close();
        }
    }
}
