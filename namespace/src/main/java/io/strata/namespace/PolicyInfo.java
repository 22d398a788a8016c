package io.strata.namespace;

import io.strata.config.policy.PolicyResolver;
import java.util.List;
import java.util.Map;

/**
 * A directory's policy as {@code strata policy get|explain} shows it: the overrides it sets
 * itself, and every field's effective value with the ancestor path it came from ("default"
 * when nobody set it).
 */
public record PolicyInfo(String path, Map<String, String> overrides, List<PolicyResolver.Source> effective) {
    public PolicyInfo {
        overrides = Map.copyOf(overrides);
        effective = List.copyOf(effective);
    }
}
