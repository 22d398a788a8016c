package io.strata.protocol.meta;

import io.strata.core.tier.CachedCopies;

/**
 * An open session on a file and the file as it is now.
 *
 * @param sessionId the session, or 0 for an open the namespace does not track (read-only, see
 *                  {@link OpenFlags#TRACK}): there is nothing to close
 * @param cached where a prefetch put copies of the file's chunks in L2, at the file's current data
 *               version; null when nothing is there
 * @param dir    for a create-open, the directory the file was created or found in, as it is after
 *               the create; null for an open, or when the answer did not carry it
 */
public record OpenResult(long sessionId, InodeAttrs attrs, CachedCopies cached, InodeAttrs dir) {
    public OpenResult(long sessionId, InodeAttrs attrs, CachedCopies cached) {
        this(sessionId, attrs, cached, null);
    }

    public OpenResult(long sessionId, InodeAttrs attrs) {
        this(sessionId, attrs, null, null);
    }
}
