package io.strata.config.policy;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;

/**
 * Computes a directory's effective policy from the overrides on the path from the root down to
 * it, and remembers where each value came from ({@code strata policy explain}).
 */
public final class PolicyResolver {
    private PolicyResolver() {
    }

    /** One directory on the path and the overrides it sets. */
    public record Level(String path, PolicyOverrides overrides) {
    }

    /** A field's effective value and the directory that set it ("default" when nobody did). */
    public record Source(PolicyField field, String value, String from) {
    }

    /** The effective policy and, per field, its source. */
    public record Effective(Policy policy, List<Source> sources) {
    }

    /**
     * Applies {@code levels} (root first) over {@code base}. A level whose overrides do not fit
     * with what it inherits (say durability=l2 under a parent without staging) is rejected
     * with the path of that level.
     */
    public static Effective resolve(Policy base, List<Level> levels) {
        Policy p = base;
        EnumMap<PolicyField, String> from = new EnumMap<>(PolicyField.class);
        for (Level l : levels) {
            try {
                p = p.with(l.overrides());
            } catch (PolicyException e) {
                throw new PolicyException(e.field(), "in " + l.path() + ": " + e.getMessage());
            }
            for (PolicyField f : l.overrides().withProfilePresets().values().keySet()) {
                boolean own = l.overrides().values().containsKey(f);
                from.put(f, own ? l.path() : l.path() + " (profile " + l.overrides().profile().policyName() + ")");
            }
        }
        List<Source> sources = new ArrayList<>();
        for (PolicyField f : PolicyField.values()) {
            sources.add(new Source(f, f.get(p), from.getOrDefault(f, "default")));
        }
        return new Effective(p, sources);
    }
}
