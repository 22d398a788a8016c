package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.PolicyInfo;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Java API's namespace and data operations against a real in-process cluster (3 storage nodes, meta on LMDB). */
class FileSystemTest {
    @TempDir
    static Path dir;
    static TestCluster cluster;
    static StrataFileSystem fs;

    @BeforeAll
    static void start() {
        cluster = TestCluster.start(dir, 11);
        fs = cluster.client("fs-test");
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    static byte[] readAll(StrataFileSystem fs, String path) {
        try (StrataFile f = fs.openRead(path)) {
            return readAll(f);
        }
    }

    static byte[] readAll(StrataFile f) {
        int n = (int) f.size();
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            int k = f.read(b.position(), b);
            if (k < 0) {
                break;
            }
        }
        return Arrays.copyOf(b.array(), b.position());
    }

    static void writeFile(StrataFileSystem fs, String path, byte[] data) {
        try (StrataFile f = fs.create(path)) {
            f.write(0, data, 0, data.length);
        }
    }

    @Test
    void aFileWrittenAndClosedReadsBackWithItsLength() {
        fs.mkdirs("/basic");
        byte[] data = random(3 * (1 << 20) + 12345, 1); // spans 4 chunks of 1 MiB
        writeFile(fs, "/basic/a.bin", data);
        FileStatus st = fs.stat("/basic/a.bin");
        assertThat(st.size()).isEqualTo(data.length);
        assertThat(st.isFile()).isTrue();
        assertThat(st.dataVersion()).isGreaterThan(1);
        assertThat(readAll(fs, "/basic/a.bin")).isEqualTo(data);
        // a range in the middle, across a chunk boundary
        try (StrataFile f = fs.openRead("/basic/a.bin")) {
            ByteBuffer b = ByteBuffer.allocate(100_000);
            assertThat(f.read((1 << 20) - 50_000, b)).isEqualTo(100_000);
            assertThat(b.array()).isEqualTo(Arrays.copyOfRange(data, (1 << 20) - 50_000, (1 << 20) + 50_000));
            assertThat(f.read(data.length, ByteBuffer.allocate(10))).isEqualTo(-1);
            ByteBuffer tail = ByteBuffer.allocate(1000);
            assertThat(f.read(data.length - 10, tail)).isEqualTo(10);
        }
    }

    /**
     * Times set on a file with writes not yet published stand after its close: the writes are
     * published before the times are set (tar and cp -p write a file, then set its times through
     * the open descriptor). Before, the close's publish set the modification time to its own.
     */
    @Test
    void timesSetAfterUnpublishedWritesStandAfterTheClose() {
        fs.mkdirs("/times");
        long t = 1_700_000_000_123_456_789L;
        try (StrataFile f = fs.create("/times/f")) {
            f.write(0, new byte[5000], 0, 5000);
            Futures.join(fs.setAttrAsync("/times/f", SetAttr.times(t, t)), Duration.ofSeconds(10));
        }
        FileStatus st = fs.stat("/times/f");
        assertThat(st.size()).isEqualTo(5000);
        assertThat(st.mtimeNanos()).isEqualTo(t);
        assertThat(st.atimeNanos()).isEqualTo(t);
        try (StrataFile f = fs.open("/times/f", java.util.EnumSet.of(OpenFlag.WRITE), 0)) {
            f.write(5000, new byte[10], 0, 10);
            Futures.join(fs.setAttrKnownAsync("/times/f", st.inode(), SetAttr.times(null, t + 1)), Duration.ofSeconds(10));
        }
        assertThat(fs.stat("/times/f").mtimeNanos()).as("by the inode the path named").isEqualTo(t + 1);
        assertThat(fs.stat("/times/f").size()).isEqualTo(5010);
    }

