package io.strata.core.auth;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.time.Instant;
import java.util.Set;

/**
 * Checks the tokens a daemon is shown: signed by this cluster's key, not expired and not
 * revoked. Which role may do what is the server's to decide with the claims returned.
 *
 * <p>The revoked token ids are the cluster manager's list as this process last learnt it
 * ({@link #revoked(Set)}, called by whoever polls the manager); the RPC server checks every
 * request of an authenticated connection against it too, so a revocation also ends the
 * connections its token opened before.
 */
public final class TokenVerifier {
    private final ClusterKey key;
    private volatile Set<String> revoked = Set.of();

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
        if (isRevoked(t)) {
            throw revokedError(t);
        }
        return t;
    }

    /** Whether {@code t} is on the revocation list this process knows. */
    public boolean isRevoked(Token t) {
        return revoked.contains(t.id());
    }

    /** The error for a revoked token. */
    public static StrataException revokedError(Token t) {
        return new StrataException(Status.UNAUTHENTICATED, "token " + t.id() + " (role " + t.role() + ", subject " + t.subject()
                + ") has been revoked");
    }

    /** Replaces the revoked token ids (32 hex digits each) with {@code ids}. */
    public void revoked(Set<String> ids) {
        revoked = Set.copyOf(ids);
    }

    /** The revoked token ids this process knows. */
    public Set<String> revoked() {
        return revoked;
    }

    @Override
    public String toString() {
        return "TokenVerifier";
    }
}
