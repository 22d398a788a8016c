package io.strata.config.policy;

import java.util.Map;

/**
 * A named set of field values a directory can take at once (policy field {@code profile}).
 * The profile's values apply at the directory that sets it, below the fields that directory
 * sets itself; its subdirectories inherit the result like any other value.
 */
public enum Profile {
    /** No preset (default). */
    NONE(Map.of()),
    /**
     * The directory is a checkpoint root (docs/checkpoints.md): each subdirectory is a generation
     * that is committed as a whole. Generations stage in L2 with durability l2, stripe wide and
     * run in the checkpoint QoS class.
     */
    CHECKPOINT(Map.of(PolicyField.TIERS_L2, "stage", PolicyField.DURABILITY, "l2", PolicyField.STRIPE_WIDTH, "16",
            PolicyField.QOS, "checkpoint"));

    private final Map<PolicyField, String> presets;

    Profile(Map<PolicyField, String> presets) {
        this.presets = presets;
    }

    /** The fields this profile sets, in their canonical spelling. */
    public Map<PolicyField, String> presets() {
        return presets;
    }

    public String policyName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
