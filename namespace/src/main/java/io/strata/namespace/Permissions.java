package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.core.Status;
import io.strata.core.StrataException;

/**
 * POSIX permission checks: owner, group (primary and supplementary) and other bits, chosen as
 * the kernel does (the first class the caller belongs to decides, even if a later one would
 * allow). Root bypasses read and write bits, and execute bits on directories; on a file it
 * needs at least one execute bit. Failures: {@code PERMISSION_DENIED} (EACCES) for missing
 * bits, {@code NOT_PERMITTED} (EPERM) for owner-only operations and the sticky bit.
 */
final class Permissions {
    static final int R = 4;
    static final int W = 2;
    static final int X = 1;
    static final int STICKY = 01000;
    static final int SETGID = 02000;
    static final int SETUID = 04000;

    private Permissions() {
    }

    static boolean allowed(Caller c, InodeAttrs node, int want) {
        if (c.isRoot()) {
            return (want & X) == 0 || node.isDirectory() || (node.mode() & 0111) != 0;
        }
        int bits;
        if (c.uid() == node.uid()) {
            bits = (node.mode() >> 6) & 7;
        } else if (c.inGroup(node.gid())) {
            bits = (node.mode() >> 3) & 7;
        } else {
            bits = node.mode() & 7;
        }
        return (bits & want) == want;
    }

    static void check(Caller c, InodeAttrs node, int want, String what) {
        if (!allowed(c, node, want)) {
            throw new StrataException(Status.PERMISSION_DENIED, what + ": permission denied on " + node.id()
                    + " (mode " + Integer.toOctalString(node.mode()) + ", owner " + node.uid() + ":" + node.gid() + ") for " + c);
        }
    }

    static void requireOwner(Caller c, InodeAttrs node, String what) {
        if (!c.isRoot() && c.uid() != node.uid()) {
            throw new StrataException(Status.NOT_PERMITTED, what + ": only the owner (uid " + node.uid() + ") or root may do this, not " + c);
        }
    }

    /** In a sticky directory only the owner of the entry, of the directory, or root may remove or rename it. */
    static void checkSticky(Caller c, InodeAttrs dir, InodeAttrs victim, String what) {
        if ((dir.mode() & STICKY) != 0 && !c.isRoot() && c.uid() != dir.uid() && c.uid() != victim.uid()) {
            throw new StrataException(Status.NOT_PERMITTED, what + ": " + dir.id() + " is sticky and " + c + " owns neither it nor " + victim.id());
        }
    }
}
