package io.strata.fuse;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.strata.client.StrataFileSystem;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * How many metadata round trips a small-file operation costs through a real mount, counted from
 * the mount's own RPC meters ({@code strata.rpc.calls} by message): a create of a missing name is
 * one negative Lookup (the kernel's) and one CreateOpen, with no Resolve, no GetAttr and no
 * lookup of its directory or of the new file; an unlink is the kernel's Lookup of the name and one Remove; an open
 * of a file the kernel just looked up is one Open, no path walk. And what must not change for
 * it: close-to-open across clients (another client replaces a file the mount just looked up;
 * the mount's next open reads the new file).
 */
@RequiresFuse
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class MetaRoundTripsIT {
    @TempDir
    static Path dir;
    static MountedCluster c;

    @BeforeAll
    static void start() {
        c = MountedCluster.start(dir.resolve("cluster"), 77);
    }

    @AfterAll
    static void stop() {
        if (c != null) {
            c.close();
        }
    }

    /** Calls the mount sent, by message, since {@code before}. */
    static Map<String, Long> since(Map<String, Long> before) {
        Map<String, Long> now = calls();
        Map<String, Long> d = new TreeMap<>();
        now.forEach((k, v) -> {
            long n = v - before.getOrDefault(k, 0L);
            if (n > 0) {
                d.put(k, n);
            }
        });
        return d;
    }

    /** Files {@code dir}/f0 .. f{@code files - 1} of i + 1 bytes each, written by another client (the mount has looked none up). */
    static void writeElsewhere(String dir, int files) {
        try (StrataFileSystem other = c.client("writer-of-" + dir.substring(1))) {
            for (int i = 0; i < files; i++) {
                try (var h = other.create(dir + "/f" + i)) {
                    h.write(0, new byte[i + 1], 0, i + 1);
                }
            }
        }
    }

    static Map<String, Long> calls() {
        Map<String, Long> out = new TreeMap<>();
        for (Meter m : c.meters().getMeters()) {
            if (m instanceof Timer t && m.getId().getName().equals("strata.rpc.calls")) {
                String k = m.getId().getTag("message") + "/" + m.getId().getTag("status");
                out.merge(k, t.count(), Long::sum);
            }
        }
        return out;
    }

    /**
     * Lookups of a path's directories the mount may make in {@code nanos}: each of {@code dirs}
     * once per attribute timeout of its kept directory attributes (1 s), whatever the loop does.
     */
    static long refreshes(int dirs, long nanos) {
        return dirs * (TimeUnit.NANOSECONDS.toSeconds(nanos) + 1);
    }

    /**
     * FUSE requests run on threads the mount keeps and names {@code fuse-<mount dir>-N}: a burst
     * of them starts no threads. On libfuse2 they are the mount's own Java threads running
     * libfuse's loop (run by libfuse2's own loop, each request attached a native thread to the JVM
     * and detached it again: a new java.lang.Thread per request, 492 for these 500 files); on
     * libfuse3 they are libfuse's workers, attached to the JVM once and named at their first
     * request (the JVM would call them {@code Thread-N}).
     */
    @Test
    void requestsRunOnTheMountsOwnThreadsAndStartNoneEach() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-threads"));
        byte[] data = new byte[4096];
        int files = 500;
        for (int i = 0; i < files; i++) {
            Files.write(d.resolve("f" + i), data);
        }
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long before = threads.getTotalStartedThreadCount();
        for (int i = 0; i < files; i++) {
            Path f = d.resolve("f" + i);
            assertThat(Files.size(f)).isEqualTo(data.length);
            assertThat(Files.readAllBytes(f)).hasSize(data.length);
        }
        long started = threads.getTotalStartedThreadCount() - before;
        // a few for whatever the cluster in this JVM starts meanwhile (and workers added to the
        // loop), far below one per request (every file takes at least its open)
        assertThat(started).as("threads started while serving %d stats and reads", files).isLessThan(files / 10);
        // only a thread that served a request of this mount bears its name ("fuse-loop-mnt", the
        // thread that mounts and waits, does not)
        assertThat(Thread.getAllStackTraces().keySet()).as("the threads serving the mount's requests")
                .anySatisfy(t -> assertThat(t.getName()).startsWith("fuse-" + c.mnt.getFileName() + "-"));
    }

    @Test
    void aSmallFileCreateIsOneNegativeLookupAndOneCreateOpen() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-create"));
        Files.writeString(d.resolve("warm"), "x"); // the directory's inode is known to the mount now
        byte[] data = new byte[16 * 1024];
        int files = 20;
        Map<String, Long> before = calls();
        long t0 = System.nanoTime();
        for (int i = 0; i < files; i++) {
            Files.write(d.resolve("f" + i), data);
        }
        long took = System.nanoTime() - t0;
        Map<String, Long> sent = since(before);
        assertThat(sent.getOrDefault("CreateOpenIn/OK", 0L)).as("%s", sent).isEqualTo(files);
        assertThat(sent.getOrDefault("Lookup/NOT_FOUND", 0L)).as("one negative lookup per create: %s", sent).isLessThanOrEqualTo(files);
        // the create answers its directory's new attributes: the next walk does not look it up;
        // and the kernel's check of its permission to open the new file (a getattr by path) is
        // answered with the create's own answer
        assertThat(sent.getOrDefault("Lookup/OK", 0L)).as("no positive lookup per create: %s in %d ms", sent,
                took / 1_000_000).isLessThanOrEqualTo(refreshes(2, took));
        assertThat(sent.getOrDefault("Resolve/OK", 0L)).as("no path walk before a create: %s", sent).isZero();
        assertThat(sent.getOrDefault("GetAttr/OK", 0L)).as("the create's attributes answer libfuse's fgetattr: %s", sent).isZero();
        for (int i = 0; i < files; i++) {
            assertThat(Files.size(d.resolve("f" + i))).isEqualTo(data.length);
        }
    }

    @Test
    void anUnlinkIsTheKernelsLookupOfTheNameAndOneRemove() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-unlink"));
        int files = 20;
        for (int i = 0; i < files; i++) {
            Files.writeString(d.resolve("f" + i), "x");
        }
        Map<String, Long> before = calls();
        long t0 = System.nanoTime();
        for (int i = 0; i < files; i++) {
            Files.delete(d.resolve("f" + i));
        }
        long took = System.nanoTime() - t0;
        Map<String, Long> sent = since(before);
        assertThat(sent.getOrDefault("Remove/OK", 0L)).as("%s", sent).isEqualTo(files);
        // the removal answers the directory's new attributes: the next walk does not look it up
        assertThat(sent.getOrDefault("Lookup/OK", 0L)).as("one lookup per unlink, of the name: %s in %d ms", sent, took / 1_000_000)
                .isLessThanOrEqualTo(files + refreshes(2, took));
        try (var names = Files.list(d)) {
            assertThat(names).isEmpty();
        }
    }

    @Test
    void aCreateInADirectoryJustMadeDoesNotLookTheDirectoryUp() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-mkdir"));
        Files.writeString(d.resolve("warm"), "x");
        int dirs = 10;
        Map<String, Long> before = calls();
        long t0 = System.nanoTime();
        for (int i = 0; i < dirs; i++) {
            Path sub = Files.createDirectory(d.resolve("sub" + i));
            Files.writeString(sub.resolve("f"), "in " + i);
        }
        long took = System.nanoTime() - t0;
        Map<String, Long> sent = since(before);
        assertThat(sent.getOrDefault("MkdirIn/OK", 0L)).as("%s", sent).isEqualTo(dirs);
        // per directory only the new file's permission check: the mkdir answered the new
        // directory and its parent after the change
        assertThat(sent.getOrDefault("Lookup/OK", 0L)).as("%s in %d ms", sent, took / 1_000_000)
                .isLessThanOrEqualTo(dirs + refreshes(2, took));
        for (int i = 0; i < dirs; i++) {
            assertThat(Files.readString(d.resolve("sub" + i).resolve("f"))).isEqualTo("in " + i);
        }
    }

    @Test
    void aRenameForgetsOnlyWhatItMovedAndTheTwoParents() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-rename/a/b"));
        int files = 10;
        for (int i = 0; i < files; i++) {
            Files.writeString(d.resolve("f" + i), "x");
        }
        Map<String, Long> before = calls();
        long t0 = System.nanoTime();
        for (int i = 0; i < files; i++) {
            Files.move(d.resolve("f" + i), d.resolve("g" + i));
        }
        long took = System.nanoTime() - t0;
        Map<String, Long> sent = since(before);
        assertThat(sent.getOrDefault("Rename/OK", 0L)).as("%s", sent).isEqualTo(files);
        // per rename: the kernel's lookup of the name and of the directory the last rename
        // changed; "/", rt-rename and a stay known (the rename dropped every directory before)
        assertThat(sent.getOrDefault("Lookup/OK", 0L)).as("%s in %d ms", sent, took / 1_000_000)
                .isLessThanOrEqualTo(2L * files + refreshes(4, took));
    }

    @Test
    void aRenamedDirectoryIsSeenAtItsNewPlaceAtOnceWithItsSubtree() throws Exception {
        Path top = Files.createDirectories(c.mnt.resolve("rt-mvdir"));
        Path x = Files.createDirectories(top.resolve("x"));
        Path deep = Files.createDirectories(top.resolve("a/b/c"));
        Files.writeString(deep.resolve("f"), "deep");
        assertThat(Files.isDirectory(deep)).isTrue(); // the mount knows a, a/b and a/b/c now
        assertThat(Files.getAttribute(top.resolve("a"), "unix:nlink")).isEqualTo(3);
        Files.move(top.resolve("a/b"), top.resolve("a/b2"));
        assertThat(Files.exists(deep)).as("gone from its old place").isFalse();
        assertThat(Files.readString(top.resolve("a/b2/c/f"))).isEqualTo("deep");
        Files.move(top.resolve("a/b2"), x.resolve("b2"));
        assertThat(Files.getAttribute(top.resolve("a"), "unix:nlink")).as("a lost its subdirectory").isEqualTo(2);
        assertThat(Files.getAttribute(x, "unix:nlink")).as("x gained one").isEqualTo(3);
        assertThat(Files.readString(x.resolve("b2/c/f"))).isEqualTo("deep");
        assertThat(Files.exists(top.resolve("a/b2/c"))).isFalse();
        try (StrataFileSystem other = c.client("other4")) {
            assertSameTimes(top.resolve("a"), other, "/rt-mvdir/a");
            assertSameTimes(x, other, "/rt-mvdir/x");
        }
    }

    /** The directory attributes a change answered and the mount keeps are those any client reads right after. */
    @Test
    void theMountsOwnChangesShowInTheDirectorysAttributesAtOnce() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-dir"));
        Files.createDirectories(d.resolve("sub"));
        Files.writeString(d.resolve("f"), "x");
        try (StrataFileSystem other = c.client("other3")) {
            assertThat(Files.getAttribute(d, "unix:nlink")).isEqualTo(3);
            Files.delete(d.resolve("f"));
            assertSameTimes(d, other);
            Files.delete(d.resolve("sub"));
            assertThat(Files.getAttribute(d, "unix:nlink")).as("rmdir took the subdirectory's link").isEqualTo(2);
            assertThat(other.stat("/rt-dir").nlink()).isEqualTo(2);
            assertSameTimes(d, other);
            Files.writeString(d.resolve("g"), "y");
            assertSameTimes(d, other);
            Files.createDirectory(d.resolve("sub2"));
            assertThat(Files.getAttribute(d, "unix:nlink")).as("mkdir added a link").isEqualTo(3);
            assertSameTimes(d, other);
            Files.createSymbolicLink(d.resolve("l"), d.resolve("g").getFileName());
            assertSameTimes(d, other);
        }
    }

    static void assertSameTimes(Path d, StrataFileSystem other) throws Exception {
        assertSameTimes(d, other, "/" + d.getFileName());
    }

    static void assertSameTimes(Path d, StrataFileSystem other, String path) throws Exception {
        var seen = other.stat(path);
        assertThat(((java.nio.file.attribute.FileTime) Files.getAttribute(d, "unix:lastModifiedTime")).to(TimeUnit.NANOSECONDS))
                .as("mtime through the mount").isEqualTo(seen.mtimeNanos());
        assertThat(((java.nio.file.attribute.FileTime) Files.getAttribute(d, "unix:ctime")).to(TimeUnit.NANOSECONDS))
                .as("ctime through the mount").isEqualTo(seen.ctimeNanos());
    }

    /**
     * The open goes to the inode the kernel's lookup (or the create) just named. The files are in
     * the mount's root: a lookup in any other directory resolves that directory again whenever the
     * client's dentry cache of it ends (client.dentry-ttl, 1 s), a Resolve that is no walk of the
     * open's and that made this count fail whenever the reads crossed that second; a lookup in the
     * root resolves nothing, so every Resolve here would be an open's path walk. And the reads ask
     * for the open file's attributes once, when they reach the end of the file (with libfuse3's
     * AUTO_INVAL_DATA every read(2) asked, two GetAttrs per file).
     */
    @Test
    void openingAFileTheKernelJustLookedUpIsOneOpenWithoutAPathWalk() throws Exception {
        int files = 20;
        for (int i = 0; i < files; i++) {
            Files.writeString(c.mnt.resolve("rt-open-f" + i), "content " + i);
        }
        Map<String, Long> before = calls();
        long t0 = System.nanoTime();
        for (int i = 0; i < files; i++) {
            assertThat(Files.readString(c.mnt.resolve("rt-open-f" + i))).isEqualTo("content " + i);
        }
        long took = System.nanoTime() - t0;
        Map<String, Long> sent = since(before);
        assertThat(sent.getOrDefault("Open/OK", 0L)).as("%s", sent).isEqualTo(files);
        assertThat(sent.getOrDefault("Resolve/OK", 0L)).as("no path walk at open: %s", sent).isZero();
        // one per file for the read past its end, and the root's own attributes once a second
        assertThat(sent.getOrDefault("GetAttr/OK", 0L)).as("one GetAttr per file read: %s in %d ms", sent, took / 1_000_000)
                .isLessThanOrEqualTo(files + refreshes(1, took));
    }

    /**
     * A stat of a file is the kernel's LOOKUP and then its GETATTR of the same path; the second
     * is answered with what the first fetched (file attributes are kept for the entry timeout).
     * Before, each was a Lookup: two per stat.
     */
    @Test
    void aStatIsOneLookup() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-stat"));
        int files = 50;
        writeElsewhere("/rt-stat", files);
        assertThat(Files.isDirectory(d)).isTrue();
        Map<String, Long> before = calls();
        long t0 = System.nanoTime();
        for (int i = 0; i < files; i++) {
            assertThat(Files.size(d.resolve("f" + i))).isEqualTo(i + 1);
        }
        long took = System.nanoTime() - t0;
        Map<String, Long> sent = since(before);
        assertThat(sent.getOrDefault("Lookup/OK", 0L)).as("one Lookup per stat: %s in %d ms", sent, took / 1_000_000)
                .isLessThanOrEqualTo(files + refreshes(2, took));
        assertThat(sent.getOrDefault("GetAttr/OK", 0L)).as("%s", sent).isZero();
    }

    /**
     * A listing keeps its entries' attributes as a stat's lookup would: {@code ls -l} (a readdir,
     * then an lstat of each entry) looks none of them up, and {@code rm -rf} (a readdir, then an
     * unlink of each name, whose lookup the kernel makes first) is one Remove per file. Before,
     * each entry cost {@code ls -l} two Lookups and {@code rm -rf} one.
     */
    @Test
    void aListingAnswersTheLookupsThatFollowIt() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-list"));
        int files = 50;
        writeElsewhere("/rt-list", files);
        try (StrataFileSystem other = c.client("rt-list-writer")) {
            other.mkdir("/rt-list/sub", 0755);
        }
        Map<String, Long> before = calls();
        long t0 = System.nanoTime();
        String ls = Sh.sh(d, "ls -l --time-style=+ .").ok().out();
        long took = System.nanoTime() - t0;
        Map<String, Long> sent = since(before);
        assertThat(ls.lines().filter(l -> l.matches(".* f\\d+$")).count()).as(ls).isEqualTo(files);
        assertThat(ls).contains(" 50  f49").containsPattern("(?m)^d.* sub$");
        assertThat(sent.getOrDefault("Lookup/OK", 0L)).as("ls -l: %s in %d ms", sent, took / 1_000_000)
                .isLessThanOrEqualTo(refreshes(2, took));

        before = calls();
        t0 = System.nanoTime();
        Sh.sh(c.mnt, "rm -rf rt-list").ok();
        took = System.nanoTime() - t0;
        sent = since(before);
        assertThat(Files.exists(d)).isFalse();
        assertThat(sent.getOrDefault("Remove/OK", 0L)).as("the files and the two directories: %s", sent).isEqualTo(files + 2);
        assertThat(sent.getOrDefault("Lookup/OK", 0L)).as("rm -rf: %s in %d ms", sent, took / 1_000_000)
                .isLessThanOrEqualTo(refreshes(3, took));
    }

    /**
     * What {@code tar -x} does per file: create it, write, then set its times, owner and mode
     * through the descriptor. The path-based libfuse API turns each of the three into a setattr
     * by path followed by its own getattr of the path: they go to the inode the create made,
     * and the getattr is answered with the setattr's answer. Before, each was a Lookup, the
     * change and another Lookup. What is left are the kernel's own getattrs of the file after a
     * setattr changed it while it is open for writing here (its refresh of the mode before a
     * chown clears set-user-ID bits), which the mount asks the namespace for; its check before
     * the open is answered with the create's answer.
     */
    @Test
    void settingTimesOwnerAndModeOfAFileJustCreatedLooksNothingUp() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-tar"));
        int files = 20;
        String script = "import os\n"
                + "for i in range(" + files + "):\n"
                + "    fd = os.open('f%d' % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n"
                + "    os.write(fd, b'x' * (4096 + i))\n"
                + "    os.utime(fd, ns=(1700000000000000000 + i, 1700000000000000000 + i))\n"
                + "    os.fchown(fd, 0, 4242)\n"
                + "    os.fchmod(fd, 0o640)\n"
                + "    os.close(fd)\n";
        Files.writeString(dir.resolve("tar-like.py"), script);
        Map<String, Long> before = calls();
        long t0 = System.nanoTime();
        Sh.sh(d, "python3 " + dir.resolve("tar-like.py")).ok();
        long took = System.nanoTime() - t0;
        Map<String, Long> sent = since(before);
        assertThat(sent.getOrDefault("Lookup/OK", 0L)).as("%s in %d ms", sent, took / 1_000_000)
                .isLessThanOrEqualTo(2L * files + refreshes(1, took));
        assertThat(sent.getOrDefault("SetAttrs/OK", 0L)).as("%s", sent).isEqualTo(3L * files);
        assertThat(sent.getOrDefault("Resolve/OK", 0L)).as("%s", sent).isLessThanOrEqualTo(refreshes(1, took));
        try (StrataFileSystem other = c.client("rt-tar-reader")) {
            for (int i = 0; i < files; i++) {
                io.strata.client.FileStatus st = other.stat("/rt-tar/f" + i);
                assertThat(st.size()).isEqualTo(4096 + i);
                assertThat(st.mode()).isEqualTo(0640);
                assertThat(st.gid()).isEqualTo(4242);
                assertThat(st.mtimeNanos()).isEqualTo(1700000000000000000L + i);
                Path f = d.resolve("f" + i);
                assertThat(Files.getAttribute(f, "unix:mode")).isEqualTo(0100640);
                assertThat(Files.getAttribute(f, "unix:gid")).isEqualTo(4242);
                assertThat(Files.getLastModifiedTime(f).to(TimeUnit.NANOSECONDS)).isEqualTo(1700000000000000000L + i);
            }
        }
    }

    @Test
    void aMissingNameIsAnsweredWithOneLookup() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-missing"));
        Files.writeString(d.resolve("warm"), "x");
        Map<String, Long> before = calls();
        for (int i = 0; i < 10; i++) {
            assertThat(Files.exists(d.resolve("nope" + i))).isFalse();
        }
        Map<String, Long> sent = since(before);
        assertThat(sent.getOrDefault("Lookup/NOT_FOUND", 0L)).as("%s", sent).isEqualTo(10);
        assertThat(sent.getOrDefault("Resolve/OK", 0L)).as("%s", sent).isZero();
    }

    @Test
    void closeToOpenStillHoldsWhenAnotherClientReplacesAFileTheMountJustLookedUp() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-c2o"));
        Path p = d.resolve("f");
        Files.writeString(p, "old");
        try (StrataFileSystem other = c.client("other")) {
            for (int round = 0; round < 5; round++) {
                assertThat(Files.size(p)).isPositive(); // the mount looks p up: it knows p's inode
                String next = "new content of round " + round;
                other.delete("/rt-c2o/f");
                try (var h = other.create("/rt-c2o/f")) {
                    byte[] b = next.getBytes(StandardCharsets.UTF_8);
                    h.write(0, b, 0, b.length);
                } // closed (published) on the other client before the mount opens
                assertThat(Files.readString(p)).isEqualTo(next);
            }
            // and a file the other client removed is gone for an open, not served from the old inode
            assertThat(Files.size(p)).isPositive();
            other.delete("/rt-c2o/f");
            boolean gone;
            try {
                Files.readString(p);
                gone = false;
            } catch (NoSuchFileException e) {
                gone = true;
            }
            assertThat(gone).isTrue();
        }
    }

    @Test
    void aWriteThroughAnotherClientIsSeenByTheNextOpenAfterItsClose() throws Exception {
        Path d = Files.createDirectories(c.mnt.resolve("rt-c2o-same"));
        Path p = d.resolve("f");
        Files.writeString(p, "v0");
        try (StrataFileSystem other = c.client("other2")) {
            for (int round = 1; round <= 5; round++) {
                assertThat(Files.readString(p)).isEqualTo("v" + (round - 1));
                String next = "v" + round;
                try (var h = other.open("/rt-c2o-same/f", java.util.EnumSet.of(io.strata.client.OpenFlag.WRITE,
                        io.strata.client.OpenFlag.TRUNCATE), 0)) {
                    byte[] b = next.getBytes(StandardCharsets.UTF_8);
                    h.write(0, b, 0, b.length);
                }
                assertThat(Files.readString(p)).isEqualTo(next);
            }
        }
    }
}
