package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.DataSize;
import io.strata.l1.L1Config;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Consistency modes across two clients: a writer, and a reader with an L1 memory cache (so a
 * stale read would be possible if the modes were not honoured).
 */
class ConsistencyTest {
    @TempDir
    static Path dir;
    static TestCluster cluster;
    static StrataFileSystem writer;
    static StrataFileSystem reader;
    static CountingTier[] readerL3 = new CountingTier[1];

    @BeforeAll
    static void start() {
        cluster = TestCluster.start(dir, 51);
        writer = cluster.client("writer");
        reader = cluster.client("reader", cluster.config().withL1(L1Config.memoryOnly(DataSize.ofMiB(64))),
                t -> readerL3[0] = new CountingTier(t, cluster.cluster.storage().clientContext("timer").scheduler()));
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    static byte[] read(StrataFile f, long off, int n) {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (f.read(off + b.position(), b) < 0) {
                break;
            }
        }
        return Arrays.copyOf(b.array(), b.position());
    }

    @Test
    void closeToOpenAReopenSeesWhatAnotherClientClosed() {
        writer.mkdirs("/cto");
        byte[] x = FileSystemTest.random(1_500_000, 1);
        byte[] y = FileSystemTest.random(1_500_000, 2);
        FileSystemTest.writeFile(writer, "/cto/f", x);
        try (StrataFile f = reader.openRead("/cto/f")) {
            assertThat(read(f, 0, x.length)).isEqualTo(x);
            readerL3[0].reset();
            assertThat(read(f, 0, x.length)).isEqualTo(x);
            assertThat(readerL3[0].reads.get()).as("the second read is served by the reader's L1").isZero();
        }
        try (StrataFile w = writer.open("/cto/f", EnumSet.of(OpenFlag.WRITE), 0)) {
            w.write(0, y, 0, y.length);
        }
        try (StrataFile f = reader.openRead("/cto/f")) {
            assertThat(f.dataVersion()).isGreaterThan(2);
            assertThat(read(f, 0, y.length)).as("after the writer's close, an open sees the new bytes").isEqualTo(y);
        }
        // a length published by close is what the next open sees
        try (StrataFile w = writer.open("/cto/f", EnumSet.of(OpenFlag.WRITE), 0)) {
            w.write(y.length, x, 0, 1000);
        }
        try (StrataFile f = reader.openRead("/cto/f")) {
            assertThat(f.size()).isEqualTo(y.length + 1000);
            assertThat(read(f, y.length, 1000)).isEqualTo(Arrays.copyOf(x, 1000));
        }
    }

    @Test
    void strictReadsSeeWritesAsSoonAsTheChainHasThem() {
        writer.mkdirs("/strict");
        writer.setPolicy("/strict", "consistency=strict");
        byte[] x = FileSystemTest.random(600_000, 3);
        byte[] y = FileSystemTest.random(600_000, 4);
        FileSystemTest.writeFile(writer, "/strict/f", x);
        try (StrataFile r = reader.openRead("/strict/f");
             StrataFile w = writer.open("/strict/f", EnumSet.of(OpenFlag.WRITE), 0)) {
            assertThat(read(r, 0, x.length)).isEqualTo(x);
            w.write(0, y, 0, y.length); // no close, no fsync
            assertThat(read(r, 0, y.length)).as("an open strict reader sees the overwrite at once").isEqualTo(y);
            w.write(y.length, x, 0, 5000);
            w.fsync(); // publishes the longer length
            assertThat(read(r, y.length, 5000)).as("a read past the known length asks the namespace again")
                    .isEqualTo(Arrays.copyOf(x, 5000));
            readerL3[0].reset();
            read(r, 0, 100_000);
            read(r, 0, 100_000);
            assertThat(readerL3[0].reads.get()).as("strict: every read reaches L3").isEqualTo(2);
        }
    }

    @Test
    void immutableFilesAreServedFromTheCacheWithoutRevalidation() {
        writer.mkdirs("/frozen");
        writer.setPolicy("/frozen", "consistency=immutable");
        byte[] x = FileSystemTest.random(2_000_000, 5);
        FileSystemTest.writeFile(writer, "/frozen/f", x);
        try (StrataFile f = reader.openRead("/frozen/f")) {
            assertThat(read(f, 0, x.length)).isEqualTo(x);
        }
        readerL3[0].reset();
        try (StrataFile f = reader.openRead("/frozen/f")) {
            assertThat(read(f, 0, x.length)).isEqualTo(x);
        }
        try (BatchRead b = reader.readBatch(java.util.List.of(ReadRequest.of("/frozen/f", 1000, 5000)), 1 << 20)) {
            try (BatchRead.Result res = b.take()) {
                assertThat(res.data().readableBytes()).isEqualTo(5000);
            }
        }
        assertThat(readerL3[0].reads.get()).as("re-reads of an immutable file come from L1").isZero();
    }

    // ---- a file written whole here is read back from L1 ----

