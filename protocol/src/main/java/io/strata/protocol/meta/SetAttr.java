package io.strata.protocol.meta;

/**
 * The attributes a setattr changes; null leaves one as it is. {@code size} truncates or extends a
 * file. Times are nanoseconds since the epoch, or {@link #NOW} for the server's clock.
 */
public record SetAttr(Integer mode, Integer uid, Integer gid, Long size, Long atimeNanos, Long mtimeNanos) {
    public static final long NOW = Long.MIN_VALUE;
    public static final SetAttr NONE = new SetAttr(null, null, null, null, null, null);

    public static SetAttr mode(int mode) {
        return new SetAttr(mode, null, null, null, null, null);
    }

    public static SetAttr owner(Integer uid, Integer gid) {
        return new SetAttr(null, uid, gid, null, null, null);
    }

    public static SetAttr size(long size) {
        return new SetAttr(null, null, null, size, null, null);
    }

    public static SetAttr times(Long atime, Long mtime) {
        return new SetAttr(null, null, null, null, atime, mtime);
    }
}
