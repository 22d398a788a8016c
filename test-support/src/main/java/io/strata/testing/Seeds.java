package io.strata.testing;

import java.security.SecureRandom;

/** Where test seeds come from: {@code -Dstrata.seed} when set, otherwise a fresh random one. */
public final class Seeds {
    private Seeds() {
    }

    public static long pick() {
        String fixed = System.getProperty("strata.seed");
        if (fixed != null && !fixed.isBlank()) {
            return Long.parseLong(fixed.trim());
        }
        return new SecureRandom().nextLong();
    }
}
