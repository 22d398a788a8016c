package io.strata.fuse;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * How a Strata directory tree is mounted ({@code [mount]} table of a mount's config file):
 * <pre>
 * [mount]
 * dir = "/mnt/strata"          # the mount point (an existing empty directory)
 * root = "/"                   # the Strata directory shown at the mount point
 * attr-timeout = "0s"          # kernel attribute cache; default from the root's consistency mode
 * entry-timeout = "1s"         # kernel name cache; default from the root's consistency mode
 * allow-other = true           # other users may use the mount (default: when mounted by root)
 * debug = false                # libfuse debug output (every request) on stderr
 * </pre>
 * Requests are {@link #MAX_REQUEST} bytes at most: libfuse2 speaks FUSE protocol 7.19, without
 * {@code max_pages}, so the kernel caps reads and writes at 128 KiB whatever is asked.
 */
public record MountOptions(Path dir, String root, Optional<Duration> attrTimeout, Optional<Duration> entryTimeout,
                           boolean allowOther, boolean debug) {
    /** The largest FUSE read/write libfuse2 gets from the kernel (32 pages). */
    public static final int MAX_REQUEST = 128 * 1024;
    /** The kernel's readahead window for the mount (several 128 KiB requests in flight). */
    public static final int MAX_READAHEAD = 1 << 20;

    public MountOptions {
        if (dir == null) {
            throw new ConfigException("mount.dir", "is required (the mount point)");
        }
        if (root == null || !root.startsWith("/")) {
            throw new ConfigException("mount.root", "must be an absolute Strata path, got \"" + root + "\"");
        }
        attrTimeout.ifPresent(d -> checkTimeout("mount.attr-timeout", d));
        entryTimeout.ifPresent(d -> checkTimeout("mount.entry-timeout", d));
    }

    private static void checkTimeout(String key, Duration d) {
        if (d.isNegative() || d.compareTo(Duration.ofDays(1)) > 0) {
            throw new ConfigException(key, "must be between 0s and 1d, got " + d);
        }
    }

    public static MountOptions at(Path dir) {
        return new MountOptions(dir, "/", Optional.empty(), Optional.empty(), isRoot(), false);
    }

    public MountOptions withTimeouts(Duration attr, Duration entry) {
        return new MountOptions(dir, root, Optional.ofNullable(attr), Optional.ofNullable(entry), allowOther, debug);
    }

    public MountOptions withDebug(boolean d) {
        return new MountOptions(dir, root, attrTimeout, entryTimeout, allowOther, d);
    }

    public static MountOptions read(ConfigNode m) {
        String dir = m.string("dir", null);
        if (dir == null) {
            throw new ConfigException(m.path().isEmpty() ? "dir" : m.path() + ".dir", "is required (the mount point)");
        }
        Optional<Duration> attr = m.has("attr-timeout")
                ? Optional.of(m.duration("attr-timeout", Duration.ZERO, Duration.ZERO, Duration.ofDays(1))) : Optional.empty();
        Optional<Duration> entry = m.has("entry-timeout")
                ? Optional.of(m.duration("entry-timeout", Duration.ZERO, Duration.ZERO, Duration.ofDays(1))) : Optional.empty();
        return new MountOptions(Path.of(dir), m.string("root", "/"), attr, entry, m.bool("allow-other", isRoot()),
                m.bool("debug", false));
    }

    static boolean isRoot() {
        try {
            return new com.sun.security.auth.module.UnixSystem().getUid() == 0;
        } catch (Throwable t) {
            return false;
        }
    }

    /** The libfuse2 {@code -o} options for timeouts {@code attr} and {@code entry}. */
    List<String> fuseArgs(Duration attr, Duration entry) {
        List<String> o = new ArrayList<>();
        o.add("-o");
        StringBuilder s = new StringBuilder("fsname=strata,subtype=strata,big_writes,use_ino,default_permissions");
        s.append(",max_read=").append(MAX_REQUEST).append(",max_write=").append(MAX_REQUEST);
        s.append(",max_readahead=").append(MAX_READAHEAD);
        s.append(",attr_timeout=").append(seconds(attr)).append(",entry_timeout=").append(seconds(entry));
        s.append(",negative_timeout=0");
        if (allowOther) {
            s.append(",allow_other");
        }
        o.add(s.toString());
        return o;
    }

    private static String seconds(Duration d) {
        return String.format(java.util.Locale.ROOT, "%.3f", d.toMillis() / 1000.0);
    }
}
