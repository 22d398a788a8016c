package io.strata.fuse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.client.FileStatus;
import io.strata.client.OpenFlag;
import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import io.strata.core.util.Eventually;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ordinary tools on a real FUSE mount of a local cluster: cp, tar, dd, git, shell appends,
 * truncate(1), mv over a file, an unlinked open file, concurrent writers, errno mapping, and
 * policies as extended attributes.
 */
@RequiresFuse
class FuseToolsIT {
    @TempDir
    static Path dir;
    static MountedCluster c;
    static Path mnt;
    static Path local;

    @BeforeAll
    static void start() throws IOException {
        c = MountedCluster.start(dir.resolve("cluster"), 81);
        mnt = c.mnt;
        local = Files.createDirectories(dir.resolve("local"));
    }

    @AfterAll
    static void stop() {
        if (c != null) {
            c.close();
        }
    }

    static Path mixedTree(Path root) throws IOException {
        long[] sizes = {0, 1, 4095, 4096, 65_537, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 7, 17 * (1 << 20) + 3};
        Files.createDirectories(root.resolve("a/b/c"));
        Files.createDirectories(root.resolve("empty"));
        for (int i = 0; i < sizes.length; i++) {
            Path sub = i % 3 == 0 ? root : i % 3 == 1 ? root.resolve("a") : root.resolve("a/b/c");
            Sh.randomFile(sub.resolve("f" + i + ".bin"), sizes[i], i);
        }
        Files.createSymbolicLink(root.resolve("link"), Path.of("a/f1.bin"));
        return root;
    }

    @Test
    void aTreeOfMixedSizesCopiesInAndOutUnchanged() throws IOException {
        Path src = mixedTree(local.resolve("tree"));
        Sh.run(local, "cp", "-a", src.toString(), mnt.resolve("tree").toString()).ok();
        assertThat(Sh.tree(mnt.resolve("tree"))).isEqualTo(Sh.tree(src));
        Path back = local.resolve("back");
        Sh.run(local, "cp", "-a", mnt.resolve("tree").toString(), back.toString()).ok();
        assertThat(Sh.tree(back)).isEqualTo(Sh.tree(src));
        // what the mount published is what another client reads
        try (StrataFileSystem other = c.client("other")) {
            FileStatus st = other.stat("/tree/a/b/c/f8.bin");
            assertThat(st.size()).isEqualTo(17L * (1 << 20) + 3);
        }
        String out = Sh.run(local, "sha256sum", mnt.resolve("tree/a/b/c/f8.bin").toString()).ok().out();
        assertThat(out).startsWith(Sh.sha256(src.resolve("a/b/c/f8.bin")));
    }

    @Test
    void tarIntoAndOutOfTheMount() throws IOException {
        Path src = mixedTree(local.resolve("tarsrc"));
        Sh.run(local, "tar", "-cf", mnt.resolve("t.tar").toString(), "-C", src.toString(), ".").ok();
        Files.createDirectories(mnt.resolve("untar"));
        Sh.run(local, "tar", "-xf", mnt.resolve("t.tar").toString(), "-C", mnt.resolve("untar").toString()).ok();
        assertThat(Sh.tree(mnt.resolve("untar"))).isEqualTo(Sh.tree(src));
        Path out = Files.createDirectories(local.resolve("untar-local"));
        Sh.run(local, "tar", "-cf", local.resolve("from-mount.tar").toString(), "-C", mnt.resolve("untar").toString(), ".").ok();
        Sh.run(local, "tar", "-xf", local.resolve("from-mount.tar").toString(), "-C", out.toString()).ok();
        assertThat(Sh.tree(out)).isEqualTo(Sh.tree(src));
    }

