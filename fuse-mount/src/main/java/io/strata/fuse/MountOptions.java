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
 * fuse = "libfuse2"            # the libfuse the mount speaks through: "libfuse2" or "libfuse3"
 * </pre>
 * With libfuse2, requests are {@link #MAX_REQUEST} bytes at most: it speaks FUSE protocol 7.19,
 * without {@code max_pages}, so the kernel caps reads and writes at 128 KiB whatever is asked.
 * libfuse3 (3.12 or newer, JDK 22 or newer) negotiates {@code max_pages} and gets requests of
 * up to {@link #MAX_REQUEST_LIBFUSE3} bytes.
 */
public record MountOptions(Path dir, String root, Optional<Duration> attrTimeout, Optional<Duration> entryTimeout,
                           boolean allowOther, boolean debug, Libfuse fuse) {
    /** The largest FUSE read/write libfuse2 gets from the kernel (32 pages). */
    public static final int MAX_REQUEST = 128 * 1024;
    /** The largest FUSE read/write the libfuse3 mount asks for (256 pages, the kernel's {@code max_pages} limit). */
    public static final int MAX_REQUEST_LIBFUSE3 = 1 << 20;
    /** The kernel's readahead window for the mount (several 128 KiB requests in flight). */
    public static final int MAX_READAHEAD = 1 << 20;

    /** Which libfuse the mount runs on ({@code [mount] fuse}). */
    public enum Libfuse {
        /** libfuse 2.9 through jnr-fuse: 128 KiB requests. */
        LIBFUSE2("libfuse2", MAX_REQUEST),
        /** libfuse 3.12+ through the Java FFM API (JDK 22+): 1 MiB requests. */
        LIBFUSE3("libfuse3", MAX_REQUEST_LIBFUSE3);

        private final String configName;
        private final int maxRequest;

        Libfuse(String configName, int maxRequest) {
            this.configName = configName;
            this.maxRequest = maxRequest;
        }

        /** Its value in {@code [mount] fuse}. */
        public String configName() {
            return configName;
        }

        /** The largest read or write request the kernel sends this mount. */
        public int maxRequest() {
            return maxRequest;
        }

        /** {@code "libfuse2"} or {@code "libfuse3"}; {@code key} names the setting in the error. */
        public static Libfuse parse(String key, String value) {
            for (Libfuse l : values()) {
                if (l.configName.equals(value)) {
                    return l;
                }
            }
            throw new ConfigException(key, "must be \"libfuse2\" or \"libfuse3\", got \"" + value + "\"");
        }
    }

    public MountOptions {
        if (dir == null) {
            throw new ConfigException("mount.dir", "is required (the mount point)");
        }
        if (root == null || !root.startsWith("/")) {
            throw new ConfigException("mount.root", "must be an absolute Strata path, got \"" + root + "\"");
        }
        if (fuse == null) {
            throw new ConfigException("mount.fuse", "is required (\"libfuse2\" or \"libfuse3\")");
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
        return new MountOptions(dir, "/", Optional.empty(), Optional.empty(), isRoot(), false, Libfuse.LIBFUSE2);
    }

    public MountOptions withTimeouts(Duration attr, Duration entry) {
        return new MountOptions(dir, root, Optional.ofNullable(attr), Optional.ofNullable(entry), allowOther, debug, fuse);
    }

    public MountOptions withDebug(boolean d) {
        return new MountOptions(dir, root, attrTimeout, entryTimeout, allowOther, d, fuse);
    }

    public MountOptions withFuse(Libfuse f) {
        return new MountOptions(dir, root, attrTimeout, entryTimeout, allowOther, debug, f);
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
        String fuseKey = m.path().isEmpty() ? "fuse" : m.path() + ".fuse";
        Libfuse fuse = Libfuse.parse(fuseKey, m.string("fuse", Libfuse.LIBFUSE2.configName()));
        return new MountOptions(Path.of(dir), m.string("root", "/"), attr, entry, m.bool("allow-other", isRoot()),
                m.bool("debug", false), fuse);
    }

    static boolean isRoot() {
        try {
            return new com.sun.security.auth.module.UnixSystem().getUid() == 0;
        } catch (Throwable t) {
            return false;
        }
    }

    /** The libfuse {@code -o} options for timeouts {@code attr} and {@code entry}. */
    List<String> fuseArgs(Duration attr, Duration entry) {
        return fuse == Libfuse.LIBFUSE3 ? fuse3Args(attr, entry) : fuse2Args(attr, entry);
    }

    private List<String> fuse2Args(Duration attr, Duration entry) {
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

    /**
     * libfuse3's options: no {@code big_writes} (always on), no {@code max_write} or
     * {@code max_readahead} (set in init); {@code max_read} is a kernel mount option.
     * {@code use_ino} is set in init: libfuse3 has no command-line option for it.
     */
    private List<String> fuse3Args(Duration attr, Duration entry) {
        StringBuilder s = new StringBuilder("fsname=strata,subtype=strata,default_permissions");
        s.append(",max_read=").append(MAX_REQUEST_LIBFUSE3);
        s.append(",attr_timeout=").append(seconds(attr)).append(",entry_timeout=").append(seconds(entry));
        s.append(",negative_timeout=0");
        if (allowOther) {
            s.append(",allow_other");
        }
        return List.of("-o", s.toString());
    }

    private static String seconds(Duration d) {
        return String.format(java.util.Locale.ROOT, "%.3f", d.toMillis() / 1000.0);
    }
}
