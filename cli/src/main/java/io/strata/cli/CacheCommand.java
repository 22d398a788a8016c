package io.strata.cli;

import io.strata.core.DataSize;
import io.strata.fuse.PathXattrs;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata cache stat|drop [PATH]}: the L1 cache of the FUSE mount process that serves
 * PATH. The mount answers the virtual extended attributes {@code user.strata.cache} (statistics,
 * {@code key=value} lines) and {@code user.strata.cache.drop} (set it to flush and drop), so this
 * command talks to the mount through the kernel like any tool and needs no connection of its
 * own: it works wherever the mount is visible, with the caller's permissions.
 */
@Command(name = "cache", mixinStandardHelpOptions = true,
        description = {"See and empty the L1 cache (memory + NVMe) of a Strata FUSE mount.", "",
                "The cache belongs to the mount process that serves PATH (each compute node's mount has its own). "
                        + "PATH is a file or directory on the mount; default: the current directory if it is on a Strata "
                        + "mount, else the mount of `strata up` (its --data directory)."},
        subcommands = {CacheCommand.Stat.class, CacheCommand.Drop.class},
        footerHeading = "%nExamples:%n",
        footer = {"  strata cache stat                 the whole cache of the mount you are in",
                "  strata cache stat /mnt/s/w.bin    what it holds of one file",
                "  strata cache drop /mnt/s/ds       drop every file under a directory",
                "  strata cache drop /mnt/s          drop the whole cache of that mount",
                "",
                "A drop flushes writes the cache absorbed (write-back) to the tier below first.",
                "Without the CLI: getfattr --only-values -n user.strata.cache PATH",
                "                 setfattr -n user.strata.cache.drop -v 1 PATH"})
final class CacheCommand {
    static final String STATS = "user.strata.cache";
    static final String DROP = "user.strata.cache.drop";
    static final String FSTYPE = "fuse.strata";

    /** Options both subcommands take. */
    abstract static class Base implements Callable<Integer> {
        @Parameters(paramLabel = "PATH", arity = "0..1",
                description = "File or directory on a Strata mount (default: see `strata cache --help`).")
        Path path;

        @Option(names = "--data", paramLabel = "DIR",
                description = "Data directory of `strata up` (default: $" + ClusterDir.ENV + ", else as for `strata up`), whose mount "
                        + "is used when PATH is not given and the current directory is not on a Strata mount.")
        Path data;

        @Option(names = "--json", description = "Print one JSON object instead of a table.")
        boolean json;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        PrintWriter out() {
            return spec.commandLine().getOut();
        }
    }

    @Command(name = "stat", mixinStandardHelpOptions = true,
            description = {"Show what the mount's L1 cache holds.", "",
                    "PATH a file: its bytes and blocks in memory and on NVMe, pinned bytes, writes absorbed for it "
                            + "and not yet below, and what its policy says (cached, pin, ttl, write-back).", "",
                    "PATH a directory: the whole cache: bytes, blocks and capacity of memory and NVMe, hits, misses "
                            + "(blocks fetched from below), hit ratio, evictions, pinned bytes, corruptions, and the "
                            + "write-back queue (bytes, writes, files, age of the oldest)."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata cache stat                      the whole cache of the mount you are in",
                    "  strata cache stat data/mnt/ds/w.bin    what it holds of one file",
                    "  strata cache stat --json data/mnt      one JSON object, for scripts"})
    static final class Stat extends Base {
        @Override
        public Integer call() {
            Target t = Target.resolve(path, data);
            Map<String, String> s = t.stats();
            if (json) {
                out().println(json(t, s));
            } else if ("off".equals(s.get("l1"))) {
                out().println(l1Off(t));
            } else if ("file".equals(s.get("scope"))) {
                printFile(out(), t, s);
            } else {
                printMount(out(), t, s);
            }
            return 0;
        }
    }