    @Test
    void ddOfAGibibyteFileWritesAndReadsBackTheSameBytes() throws Exception {
        // dd reads 1 GiB of pseudo-random bytes from its stdin (generated and checksummed here) and
        // writes them to the mount; a second dd reads the file back to its stdout, checksummed here
        long size = 1L << 30;
        Process w = new ProcessBuilder("dd", "of=" + mnt.resolve("big.bin"), "bs=1M", "iflag=fullblock", "conv=fsync", "status=none")
                .redirectErrorStream(true).start();
        java.security.MessageDigest sent = java.security.MessageDigest.getInstance("SHA-256");
        try (java.io.OutputStream out = w.getOutputStream()) {
            java.util.SplittableRandom r = new java.util.SplittableRandom(99);
            byte[] b = new byte[1 << 20];
            for (long left = size; left > 0; left -= b.length) {
                r.nextBytes(b);
                sent.update(b);
                out.write(b);
            }
        }
        assertThat(w.waitFor(300, TimeUnit.SECONDS)).isTrue();
        assertThat(w.exitValue()).as(new String(w.getInputStream().readAllBytes())).isZero();
        assertThat(Files.size(mnt.resolve("big.bin"))).isEqualTo(size);
        Process rd = new ProcessBuilder("dd", "if=" + mnt.resolve("big.bin"), "bs=1M", "status=none").start();
        java.security.MessageDigest got = java.security.MessageDigest.getInstance("SHA-256");
        long n = 0;
        try (java.io.InputStream in = rd.getInputStream()) {
            byte[] b = new byte[1 << 20];
            for (int k; (k = in.read(b)) > 0; n += k) {
                got.update(b, 0, k);
            }
        }
        assertThat(rd.waitFor(300, TimeUnit.SECONDS)).isTrue();
        assertThat(n).isEqualTo(size);
        assertThat(got.digest()).isEqualTo(sent.digest());
        Files.delete(mnt.resolve("big.bin"));
    }