    @Test
    void holesReadAsZerosAndNothingPastTheEnd() {
        fs.mkdirs("/holes");
        try (StrataFile f = fs.create("/holes/sparse")) {
            f.write(5L << 20, "end".getBytes(StandardCharsets.UTF_8), 0, 3); // chunk 5 only
            f.write(100, "x".getBytes(StandardCharsets.UTF_8), 0, 1);
        }
        byte[] all = readAll(fs, "/holes/sparse");
        assertThat(all).hasSize((5 << 20) + 3);
        for (int i = 0; i < all.length - 3; i++) {
            if (i != 100 && all[i] != 0) {
                throw new AssertionError("byte " + i + " of a hole is " + all[i]);
            }
        }
        assertThat(all[100]).isEqualTo((byte) 'x');
        assertThat(new String(all, all.length - 3, 3, StandardCharsets.UTF_8)).isEqualTo("end");
    }

    @Test
    void truncateDownThenUpReadsZerosWhereBytesWere() {
        fs.mkdirs("/trunc");
        byte[] data = random(2_500_000, 2);
        writeFile(fs, "/trunc/f", data);
        fs.truncate("/trunc/f", 1_000_000);
        assertThat(fs.stat("/trunc/f").size()).isEqualTo(1_000_000);
        fs.truncate("/trunc/f", 3_000_000);
        byte[] back = readAll(fs, "/trunc/f");
        assertThat(back).hasSize(3_000_000);
        assertThat(Arrays.copyOf(back, 1_000_000)).isEqualTo(Arrays.copyOf(data, 1_000_000));
        for (int i = 1_000_000; i < back.length; i++) {
            if (back[i] != 0) {
                throw new AssertionError("byte " + i + " after truncate down and up is " + back[i] + ", not zero");
            }
        }
        // through an open handle, with gathered writes in flight
        try (StrataFile f = fs.open("/trunc/f", EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0)) {
            f.write(2_000_000, data, 0, 500_000);
            f.truncate(2_100_000);
            assertThat(f.size()).isEqualTo(2_100_000);
            ByteBuffer b = ByteBuffer.allocate(100_000);
            f.read(2_000_000, b);
            assertThat(b.array()).isEqualTo(Arrays.copyOf(data, 100_000));
        }
        assertThat(fs.stat("/trunc/f").size()).isEqualTo(2_100_000);
    }

    @Test
    void openWithTruncateDropsTheOldBytes() {
        fs.mkdirs("/otrunc");
        writeFile(fs, "/otrunc/f", random(1_500_000, 3));
        try (StrataFile f = fs.create("/otrunc/f")) {
            f.write(0, new byte[] {1, 2, 3}, 0, 3);
            f.truncate(1_400_000); // extend: must read zeros, not the old bytes
        }
        byte[] back = readAll(fs, "/otrunc/f");
        assertThat(back).hasSize(1_400_000);
        assertThat(Arrays.copyOf(back, 3)).containsExactly(1, 2, 3);
        for (int i = 3; i < back.length; i++) {
            if (back[i] != 0) {
                throw new AssertionError("byte " + i + " is " + back[i]);
            }
        }
    }

    @Test
    void appendsExtendTheFile() {
        fs.mkdirs("/append");
        writeFile(fs, "/append/log", "one\n".getBytes(StandardCharsets.UTF_8));
        for (String line : List.of("two\n", "three\n")) {
            try (StrataFile f = fs.open("/append/log", EnumSet.of(OpenFlag.WRITE), 0)) {
                byte[] b = line.getBytes(StandardCharsets.UTF_8);
                f.write(f.size(), b, 0, b.length);
            }
        }
        assertThat(new String(readAll(fs, "/append/log"), StandardCharsets.UTF_8)).isEqualTo("one\ntwo\nthree\n");
    }

