package io.strata.protocol.meta;

import java.util.List;
import java.util.Map;

/**
 * A directory's policy as {@code strata policy get|explain} shows it: the overrides it sets
 * itself, and every field's effective value with the ancestor path it came from ("default"
 * when nobody set it).
 */
public record PolicyInfo(String path, Map<String, String> overrides, List<Field> effective) {
    /** One field's effective value and the directory that set it ({@code from}: a path, or "default"). */
    public record Field(String key, String value, String from) {
    }

    public PolicyInfo {
        overrides = Map.copyOf(overrides);
        effective = List.copyOf(effective);
    }

    /** The effective value of {@code key} (a policy field key such as {@code consistency}). */
    public java.util.Optional<String> value(String key) {
        return effective.stream().filter(f -> f.key().equals(key)).map(Field::value).findFirst();
    }
}
