package io.strata.config.policy;

import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The fields a directory sets itself, each already checked and in canonical spelling; the rest
 * it inherits. Immutable. Stored with the directory by the namespace as {@link #toMap()}.
 */
public final class PolicyOverrides {
    public static final PolicyOverrides NONE = new PolicyOverrides(new EnumMap<>(PolicyField.class));

    private final EnumMap<PolicyField, String> values;

    private PolicyOverrides(EnumMap<PolicyField, String> values) {
        this.values = values;
    }

    /** Parses "key=value" assignments; "key=inherit" removes an override. */
    public static PolicyOverrides parse(Iterable<String> assignments) {
        PolicyOverrides o = NONE;
        for (String a : assignments) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new PolicyException(a, "expected key=value, got \"" + a + "\"");
            }
            o = o.with(a.substring(0, eq).trim(), a.substring(eq + 1).trim());
        }
        return o;
    }

    /** Rebuilds overrides stored by {@link #toMap()}, rechecking every value. */
    public static PolicyOverrides fromMap(Map<String, String> stored) {
        PolicyOverrides o = NONE;
        for (var e : stored.entrySet()) {
            o = o.with(e.getKey(), e.getValue());
        }
        return o;
    }

    /** A copy with {@code key} set ({@code "inherit"} removes it). */
    public PolicyOverrides with(String key, String value) {
        PolicyField f = PolicyField.byKey(key);
        EnumMap<PolicyField, String> copy = new EnumMap<>(values);
        if ("inherit".equals(value)) {
            copy.remove(f);
        } else {
            copy.put(f, f.normalize(value));
        }
        return new PolicyOverrides(copy);
    }

    /** These overrides with {@code newer} laid over them. */
    public PolicyOverrides merge(PolicyOverrides newer) {
        EnumMap<PolicyField, String> copy = new EnumMap<>(values);
        copy.putAll(newer.values);
        return new PolicyOverrides(copy);
    }

    /** The profile these overrides set, if any. */
    public Profile profile() {
        String p = values.get(PolicyField.PROFILE);
        return p == null ? Profile.NONE : (Profile) PolicyField.PROFILE.parse(p);
    }

    /** These overrides over the presets of the profile they set (the same overrides when they set none). */
    public PolicyOverrides withProfilePresets() {
        Profile p = profile();
        if (p.presets().isEmpty()) {
            return this;
        }
        EnumMap<PolicyField, String> copy = new EnumMap<>(p.presets());
        copy.putAll(values);
        return new PolicyOverrides(copy);
    }

    public boolean isEmpty() {
        return values.isEmpty();
    }

    public Map<PolicyField, String> values() {
        return Collections.unmodifiableMap(values);
    }

    /** Keyed by the users' field names, in field order. */
    public Map<String, String> toMap() {
        Map<String, String> m = new LinkedHashMap<>();
        values.forEach((k, v) -> m.put(k.key(), v));
        return m;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PolicyOverrides p && p.values.equals(values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    /** "stripe.chunk-size=4MiB replicas=2", or "(none)". */
    @Override
    public String toString() {
        if (values.isEmpty()) {
            return "(none)";
        }
        StringBuilder sb = new StringBuilder();
        values.forEach((k, v) -> sb.append(sb.isEmpty() ? "" : " ").append(k.key()).append('=').append(v));
        return sb.toString();
    }
}
