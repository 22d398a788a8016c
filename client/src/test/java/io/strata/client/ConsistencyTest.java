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
}
