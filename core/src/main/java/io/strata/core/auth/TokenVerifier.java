package io.strata.core.auth;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.time.Instant;

/**
 * Checks the tokens a daemon is shown: signed by this cluster's key and not expired. Which role
 * may do what is the server's to decide with the claims returned.
 */
public final class TokenVerifier {
    private final ClusterKey key;

    public TokenVerifier(ClusterKey key) {
        this.key = key;
    }

    /** The token's claims, or UNAUTHENTICATED naming what is wrong with it. */
    public Token verify(String encoded, Instant now) {
        Token t = Token.verified(key, encoded);
        if (!now.isBefore(t.expiresAt())) {
            throw new StrataException(Status.UNAUTHENTICATED, "token " + t.id() + " (role " + t.role() + ", subject "
                    + t.subject() + ") expired at " + t.expiresAt());
        }
        if (t.issuedAt().isAfter(now.plusSeconds(300))) {
            throw new StrataException(Status.UNAUTHENTICATED, "token " + t.id() + " is issued at " + t.issuedAt()
                    + ", more than 5 minutes ahead of this node's clock (" + now + ")");
        }
        return t;
    }

    @Override
    public String toString() {
        return "TokenVerifier";
    }
}