    static byte[] readAll(StrataFileSystem fs, String path) {
        try (StrataFile f = fs.openRead(path)) {
            return read(f, 0, (int) f.size());
        }
    }

    @Test
    void aFileWrittenWholeHereIsReadBackFromTheCache() {
        reader.mkdirs("/kept");
        byte[] x = FileSystemTest.random(16 * 1024, 11);
        FileSystemTest.writeFile(reader, "/kept/small", x);
        readerL3[0].reset();
        assertThat(readAll(reader, "/kept/small")).isEqualTo(x);
        assertThat(readerL3[0].reads.get()).as("the writer's own node reads its new file from L1").isZero();

        // fsync publishes a version, the writes after it and the close another: each is kept whole
        byte[] y = FileSystemTest.random(40_000, 12);
        try (StrataFile w = reader.create("/kept/grown")) {
            w.write(0, y, 0, 10_000);
            w.fsync();
            readerL3[0].reset();
            try (StrataFile r = reader.openRead("/kept/grown")) {
                assertThat(read(r, 0, 10_000)).isEqualTo(Arrays.copyOf(y, 10_000));
            }
            assertThat(readerL3[0].reads.get()).as("the version fsync published is kept").isZero();
            w.write(10_000, y, 10_000, 30_000);
        }
        readerL3[0].reset();
        assertThat(readAll(reader, "/kept/grown")).isEqualTo(y);
        assertThat(readerL3[0].reads.get()).as("the version close published is kept").isZero();
        assertThat(readAll(writer, "/kept/grown")).as("another client reads the same bytes from L3").isEqualTo(y);
    }

    @Test
    void anotherClientsChangeBetweenTwoPublishesIsNotHiddenByTheKeptCopy() {
        reader.mkdirs("/kept2");
        byte[] a = "AAAAAAAA".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        try (StrataFile w = reader.create("/kept2/f")) {
            w.write(0, a, 0, a.length);
            w.fsync(); // this version is the copy: kept
            try (StrataFile other = writer.open("/kept2/f", EnumSet.of(OpenFlag.WRITE), 0)) {
                other.write(0, new byte[] {'B', 'B'}, 0, 2);
            } // the other client's close publishes the next version
            w.write(8, new byte[] {'C'}, 0, 1);
        } // this close's version is two above the last one this handle knew: the copy is not the file
        assertThat(new String(readAll(reader, "/kept2/f"), java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("BBAAAAAAC");
        assertThat(new String(readAll(writer, "/kept2/f"), java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("BBAAAAAAC");
    }

    @Test
    void anotherHandleWritingHereKeepsTheCopyOutOfTheCache() {
        reader.mkdirs("/kept3");
        try (StrataFile h1 = reader.create("/kept3/f");
             StrataFile h2 = reader.open("/kept3/f", EnumSet.of(OpenFlag.WRITE), 0)) {
            h1.write(0, new byte[] {'a', 'a', 'a', 'a'}, 0, 4);
            h2.write(4, new byte[] {'b', 'b'}, 0, 2);
            h1.fsync(); // sends both handles' writes; h1's copy holds only its own four bytes
            readerL3[0].reset();
            try (StrataFile r = reader.openRead("/kept3/f")) {
                assertThat(new String(read(r, 0, 6), java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("aaaabb");
            }
        }
        assertThat(new String(readAll(reader, "/kept3/f"), java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("aaaabb");
    }

    @Test
    void aWriteThatFailedLeavesNoCopyOfItsBytesInTheCache() {
        reader.mkdirs("/kept4");
        byte[] a = FileSystemTest.random(100, 41);
        byte[] b = FileSystemTest.random(100, 42);
        StrataFile w = reader.create("/kept4/f");
        w.write(0, a, 0, a.length);
        w.fsync(); // a is published, and kept here
        w.write(0, b, 0, b.length); // gathered
        for (int n = 1; n <= 3; n++) {
            cluster.cluster.storage().context(n).faults().arm(io.strata.storage.engine.ChunkEngine.DATA_WRITE,
                    new io.strata.core.fault.Fault.Fail(new io.strata.core.StrataException(io.strata.core.Status.NO_SPACE,
                            "No space left on device (injected)")));
        }
        try {
            org.assertj.core.api.Assertions.assertThatThrownBy(w::fsync).isInstanceOf(io.strata.core.StrataException.class);
            // still failing when the handle closes: b is dropped, and the close says so
            org.assertj.core.api.Assertions.assertThatThrownBy(w::close).isInstanceOf(io.strata.core.StrataException.class);
        } finally {
            for (int n = 1; n <= 3; n++) {
                cluster.cluster.storage().context(n).faults().disarmAll();
            }
        }
        assertThat(readAll(writer, "/kept4/f")).as("L3 has what was published before the failure").isEqualTo(a);
        assertThat(readAll(reader, "/kept4/f")).as("the writer's node reads what L3 has, not what it tried to write").isEqualTo(a);
    }
}
