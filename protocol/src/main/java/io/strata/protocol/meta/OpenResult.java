package io.strata.protocol.meta;

import io.strata.core.tier.CachedCopies;

/**
 * An open session on a file and the file as it is now.
 *
 * @param cached where a prefetch put copies of the file's chunks in L2, at the file's current data
 *               version; null when nothing is there
 */
public record OpenResult(long sessionId, InodeAttrs attrs, CachedCopies cached) {
    public OpenResult(long sessionId, InodeAttrs attrs) {
        this(sessionId, attrs, null);
    }
}
