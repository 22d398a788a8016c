package io.strata.config.policy;

import io.strata.core.Status;
import io.strata.core.StrataException;

/** A policy field with a bad value or a bad combination; names the field. */
public final class PolicyException extends StrataException {
    private static final long serialVersionUID = 1L;
    private final String field;

    public PolicyException(String field, String message) {
        super(Status.INVALID_ARGUMENT, message.startsWith(field) ? message : field + ": " + message);
        this.field = field;
    }

    public String field() {
        return field;
    }
}