    @Command(name = "drop", mixinStandardHelpOptions = true,
            description = {"Empty the mount's L1 cache of PATH.", "",
                    "PATH a file: that file; a directory: every file under it; the mount point: the whole cache.", "",
                    "Writes the cache absorbed (write-back directories) are flushed to the tier below first; if they "
                            + "cannot be, the drop fails and keeps them: a drop never loses a write. The next open of a "
                            + "dropped file also empties the kernel's page cache of it, so its next read comes from below "
                            + "(not for consistency=immutable files, which keep the page cache). "
                            + "Like any user.* attribute, a drop needs write permission on PATH."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata cache drop data/mnt/ds/w.bin    one file",
                    "  strata cache drop data/mnt/ds           every file under a directory",
                    "  strata cache drop data/mnt              the whole cache of that mount"})
    static final class Drop extends Base {
        @Override
        public Integer call() {
            Target t = Target.resolve(path, data);
            Map<String, String> before = t.stats();
            if ("off".equals(before.get("l1"))) {
                out().println(json ? json(t, before) : l1Off(t) + "; nothing to drop");
                return 0;
            }
            t.drop();
            Map<String, String> after = t.stats();
            if (json) {
                Map<String, String> m = new LinkedHashMap<>();
                m.put("dropped", "true");
                before.forEach((k, v) -> m.put("before." + k, v));
                after.forEach((k, v) -> m.put(k, v));
                out().println(json(t, m));
                return 0;
            }
            long flushed = num(before, "writeback.writes");
            String flushNote = flushed > 0 ? " (first flushed " + flushed + " absorbed write" + (flushed == 1 ? "" : "s") + ", "
                    + human(num(before, "writeback.bytes")) + ", to the tier below)" : "";
            if ("file".equals(before.get("scope"))) {
                out().println("dropped " + t.path + " from the L1 cache of the mount at " + t.mount + ": "
                        + human(num(before, "memory.bytes")) + " in memory, " + human(num(before, "nvme.bytes")) + " on NVMe" + flushNote);
                out().println("now cached: " + human(num(after, "memory.bytes")) + " in memory, " + human(num(after, "nvme.bytes")) + " on NVMe");
            } else if (t.root) {
                out().println("dropped the whole L1 cache of the mount at " + t.mount + ": " + human(num(before, "memory.bytes"))
                        + " in memory, " + human(num(before, "nvme.bytes")) + " on NVMe" + flushNote);
            } else {
                long wbBefore = num(before, "writeback.bytes");
                long wbAfter = num(after, "writeback.bytes");
                out().println("dropped every file under " + t.path + " from the L1 cache of the mount at " + t.mount
                        + " (writes absorbed for them were flushed to the tier below first)");
                out().println("the mount's cache now holds " + human(num(after, "memory.bytes")) + " in memory (was "
                        + human(num(before, "memory.bytes")) + "), " + human(num(after, "nvme.bytes")) + " on NVMe (was "
                        + human(num(before, "nvme.bytes")) + "); write-back queue " + human(wbAfter) + " (was " + human(wbBefore) + ")");
            }
            return 0;
        }
    }

    // ---- where: PATH and the mount that serves it ----

    /** {@code path} (absolute, links resolved) on the Strata mount at {@code mount}; {@code root}: it is the mount point. */
    record Target(Path path, Path mount, boolean root) {
        static Target resolve(Path given, Path data) {
            if (given != null) {
                return on(given, true);
            }
            Path cwd = Path.of("").toAbsolutePath();
            Target t = on(cwd, false);
            if (t != null) {
                return t;
            }
            Path up = upMount(data);
            if (up != null && Files.isDirectory(up)) {
                t = on(up, false);
                if (t != null) {
                    return t;
                }
            }
            throw new IllegalArgumentException("the current directory (" + cwd + ") is not on a Strata mount"
                    + (up == null ? "" : " and `strata up`'s mount (" + up + ") is not mounted") + "; give a PATH on a Strata mount");
        }

        /** The target for {@code p}, or null (when {@code mustBe} is false) if it is not on a Strata mount. */
        private static Target on(Path p, boolean mustBe) {
            Path real;
            try {
                real = p.toRealPath();
            } catch (NoSuchFileException e) {
                throw new IllegalArgumentException(p + ": no such file or directory");
            } catch (IOException e) {
                throw new IllegalArgumentException(p + ": " + reason(e) + hint(e, null));
            }
            Mounts.Entry m = Mounts.containing(real);
            if (m == null || !m.fstype().equals(FSTYPE)) {
                if (!mustBe) {
                    return null;
                }
                throw new IllegalArgumentException(p + " is not on a Strata mount"
                        + (m == null ? "" : " (it is on " + m.dir() + ", " + m.fstype() + ")"));
            }
            return new Target(real, m.dir(), real.equals(m.dir()));
        }

