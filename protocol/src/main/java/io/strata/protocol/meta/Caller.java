package io.strata.protocol.meta;

import java.util.Arrays;

/**
 * Who asks: the user and groups every permission check is made for. uid 0 is root, which
 * bypasses permission bits (but not the rules on what a file type allows).
 *
 * <p>{@code session} is the open file the request acts through, as a file descriptor is for
 * {@code ftruncate(2)}: a session {@link Meta#openAsync} returned, or 0 when the request names
 * its target alone. The namespace honours it where POSIX checks access when the file is opened
 * rather than at the call: a size change through a session opened for writing is allowed
 * whatever the file's mode is now. Any other use of it checks permissions as without it, and
 * on the wire it travels only with setattr ({@link MetaMessage.SetAttrsThrough}): every other
 * request's caller arrives without one.
 */
public record Caller(int uid, int gid, int[] groups, long session) {
    public static final Caller ROOT = new Caller(0, 0, new int[0]);
    public static final int MAX_GROUPS = 64;

    public Caller {
        groups = groups == null ? new int[0] : groups.clone();
        if (groups.length > MAX_GROUPS) {
            throw new IllegalArgumentException("at most " + MAX_GROUPS + " supplementary groups, got " + groups.length);
        }
    }

    /** A caller acting through no open file. */
    public Caller(int uid, int gid, int[] groups) {
        this(uid, gid, groups, 0);
    }

    public static Caller of(int uid, int gid, int... groups) {
        return new Caller(uid, gid, groups);
    }

    /** The same user acting through open session {@code s} (0: through none). */
    public Caller through(long s) {
        return new Caller(uid, gid, groups, s);
    }

    public boolean isRoot() {
        return uid == 0;
    }

    public boolean inGroup(int g) {
        if (g == gid) {
            return true;
        }
        for (int x : groups) {
            if (x == g) {
                return true;
            }
        }
        return false;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Caller c && c.uid == uid && c.gid == gid && Arrays.equals(c.groups, groups) && c.session == session;
    }

    @Override
    public int hashCode() {
        return uid * 31 + gid * 17 + Arrays.hashCode(groups) + Long.hashCode(session);
    }

    @Override
    public String toString() {
        return "uid=" + uid + " gid=" + gid + (groups.length == 0 ? "" : " groups=" + Arrays.toString(groups))
                + (session == 0 ? "" : " session=" + Long.toUnsignedString(session));
    }
}
