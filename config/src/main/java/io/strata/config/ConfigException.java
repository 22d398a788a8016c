package io.strata.config;

import io.strata.core.Status;
import io.strata.core.StrataException;

/** A configuration value that is missing, malformed or out of range; names the full key path. */
public final class ConfigException extends StrataException {
    private static final long serialVersionUID = 1L;
    private final String key;

    public ConfigException(String key, String message) {
        super(Status.CONFIG_INVALID, key.isEmpty() ? message : key + ": " + message);
        this.key = key;
    }

    /** The dotted path of the offending key ({@code storage.targets[1].path}). */
    public String key() {
        return key;
    }
}