        /** The mount point `strata up` records in its data directory ({@code cluster.properties}: mount.dir), else DATA/mnt. */
        private static Path upMount(Path data) {
            Path root = ClusterDir.resolve(data).root;
            Path props = root.resolve("cluster.properties");
            if (Files.exists(props)) {
                Properties p = new Properties();
                try (Reader r = Files.newBufferedReader(props)) {
                    p.load(r);
                    String d = p.getProperty("mount.dir");
                    if (d != null) {
                        return Path.of(d);
                    }
                } catch (IOException e) {
                    // fall back to the default place
                }
            }
            return root.resolve("mnt");
        }

        // by path (getxattr(2)/setxattr(2)): opening the file for Java's attribute view would be a
        // session of it on the mount, whose close flushes what write-back absorbed for it
        Map<String, String> stats() {
            try {
                Map<String, String> m = new LinkedHashMap<>();
                for (String line : new String(PathXattrs.get(path, STATS), StandardCharsets.UTF_8).split("\n")) {
                    int eq = line.indexOf('=');
                    if (eq > 0) {
                        m.put(line.substring(0, eq), line.substring(eq + 1));
                    }
                }
                if (!m.containsKey("l1")) {
                    throw new IllegalArgumentException("the mount at " + mount + " answered no cache statistics (an older strata mount?)");
                }
                return m;
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read the cache statistics of " + path + ": " + reason(e) + hint(e, mount));
            }
        }

        void drop() {
            try {
                PathXattrs.set(path, DROP, "1");
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot drop the cache of " + path + ": " + reason(e) + hint(e, mount));
            }
        }
    }

    /** What to do about a failed attribute call on the mount at {@code mount} (may be null). */
    private static String hint(IOException e, Path mount) {
        String r = reason(e);
        if (r.contains("not connected")) {
            return " (the mount process is gone: strata umount " + (mount == null ? "MOUNTPOINT" : mount) + ", then mount again)";
        }
        if (r.contains("Input/output error")) {
            return " (the mount could not finish it: a write absorbed by the cache could not be flushed to the tier below, "
                    + "or the cluster did not answer in time; nothing unflushed was dropped; see the mount's log)";
        }
        if (r.contains("No data available")) {
            return " (the mount does not answer user.strata.cache: a mount of an older Strata?)";
        }
        if (r.contains("Operation not permitted") || r.contains("Permission denied")) {
            return " (dropping a file's cache needs write permission on it, as for any user.* attribute)";
        }
        return "";
    }

    private static String reason(IOException e) {
        if (e instanceof FileSystemException fse && fse.getReason() != null) {
            return fse.getReason();
        }
        return e.getMessage() == null ? e.toString() : e.getMessage();
    }

    /** Mount points of this process's mount namespace ({@code /proc/self/mountinfo}). */
    static final class Mounts {
        record Entry(Path dir, String fstype) {
        }

        /** The mount holding {@code real} (the longest mount point that is a prefix of it), or null. */
        static Entry containing(Path real) {
            Entry best = null;
            try {
                for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                    String[] f = line.split(" ");
                    int dash = java.util.Arrays.asList(f).indexOf("-");
                    if (f.length < 5 || dash < 0 || dash + 1 >= f.length) {
                        continue;
                    }
                    Path dir = Path.of(unescape(f[4]));
                    if (real.startsWith(dir) && (best == null || dir.getNameCount() >= best.dir().getNameCount())) {
                        best = new Entry(dir, f[dash + 1]);
                    }
                }
            } catch (IOException e) {
                return null;
            }
            return best;
        }