    @Test
    void directoriesListRenameAndDelete() {
        fs.mkdirs("/tree/sub");
        writeFile(fs, "/tree/b", new byte[] {2});
        writeFile(fs, "/tree/a", new byte[] {1});
        assertThat(fs.list("/tree").stream().map(DirEntry::name)).containsExactly("a", "b", "sub");
        // rename over an existing file replaces it
        fs.rename("/tree/a", "/tree/b");
        assertThat(readAll(fs, "/tree/b")).containsExactly(1);
        assertThat(fs.exists("/tree/a")).isFalse();
        // a directory moves with its contents
        writeFile(fs, "/tree/sub/c", new byte[] {3});
        fs.rename("/tree/sub", "/tree/moved");
        assertThat(readAll(fs, "/tree/moved/c")).containsExactly(3);
        assertThatThrownBy(() -> fs.stat("/tree/sub/c")).isInstanceOf(StrataException.class)
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.NOT_FOUND));
        assertThatThrownBy(() -> fs.delete("/tree/moved"))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.DIRECTORY_NOT_EMPTY));
        fs.delete("/tree/moved/c");
        fs.delete("/tree/moved");
        assertThat(fs.list("/tree").stream().map(DirEntry::name)).containsExactly("b");
        assertThatThrownBy(() -> fs.mkdir("/tree/b", 0755))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.ALREADY_EXISTS));
        assertThatThrownBy(() -> fs.open("/tree", EnumSet.of(OpenFlag.READ), 0))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.IS_A_DIRECTORY));
    }

    @Test
    void symlinksHardLinksModesAndTimes() {
        fs.mkdirs("/links");
        writeFile(fs, "/links/target", "hello".getBytes(StandardCharsets.UTF_8));
        fs.symlink("target", "/links/sym");
        assertThat(fs.lstat("/links/sym").isSymlink()).isTrue();
        assertThat(fs.readlink("/links/sym")).isEqualTo("target");
        assertThat(fs.stat("/links/sym").isFile()).isTrue();
        assertThat(readAll(fs, "/links/sym")).isEqualTo("hello".getBytes(StandardCharsets.UTF_8));
        fs.link("/links/target", "/links/hard");
        assertThat(fs.stat("/links/hard").nlink()).isEqualTo(2);
        assertThat(fs.stat("/links/hard").inode()).isEqualTo(fs.stat("/links/target").inode());
        fs.chmod("/links/target", 0600);
        assertThat(fs.stat("/links/hard").mode()).isEqualTo(0600);
        fs.setTimes("/links/target", 1_000_000_000L, 2_000_000_000L);
        assertThat(fs.stat("/links/target").mtimeNanos()).isEqualTo(2_000_000_000L);
    }

    @Test
    void permissionsAreTheNamespacesAndErrorsCarryTheirStatus() {
        fs.mkdirs("/private");
        fs.chmod("/private", 0700);
        StrataFileSystem alice = fs.as(Caller.of(1000, 1000));
        assertThatThrownBy(() -> alice.create("/private/x"))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.PERMISSION_DENIED));
        assertThatThrownBy(() -> fs.stat("/nope/at/all"))
                .satisfies(e -> assertThat(((StrataException) e).status().errno()).isEqualTo(Status.Errno.ENOENT));
        assertThatThrownBy(() -> fs.stat("relative"))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.INVALID_ARGUMENT));
    }

    @Test
    void aTruncateTheNamespaceRefusesCutsNothing() {
        fs.mkdirs("/keep");
        byte[] data = random(3_000_000, 7);
        writeFile(fs, "/keep/f", data);
        fs.chmod("/keep/f", 0644);
        StrataFileSystem alice = fs.as(Caller.of(1000, 1000));
        assertThatThrownBy(() -> alice.truncate("/keep/f", 10))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.PERMISSION_DENIED));
        assertThatThrownBy(() -> Futures.join(alice.setAttrAsync("/keep/f", SetAttr.size(0)), Duration.ofSeconds(10)))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.PERMISSION_DENIED));
        try (StrataFile reader = fs.openRead("/keep/f")) {
            // the file open here (another process's reader shares its state): still checked before the cut
            assertThatThrownBy(() -> alice.truncate("/keep/f", 10))
                    .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.PERMISSION_DENIED));
        }
        assertThat(fs.stat("/keep/f").size()).isEqualTo(data.length);
        assertThat(readAll(fs, "/keep/f")).as("no byte was cut").isEqualTo(data);

        fs.truncate("/keep/f", 10);
        fs.truncate("/keep/f", 20);
        byte[] expect = new byte[20];
        System.arraycopy(data, 0, expect, 0, 10);
        assertThat(readAll(fs, "/keep/f")).as("the owner's truncate cuts, a later extension reads zeros").isEqualTo(expect);
    }

    @Test
    void policiesAndXattrs() {
        fs.mkdirs("/pol/child");
        PolicyInfo p = fs.setPolicy("/pol", "stripe.width=2", "consistency=strict");
        assertThat(p.overrides()).containsEntry("stripe.width", "2").containsEntry("consistency", "strict");
        writeFile(fs, "/pol/child/f", new byte[] {9});
        FileStatus st = fs.stat("/pol/child/f");
        assertThat(st.layout().stripeWidth()).isEqualTo(2);
        assertThat(st.consistency()).isEqualTo(io.strata.config.policy.Consistency.STRICT);
        assertThat(fs.policy("/pol/child").effective()).anySatisfy(s -> {
            assertThat(s.key()).isEqualTo("consistency");
            assertThat(s.from()).isEqualTo("/pol");
        });
        Futures.join(fs.setXattrAsync("/pol/child/f", "user.k", "v".getBytes(StandardCharsets.UTF_8), OpenFlags.XATTR_CREATE),
                Duration.ofSeconds(10));
        assertThat(Futures.join(fs.getXattrAsync("/pol/child/f", "user.k"), Duration.ofSeconds(10))).containsExactly('v');
        assertThat(Futures.join(fs.listXattrsAsync("/pol/child/f"), Duration.ofSeconds(10))).contains("user.k");
    }

    @Test
    void immutableFilesAreReadOnlyOnceWritten() {
        fs.mkdirs("/frozen");
        fs.setPolicy("/frozen", "consistency=immutable");
        writeFile(fs, "/frozen/weights", random(10_000, 4));
        assertThatThrownBy(() -> fs.open("/frozen/weights", EnumSet.of(OpenFlag.WRITE), 0))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.READ_ONLY));
        assertThatThrownBy(() -> fs.truncate("/frozen/weights", 100))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.READ_ONLY));
        assertThat(readAll(fs, "/frozen/weights")).isEqualTo(random(10_000, 4));
    }

    @Test
    void anUnlinkedOpenFileStaysReadableUntilClosedThenItsChunksAreFreed() {
        fs.mkdirs("/gone");
        byte[] data = random(2_000_000, 5);
        writeFile(fs, "/gone/f", data);
        try (StrataFile f = fs.openRead("/gone/f")) {
            fs.delete("/gone/f");
            assertThat(fs.exists("/gone/f")).isFalse();
            ByteBuffer b = ByteBuffer.allocate(data.length);
            while (b.hasRemaining() && f.read(b.position(), b) > 0) {
                // read on
            }
            assertThat(b.array()).isEqualTo(data);
        }
    }

    @Test
    void concurrentWritersToDifferentFilesAllLand() throws Exception {
        fs.mkdirs("/many");
        List<Thread> ts = new java.util.ArrayList<>();
        List<Throwable> errors = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        for (int t = 0; t < 8; t++) {
            int k = t;
            Thread th = new Thread(() -> {
                try {
                    writeFile(fs, "/many/f" + k, random(700_000 + k * 1000, 100 + k));
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
            assertThat(readAll(fs, "/many/f" + k)).isEqualTo(random(700_000 + k * 1000, 100 + k));
        }
    }
}
