package io.strata.protocol.meta;

/** Flags of {@link Meta#openAsync}: bit-or of these. */
public final class OpenFlags {
    public static final int READ = 1;
    public static final int WRITE = 2;
    /** With WRITE: set the length to 0 (and bump dataVersion) as the file opens. */
    public static final int TRUNCATE = 4;
    /**
     * With READ alone: register a session all the same. A read-only open is otherwise not
     * tracked (no session, nothing written): a client that removes a name of a file it reads
     * itself opens it once more with this flag first, so that the file stays until it closes.
     */
    public static final int TRACK = 8;
    public static final int ALL = READ | WRITE | TRUNCATE | TRACK;

    /** Whether an open with {@code flags} registers a session (every open but a plain read-only one). */
    public static boolean tracked(int flags) {
        return flags != READ;
    }

    /** {@link Meta#setxattrAsync} flags: fail if the attribute exists / does not exist. */
    public static final int XATTR_CREATE = 1;
    public static final int XATTR_REPLACE = 2;

    private OpenFlags() {
    }
}
