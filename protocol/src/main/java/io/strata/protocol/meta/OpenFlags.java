package io.strata.protocol.meta;

/** Flags of {@link Meta#openAsync}: bit-or of these. */
public final class OpenFlags {
    public static final int READ = 1;
    public static final int WRITE = 2;
    /** With WRITE: set the length to 0 (and bump dataVersion) as the file opens. */
    public static final int TRUNCATE = 4;
    public static final int ALL = READ | WRITE | TRUNCATE;

    /** {@link Meta#setxattrAsync} flags: fail if the attribute exists / does not exist. */
    public static final int XATTR_CREATE = 1;
    public static final int XATTR_REPLACE = 2;

    private OpenFlags() {
    }
}