        private static String unescape(String s) {
            return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
        }
    }

    // ---- output ----

    private static String l1Off(Target t) {
        return "L1 is off on the Strata mount at " + t.mount + " (its client config has no [l1] table): nothing is cached there";
    }

    private static void printMount(PrintWriter out, Target t, Map<String, String> s) {
        out.println("L1 cache \"" + s.get("cache") + "\" of the Strata mount at " + t.mount
                + (t.root ? "" : " (the whole cache: " + t.path + " is a directory)"));
        out.printf(Locale.ROOT, "  %-8s %10s %9s %10s %6s %10s %10s%n", "tier", "cached", "blocks", "capacity", "used", "served", "evictions");
        row(out, "memory", s, "memory", "hits.memory", "evictions.memory");
        row(out, "nvme", s, "nvme", "hits.nvme", "evictions.nvme");
        out.printf(Locale.ROOT, "  %-8s %10s %9s %10s %6s %10d %10s%n", "below", "-", "-", "-", "-", num(s, "misses"), "-");
        long hits = num(s, "hits.memory") + num(s, "hits.nvme");
        long all = hits + num(s, "misses");
        out.printf(Locale.ROOT, "  hit ratio %.1f%% (%d of %d blocks served by L1; %d misses fetched from below)%n",
                all == 0 ? 0.0 : 100.0 * hits / all, hits, all, num(s, "misses"));
        out.printf(Locale.ROOT, "  pinned %s   corruptions %s (NVMe blocks found damaged, dropped and fetched again)%n",
                human(num(s, "pinned.bytes")), s.get("corruptions"));
        out.printf(Locale.ROOT, "  write-back: %s not yet below (%s writes in %s files, oldest %s)%n", human(num(s, "writeback.bytes")),
                s.get("writeback.writes"), s.get("writeback.files"), age(num(s, "writeback.oldest-ms")));
    }

    private static void row(PrintWriter out, String name, Map<String, String> s, String tier, String hits, String evictions) {
        long cap = num(s, tier + ".capacity");
        long used = num(s, tier + ".bytes");
        String pct = cap == 0 ? "-" : String.format(Locale.ROOT, "%.1f%%", 100.0 * used / cap);
        out.printf(Locale.ROOT, "  %-8s %10s %9d %10s %6s %10d %10d%n", name, cap == 0 && used == 0 && tier.equals("nvme") ? "(none)" : human(used),
                num(s, tier + ".blocks"), cap == 0 ? "-" : human(cap), pct, num(s, hits), num(s, evictions));
    }

    private static void printFile(PrintWriter out, Target t, Map<String, String> s) {
        out.println(t.path + " (inode " + s.get("inode") + ", " + human(num(s, "size")) + ") in the L1 cache \"" + s.get("cache")
                + "\" of the Strata mount at " + t.mount);
        out.println("  policy: cached " + s.get("policy.cached") + ", pin " + s.get("policy.pin") + ", ttl " + s.get("policy.ttl")
                + ", write-back " + s.get("policy.write-back"));
        out.printf(Locale.ROOT, "  %-8s %10s %9s %10s%n", "tier", "cached", "blocks", "pinned");
        out.printf(Locale.ROOT, "  %-8s %10s %9d %10s%n", "memory", human(num(s, "memory.bytes")), num(s, "memory.blocks"), "-");
        out.printf(Locale.ROOT, "  %-8s %10s %9d %10s%n", "nvme", human(num(s, "nvme.bytes")), num(s, "nvme.blocks"),
                human(num(s, "pinned.bytes")));
        out.printf(Locale.ROOT, "  write-back: %s in %s writes not yet below%n", human(num(s, "writeback.bytes")), s.get("writeback.writes"));
    }

    private static String json(Target t, Map<String, String> s) {
        StringBuilder sb = new StringBuilder("{");
        sb.append("\"path\":").append(quote(t.path.toString())).append(",\"mount\":").append(quote(t.mount.toString()));
        s.forEach((k, v) -> sb.append(',').append(quote(k)).append(':').append(v.matches("-?\\d+(\\.\\d+)?") ? v
                : v.equals("true") || v.equals("false") ? v : quote(v)));
        return sb.append('}').toString();
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }

    static long num(Map<String, String> s, String key) {
        String v = s.get(key);
        try {
            return v == null ? 0 : Long.parseLong(v);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static String human(long bytes) {
        return DataSize.human(bytes);
    }

    private static String age(long ms) {
        return ms < 1000 ? ms + "ms" : String.format(Locale.ROOT, "%.1fs", ms / 1000.0);
    }
}