    @Test
    void shellAppendsAndTruncateUpAndDown() throws IOException {
        Path f = mnt.resolve("log.txt");
        Sh.sh(mnt, "echo one > log.txt && echo two >> log.txt && printf three >> log.txt").ok();
        assertThat(Files.readString(f)).isEqualTo("one\ntwo\nthree");
        Sh.run(mnt, "truncate", "-s", "5", "log.txt").ok();
        assertThat(Files.readString(f)).isEqualTo("one\nt");
        Sh.run(mnt, "truncate", "-s", "3M", "log.txt").ok();
        byte[] all = Files.readAllBytes(f);
        assertThat(all).hasSize(3 << 20);
        assertThat(new String(all, 0, 5, StandardCharsets.UTF_8)).isEqualTo("one\nt");
        for (int i = 5; i < all.length; i++) {
            if (all[i] != 0) {
                throw new AssertionError("byte " + i + " after truncate up is " + all[i]);
            }
        }
        Sh.run(mnt, "truncate", "-s", "0", "log.txt").ok();
        assertThat(Files.size(f)).isZero();
        // ftruncate on an open file with writes in flight
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE, StandardOpenOption.READ)) {
            ch.write(ByteBuffer.wrap(new byte[200_000]), 0);
            ch.write(ByteBuffer.wrap("tail".getBytes(StandardCharsets.UTF_8)), 1_000_000);
            ch.truncate(100_002);
            assertThat(ch.size()).isEqualTo(100_002);
        }
        assertThat(Files.size(f)).isEqualTo(100_002);
    }

    @Test
    void renameOverAnExistingFileReplacesIt() throws IOException {
        Files.writeString(mnt.resolve("old"), "old contents");
        Files.writeString(mnt.resolve("new"), "new contents");
        Sh.run(mnt, "mv", "new", "old").ok();
        assertThat(Files.readString(mnt.resolve("old"))).isEqualTo("new contents");
        assertThat(Files.exists(mnt.resolve("new"))).isFalse();
    }

    @Test
    void anUnlinkedOpenFileStaysUsableUntilClosed() throws IOException {
        Path d = Files.createDirectories(mnt.resolve("unlinked"));
        Path f = d.resolve("f");
        byte[] data = new byte[3_000_000];
        new java.util.Random(1).nextBytes(data);
        Files.write(f, data);
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            Files.delete(f);
            assertThat(Files.exists(f)).isFalse();
            try (Stream<Path> s = Files.list(d)) {
                // libfuse2's high-level API keeps an unlinked open file under a hidden name until it is released (NFS-style)
                assertThat(s.map(p -> p.getFileName().toString()).toList()).allMatch(n -> n.startsWith(".fuse_hidden"));
            }
            ByteBuffer b = ByteBuffer.allocate(data.length);
            while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
                // read on
            }
            assertThat(b.array()).isEqualTo(data);
            ch.write(ByteBuffer.wrap("more".getBytes(StandardCharsets.UTF_8)), data.length);
            assertThat(ch.size()).isEqualTo(data.length + 4);
        }
        Eventually.await("the hidden name removed after the release", java.time.Duration.ofSeconds(10), () -> {
            try (Stream<Path> s = Files.list(d)) {
                return s.findAny().isEmpty();
            } catch (IOException e) {
                return false;
            }
        });
        Files.delete(d); // empty: the unlinked file is gone for good
    }

    @Test
    void concurrentWritersToDifferentFiles() throws Exception {
        Path d = Files.createDirectories(mnt.resolve("writers"));
        List<Thread> ts = new ArrayList<>();
        List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < 8; t++) {
            int k = t;
            Thread th = new Thread(() -> {
                try (FileChannel ch = FileChannel.open(d.resolve("w" + k), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                    java.util.Random r = new java.util.Random(k);
                    byte[] b = new byte[64 << 10];
                    for (int i = 0; i < 48; i++) {
                        r.nextBytes(b);
                        ch.write(ByteBuffer.wrap(b));
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            ts.add(th);
            th.start();
        }
        for (Thread th : ts) {
            th.join();
        }
        assertThat(errors).isEmpty();
        for (int k = 0; k < 8; k++) {
            java.util.Random r = new java.util.Random(k);
            byte[] want = new byte[48 * (64 << 10)];
            byte[] b = new byte[64 << 10];
            for (int i = 0; i < 48; i++) {
                r.nextBytes(b);
                System.arraycopy(b, 0, want, i * b.length, b.length);
            }
            assertThat(Files.readAllBytes(d.resolve("w" + k))).as("file w" + k).isEqualTo(want);
        }
    }

    @Test
    void errorsArriveAsTheRightErrno() throws IOException {
        assertThatThrownBy(() -> Files.readAllBytes(mnt.resolve("no-such-file"))).isInstanceOf(NoSuchFileException.class);
        Files.createDirectories(mnt.resolve("full/x"));
        assertThatThrownBy(() -> Files.delete(mnt.resolve("full"))).isInstanceOf(DirectoryNotEmptyException.class);
        assertThatThrownBy(() -> Files.createDirectory(mnt.resolve("full"))).isInstanceOf(FileAlreadyExistsException.class);
        String rmdirFile = Sh.sh(mnt, "touch plain && rmdir plain 2>&1; echo $?").out();
        assertThat(rmdirFile).contains("Not a directory");
        String cdFile = Sh.sh(mnt, "cat full 2>&1; echo $?").out();
        assertThat(cdFile).contains("Is a directory");
    }

    @Test
    void linksModesTimesAndStatfs() throws IOException {
        Path f = mnt.resolve("meta.txt");
        Files.writeString(f, "x");
        Files.createSymbolicLink(mnt.resolve("sym"), Path.of("meta.txt"));
        assertThat(Files.readSymbolicLink(mnt.resolve("sym"))).isEqualTo(Path.of("meta.txt"));
        assertThat(Files.readString(mnt.resolve("sym"))).isEqualTo("x");
        Files.createLink(mnt.resolve("hard"), f);
        assertThat(Files.getAttribute(f, "unix:nlink")).isEqualTo(2);
        assertThat(Files.getAttribute(f, "unix:ino")).isEqualTo(Files.getAttribute(mnt.resolve("hard"), "unix:ino"));
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r-----"));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(mnt.resolve("hard")))).isEqualTo("rw-r-----");
        Files.setLastModifiedTime(f, FileTime.from(1_600_000_000L, TimeUnit.SECONDS));
        assertThat(Files.getLastModifiedTime(f).to(TimeUnit.SECONDS)).isEqualTo(1_600_000_000L);
        assertThat(Sh.run(mnt, "df", "-h", mnt.toString()).ok().out()).contains("strata");
    }

    /**
     * Directory and file attributes are kept for the entry timeout (1 s under close-to-open):
     * this mount's own changes show at once, another client's within the timeout; an open sees
     * another client's close at once (close-to-open), and what it answered is what a stat shows
     * next. A file open for writing here, and a {@code strict} file, are asked for every time.
     */
    @Test
    void attributesAreKeptBrieflyAndAnOpenAsksAgain() throws Exception {
        Path d = Files.createDirectories(mnt.resolve("dattr"));
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwx------"));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(d))).isEqualTo("rwx------");
        Files.createDirectory(d.resolve("sub"));
        assertThat(Files.isDirectory(d.resolve("sub"))).isTrue();
        Files.delete(d.resolve("sub"));
        assertThat(Files.exists(d.resolve("sub"))).isFalse();
        Path f = d.resolve("f");
        try (StrataFileSystem other = c.client("other-attrs")) {
            other.chmod("/dattr", 0750);
            awaitWithinTimeout("another client's chmod of a directory",
                    () -> PosixFilePermissions.toString(Files.getPosixFilePermissions(d)).equals("rwxr-x---"));
            Files.writeString(f, "12345");
            assertThat(Files.size(f)).isEqualTo(5);
            try (StrataFile w = other.open("/dattr/f", Set.of(OpenFlag.WRITE), 0644)) {
                w.write(5, new byte[] {6, 7, 8, 9, 10}, 0, 5);
            }
            assertThat(Files.readAllBytes(f)).as("another client's close is seen by the next open").hasSize(10);
            assertThat(Files.size(f)).as("and by a stat after that open").isEqualTo(10);
            try (StrataFile w = other.open("/dattr/f", Set.of(OpenFlag.WRITE), 0644)) {
                w.write(10, new byte[] {11, 12}, 0, 2);
            }
            awaitWithinTimeout("another client's close, in a stat", () -> Files.size(f) == 12);
            other.mkdir("/dattr/made-elsewhere", 0755);
            assertThat(Files.isDirectory(d.resolve("made-elsewhere"))).as("a new name is looked up, not cached").isTrue();

            // this mount's own changes, at once
            Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r-----"));
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(f))).isEqualTo("rw-r-----");
            Sh.sh(d, "python3 -c 'import os; os.truncate(\"f\", 3)'").ok(); // truncate(2) by path
            assertThat(Files.size(f)).isEqualTo(3);
            Files.createLink(d.resolve("g"), f);
            assertThat(Files.getAttribute(f, "unix:nlink")).isEqualTo(2);
            Files.delete(d.resolve("g"));
            assertThat(Files.getAttribute(f, "unix:nlink")).isEqualTo(1);
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                ch.write(ByteBuffer.wrap(new byte[4]));
                assertThat(Files.size(f)).as("a stat while this mount writes the file").isEqualTo(7);
                ch.write(ByteBuffer.wrap(new byte[4]));
                assertThat(Files.size(f)).isEqualTo(11);
            }
            assertThat(Files.size(f)).as("after the writer's close").isEqualTo(11);
            Files.move(f, d.resolve("f2"));
            assertThat(Files.exists(f)).isFalse();
            assertThat(Files.size(d.resolve("f2"))).isEqualTo(11);

            // a strict file's attributes are never kept
            Path s = Files.createDirectories(d.resolve("strict"));
            Files.getFileAttributeView(s, UserDefinedFileAttributeView.class)
                    .write("strata.policy.consistency", StandardCharsets.UTF_8.encode("strict"));
            Files.writeString(s.resolve("h"), "abc");
            assertThat(Files.size(s.resolve("h"))).isEqualTo(3);
            try (StrataFile w = other.open("/dattr/strict/h", Set.of(OpenFlag.WRITE), 0644)) {
                w.write(3, new byte[] {4}, 0, 1);
            }
            assertThat(Files.size(s.resolve("h"))).as("another client's close, in a stat of a strict file").isEqualTo(4);
            // nor the answer to this mount's create of a strict file, while it holds it open
            try (FileChannel ch = FileChannel.open(s.resolve("n"), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                assertThat(Files.size(s.resolve("n"))).isZero();
                other.chmod("/dattr/strict/n", 0600);
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(s.resolve("n"))))
                        .as("another client's chmod of a strict file this mount just created").isEqualTo("rw-------");
            }
        }
    }

    /** Waits for {@code done}, failing when it takes more than 3 s (the 1 s timeout and slack). */
    private static void awaitWithinTimeout(String what, java.util.concurrent.Callable<Boolean> done) throws Exception {
        long t0 = System.nanoTime();
        while (!done.call()) {
            assertThat(System.nanoTime() - t0).as(what + " seen within the timeout").isLessThan(TimeUnit.SECONDS.toNanos(3));
            Thread.sleep(50);
        }
    }

    @Test
    void gitWorksOnTheMount() throws IOException {
        Path repo = Files.createDirectories(mnt.resolve("repo"));
        Files.writeString(repo.resolve("README"), "hello\n");
        Sh.sh(repo, "git init -q --template= . && git -c user.email=t@t -c user.name=t add README && "
                + "git -c user.email=t@t -c user.name=t commit -q -m first && git log --oneline | wc -l").ok();
        Files.writeString(repo.resolve("README"), "hello again\n");
        Sh.sh(repo, "git -c user.email=t@t -c user.name=t commit -q -am second").ok();
        assertThat(Sh.sh(repo, "git log --oneline | wc -l && git status --porcelain").ok().out().trim()).isEqualTo("2");
        assertThat(Sh.sh(repo, "git fsck --strict 2>&1; echo $?").out().trim()).endsWith("0");
    }

    @Test
    void directoryPoliciesAreExtendedAttributes() throws IOException {
        Path d = Files.createDirectories(mnt.resolve("policied"));
        UserDefinedFileAttributeView x = Files.getFileAttributeView(d, UserDefinedFileAttributeView.class);
        assertThat(x.list()).as("virtual attributes are read by name, not listed (cp -a must not copy them)").doesNotContain("strata.policy");
        String policy = read(x, "strata.policy");
        assertThat(policy).contains("consistency=close-to-open").contains("stripe.chunk-size=1MiB");
        x.write("strata.policy.consistency", StandardCharsets.UTF_8.encode("strict"));
        x.write("strata.policy", StandardCharsets.UTF_8.encode("stripe.width=2 stripe.chunk-size=256KiB"));
        assertThat(read(x, "strata.policy.consistency")).isEqualTo("strict");
        assertThat(c.fs.policy("/policied").overrides()).containsEntry("consistency", "strict").containsEntry("stripe.width", "2");
        Files.write(d.resolve("f"), new byte[700_000]);
        UserDefinedFileAttributeView fx = Files.getFileAttributeView(d.resolve("f"), UserDefinedFileAttributeView.class);
        assertThat(read(fx, "strata.layout")).contains("chunk-size=256KiB").contains("stripe-width=2");
        assertThat(read(fx, "strata.policy")).contains("consistency=strict");
        assertThatThrownBy(() -> x.write("strata.policy.consistency", StandardCharsets.UTF_8.encode("sometimes")))
                .isInstanceOf(IOException.class);
        x.delete("strata.policy.consistency");
        assertThat(read(x, "strata.policy.consistency")).isEqualTo("close-to-open");
        // ordinary user attributes are kept too
        x.write("note", StandardCharsets.UTF_8.encode("hi"));
        assertThat(read(x, "note")).isEqualTo("hi");
        assertThat(x.list()).containsExactly("note");
    }

    private static String read(UserDefinedFileAttributeView x, String name) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(x.size(name));
        x.read(name, b);
        return new String(Arrays.copyOf(b.array(), b.position()), StandardCharsets.UTF_8).trim();
    }
}
