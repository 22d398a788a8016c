package io.strata.hooks;

import java.util.Locale;

/**
 * Where a hint is in its life (docs/scheduler-hooks.md). {@code accepted}: stored, not yet
 * planned; {@code staging}: its chunks are being fetched into L2 and the estimate meets the
 * deadline; {@code at-risk}: the estimate passes the deadline; {@code late}: the deadline passed
 * before it was ready; {@code ready}: every chunk is in L2 and pinned for the job;
 * {@code failed}: it cannot be staged (the message says why); {@code cancelled}: stopped by a
 * cancel or by a newer hint that superseded it.
 */
public enum HintState {
    ACCEPTED, STAGING, AT_RISK, LATE, READY, FAILED, CANCELLED;

    /** The API spelling: {@code accepted}, {@code at-risk}, ... */
    public String text() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    public static HintState parse(String s) {
        for (HintState h : values()) {
            if (h.text().equals(s)) {
                return h;
            }
        }
        throw new IllegalArgumentException("unknown hint state \"" + s + "\"");
    }

    /** Still fetching (or about to). */
    public boolean active() {
        return this == ACCEPTED || this == STAGING || this == AT_RISK || this == LATE;
    }

    /** Nothing more happens to it until its job ends. */
    public boolean settled() {
        return this == READY || this == FAILED || this == CANCELLED;
    }
}
