package io.strata.protocol.meta;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.nio.charset.StandardCharsets;

/** Checks of names and other user input, before anything is read or written. */
public final class Names {
    public static final int MAX_NAME_BYTES = 255;
    public static final int MAX_SYMLINK_BYTES = 4095;
    public static final int MAX_XATTR_VALUE = 64 * 1024;
    /**
     * The prefix libfuse gives a file unlinked while open through its mount ({@code hard_remove}
     * off): it renames the file to such a name and removes that name at the file's last release.
     */
    public static final String LIBFUSE_HIDDEN = ".fuse_hidden";

    private Names() {
    }

    /** A name to create or look up as a child: 1..255 bytes of UTF-8, no '/', no NUL, not "." or "..". */
    public static void check(String name) {
        checkChars(name, "name");
        if (name.equals(".") || name.equals("..")) {
            throw new StrataException(Status.INVALID_NAME, "\"" + name + "\" cannot be created, removed or renamed");
        }
    }

    public static void checkChars(String name, String what) {
        if (name == null || name.isEmpty()) {
            throw new StrataException(Status.INVALID_NAME, "empty " + what);
        }
        if (name.indexOf('/') >= 0) {
            throw new StrataException(Status.INVALID_NAME, what + " \"" + printable(name) + "\" contains '/'");
        }
        if (name.indexOf('\0') >= 0) {
            throw new StrataException(Status.INVALID_NAME, what + " \"" + printable(name) + "\" contains a NUL byte");
        }
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_NAME_BYTES) {
            throw new StrataException(Status.NAME_TOO_LONG, what + " of " + bytes + " bytes exceeds " + MAX_NAME_BYTES);
        }
    }

    public static void checkSymlinkTarget(String target) {
        if (target == null || target.isEmpty()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "empty symlink target");
        }
        if (target.indexOf('\0') >= 0) {
            throw new StrataException(Status.INVALID_ARGUMENT, "symlink target contains a NUL byte");
        }
        int bytes = target.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_SYMLINK_BYTES) {
            throw new StrataException(Status.NAME_TOO_LONG, "symlink target of " + bytes + " bytes exceeds " + MAX_SYMLINK_BYTES);
        }
    }

    public static void checkMode(int mode) {
        if ((mode & ~07777) != 0) {
            throw new StrataException(Status.INVALID_ARGUMENT, "mode " + Integer.toOctalString(mode) + " has bits outside 07777");
        }
    }

    public static String printable(String s) {
        String t = s.replace("\0", "\\0");
        return t.length() > 64 ? t.substring(0, 64) + "..." : t;
    }
}
