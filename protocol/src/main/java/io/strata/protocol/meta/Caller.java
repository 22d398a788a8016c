package io.strata.protocol.meta;

import java.util.Arrays;

/**
 * Who asks: the user and groups every permission check is made for. uid 0 is root, which
 * bypasses permission bits (but not the rules on what a file type allows).
 */
public record Caller(int uid, int gid, int[] groups) {
    public static final Caller ROOT = new Caller(0, 0, new int[0]);
    public static final int MAX_GROUPS = 64;

    public Caller {
        groups = groups == null ? new int[0] : groups.clone();
        if (groups.length > MAX_GROUPS) {
            throw new IllegalArgumentException("at most " + MAX_GROUPS + " supplementary groups, got " + groups.length);
        }
    }

    public static Caller of(int uid, int gid, int... groups) {
        return new Caller(uid, gid, groups);
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
        return o instanceof Caller c && c.uid == uid && c.gid == gid && Arrays.equals(c.groups, groups);
    }

    @Override
    public int hashCode() {
        return uid * 31 + gid * 17 + Arrays.hashCode(groups);
    }

    @Override
    public String toString() {
        return "uid=" + uid + " gid=" + gid + (groups.length == 0 ? "" : " groups=" + Arrays.toString(groups));
    }
}
