package io.strata.namespace.service;

import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.IdRanges;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.protocol.meta.Caller;
import java.util.Arrays;
import java.util.List;

/**
 * Who a meta request may act as, given the token of its connection (docs/security.md, "Who may
 * act as which user"). The {@link Caller} in a request is the client's word; this decides how
 * much of it to believe:
 * <ul>
 *   <li>No token (the server does not authenticate): the caller as claimed, as before.</li>
 *   <li>{@code admin}, and the daemons that act for the cluster rather than a user ({@code l2}:
 *       drain reports; {@code scheduler}: the hooks' prefetch marks; {@code meta}): any caller,
 *       root included.</li>
 *   <li>{@code client}: the uid must be in the token's uid range and the gid and every
 *       supplementary group in its gid range, else PERMISSION_DENIED naming the id and the
 *       range. A token without a range claim allows every id but 0. Root is squashed, as NFS
 *       does by default: uid 0 claimed by a token whose uid range does not name 0 becomes
 *       {@link #NOBODY}:{@link #NOBODY} without groups, and gid or group 0 that the gid range
 *       does not name becomes {@link #NOBODY} (group 0 is dropped). Squashing rather than
 *       refusing lets a root process use a mount as an unprivileged user can, which is what an
 *       administrator expects of a network file system.</li>
 *   <li>{@code storage} and {@code mgmtd}: no reason to act for a user; refused.</li>
 * </ul>
 */
final class Identity {
    /** The uid and gid a squashed root becomes: {@code nobody} and {@code nogroup} on Linux. */
    static final int NOBODY = 65534;
    /** What a client token without a range claim may act for: every id but root's. */
    static final IdRanges UNPRIVILEGED = new IdRanges(List.of(new IdRanges.Range(1, IdRanges.MAX_ID)));

    private Identity() {
    }

    /** The caller {@code claimed} as the holder of {@code token} (null: no authentication) may act. */
    static Caller check(Token token, Caller claimed) {
        if (token == null) {
            return claimed;
        }
        return switch (token.role()) {
            case ADMIN, L2, SCHEDULER, META -> claimed;
            case CLIENT -> client(token, claimed);
            case STORAGE, MGMTD -> throw new StrataException(Status.PERMISSION_DENIED, "role " + token.role() + " (subject "
                    + token.subject() + ") does not act for users on the meta service");
        };
    }

    /**
     * Whether the holder of {@code token} may change policies of directories it does not own
     * (docs/security.md, "Directory policies"): an admin, or anyone when nothing authenticates.
     */
    static boolean operator(Token token) {
        return token == null || token.role() == Role.ADMIN;
    }

    private static Caller client(Token token, Caller claimed) {
        IdRanges uids = token.uids() != null ? token.uids() : UNPRIVILEGED;
        IdRanges gids = token.gids() != null ? token.gids() : UNPRIVILEGED;
        if (claimed.uid() == 0 && !uids.contains(0)) {
            return new Caller(NOBODY, NOBODY, new int[0], claimed.session());
        }
        if (!uids.contains(claimed.uid())) {
            throw denied(token, "uid " + Integer.toUnsignedString(claimed.uid()), "uids", uids, token.uids() == null);
        }
        int gid = claimed.gid();
        if (gid == 0 && !gids.contains(0)) {
            gid = NOBODY;
        } else if (!gids.contains(gid)) {
            throw denied(token, "gid " + Integer.toUnsignedString(gid), "gids", gids, token.gids() == null);
        }
        int[] groups = claimed.groups().clone();
        int kept = 0;
        for (int g : groups) {
            if (g == 0 && !gids.contains(0)) {
                continue;
            }
            if (!gids.contains(g)) {
                throw denied(token, "supplementary group " + Integer.toUnsignedString(g), "gids", gids, token.gids() == null);
            }
            groups[kept++] = g;
        }
        if (gid == claimed.gid() && kept == groups.length) {
            return claimed;
        }
        return new Caller(claimed.uid(), gid, Arrays.copyOf(groups, kept), claimed.session());
    }

    private static StrataException denied(Token token, String what, String claim, IdRanges allowed, boolean byDefault) {
        return new StrataException(Status.PERMISSION_DENIED, "token " + token.id() + " (client " + token.subject() + ") may act for "
                + claim + " " + allowed + (byDefault ? " (it has no " + claim + " claim)" : "") + ", not " + what);
    }
}
