package io.strata.storage;

import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.DataSize;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
import io.strata.protocol.storage.TargetScrub;
import io.strata.storage.engine.ChunkEngine;
import io.strata.storage.engine.ChunkMeta;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Corrupt chunk copies never reach a reader and are repaired from another replica: by a scrub
 * pass, behind a read that met one, and before an update that would build on one.
 */
class ScrubTest {
    static final int SIZE = 1 << 20;
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20));

    @TempDir
    Path dir;

    private static byte[] write(StorageClient c, ChunkAddress a, int length, long seed) {
        byte[] data = new byte[length];
        new Random(seed).nextBytes(data);
        ByteBuf b = Unpooled.wrappedBuffer(data);
        try {
            Futures.join(c.writeAsync(a, 0, b, IO));
        } finally {
            b.release();
        }
        return data;
    }

    /**
     * Waits until every replica has committed {@code a}'s latest version: the client's write
     * returns when the tail commits, and the commit reaches the rest of the chain just after.
     */
    private static void settle(StorageCluster f, ChunkAddress a) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (true) {
            long newest = 0;
            for (int n = 1; n <= 3; n++) {
                newest = Math.max(newest, engine(f, n).meta(a.id(), SIZE).committedVersion());
            }
            boolean settled = newest > 0;
            for (int n = 1; n <= 3; n++) {
                ChunkMeta m = engine(f, n).meta(a.id(), SIZE);
                settled &= !m.dirty() && m.committedVersion() == newest;
            }
            if (settled) {
                return;
            }
            assertThat(System.nanoTime()).as("the commit of %s reached every replica", a).isLessThan(until);
            Thread.sleep(10);
        }
    }

    private static ChunkEngine engine(StorageCluster f, int node) {
        return f.node(node).engine(StorageCluster.target(node, 1));
    }

    /** Flips one bit of the committed version's data file on {@code node}, at {@code offset}. */
    private static void flip(StorageCluster f, int node, ChunkAddress a, long offset) throws Exception {
        ChunkMeta m = engine(f, node).meta(a.id(), SIZE);
        try (RandomAccessFile raf = new RandomAccessFile(engine(f, node).dataPath(m.committed()).toFile(), "rw")) {
            raf.seek(offset);
            int b = raf.read();
            raf.seek(offset);
            raf.write(b ^ 0x10);
        }
    }

    private static byte[] readFrom(StorageClient c, ChunkAddress a, int node) {
        return drain(Futures.join(c.readChunkAsync(a, 0, SIZE, IO, Optional.of(StorageCluster.target(node, 1)))).data());
    }

    /** Whether {@code node}'s copy passes a full check. */
    private static boolean healthy(StorageCluster f, int node, ChunkAddress a) {
        ChunkMeta m = engine(f, node).meta(a.id(), SIZE);
        try {
            engine(f, node).verify(a.id(), m.committed());
            return true;
        } catch (StrataException e) {
            assertThat(e.status()).isEqualTo(Status.CHUNK_CORRUPT);
            return false;
        }
    }

    private static TargetScrub report(StorageCluster f, int node) {
        return f.node(node).scrubber().report().get(0);
    }

    @Test
    void aPassFindsCorruptAndMissingCopiesAndRepairsThemFromAnotherReplica() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 61).nodes(3).chains(1).scrub(ScrubOptions.ON_DEMAND).start()) {
            StorageClient c = f.client("c");
            List<ChunkAddress> chunks = new ArrayList<>();
            List<byte[]> contents = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                ChunkAddress a = StorageCluster.chunk(70, i, 1, SIZE);
                chunks.add(a);
                contents.add(write(c, a, 100_000 + i * 70_000, i));
            }
            for (ChunkAddress a : chunks) {
                settle(f, a);
            }
            flip(f, 2, chunks.get(1), 5);
            flip(f, 2, chunks.get(7), 300_000);
            ChunkMeta gone = engine(f, 2).meta(chunks.get(9).id(), SIZE);
            Files.delete(engine(f, 2).dataPath(gone.committed()));
            assertThat(healthy(f, 2, chunks.get(1))).isFalse();

            assertThat(f.node(2).scrubber().startAll()).isEqualTo(1);
            f.node(2).scrubber().awaitPasses(Duration.ofSeconds(60));
            TargetScrub r = report(f, 2);
            assertThat(r.passes()).isEqualTo(1);
            assertThat(r.checkedChunks()).isEqualTo(12);
            assertThat(r.checkedBytes()).isEqualTo(contents.stream().mapToLong(b -> b.length).sum());
            assertThat(r.corrupt()).isEqualTo(3);
            assertThat(r.repaired()).isEqualTo(3);
            assertThat(r.unrepaired()).isZero();
            for (int i = 0; i < chunks.size(); i++) {
                assertThat(healthy(f, 2, chunks.get(i))).as("chunk %d on node 2", i).isTrue();
                assertThat(readFrom(c, chunks.get(i), 2)).as("chunk %d read from node 2", i).isEqualTo(contents.get(i));
                assertThat(engine(f, 2).meta(chunks.get(i).id(), SIZE).committed().version())
                        .as("a repair keeps the version").isEqualTo(engine(f, 1).meta(chunks.get(i).id(), SIZE).committed().version());
            }

            f.node(2).scrubber().startAll();
            f.node(2).scrubber().awaitPasses(Duration.ofSeconds(60));
            assertThat(report(f, 2).passes()).isEqualTo(2);
            assertThat(report(f, 2).corrupt()).as("a second pass finds nothing new").isEqualTo(3);
            assertThat(Files.readString(engine(f, 2).dir().resolve(Scrubber.STATE_FILE)).trim())
                    .as("the end of the last pass is kept for the schedule").isEqualTo(Long.toString(report(f, 2).endedMillis()));
        }
    }

    @Test
    void aReadThatMeetsACorruptCopyGetsTheRightBytesAndTheCopyIsRepairedBehindIt() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 62).nodes(3).chains(1).scrub(ScrubOptions.ON_DEMAND).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(71, 0, 1, SIZE);
            byte[] data = write(c, a, SIZE, 3);
            settle(f, a);
            flip(f, 1, a, 700_000);
            assertThat(readFrom(c, a, 1)).as("served by another replica").isEqualTo(data);
            long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (report(f, 1).repaired() < 1 && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            assertThat(report(f, 1).repaired()).isEqualTo(1);
            assertThat(healthy(f, 1, a)).isTrue();
            assertThat(readFrom(c, a, 1)).isEqualTo(data);
        }
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "pipelined: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void anUpdateNeverBuildsOnACorruptCopy(boolean pipelined) throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 63).nodes(3).chains(1).scrub(ScrubOptions.ON_DEMAND).pipeline(pipelined)
                .start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(72, 0, 1, SIZE);
            byte[] data = write(c, a, 200_000, 4);
            settle(f, a);
            // damage the bytes next to the update (same 64 KiB block) on the head and in the middle
            // of the chain: each would copy them into the new version and checksum them afresh
            flip(f, 1, a, 65_600);
            flip(f, 2, a, 70_000);
            patch(c, a, data, 66_000, 9);
            for (int n = 1; n <= 3; n++) {
                assertThat(healthy(f, n, a)).as("node %d", n).isTrue();
                assertThat(readFrom(c, a, n)).as("node %d", n).isEqualTo(data);
            }
            if (!pipelined) {
                assertThat(report(f, 1).repaired() + report(f, 2).repaired()).as("both repaired before the update").isEqualTo(2);
            } // pipelined, the tail commits first and each damaged replica catches up from the tail's copy

            // a damaged block the update does not touch keeps its old CRC: still caught, never read
            ChunkAddress b = StorageCluster.chunk(72, 1, 1, SIZE);
            byte[] other = write(c, b, 200_000, 5);
            settle(f, b);
            flip(f, 3, b, 10);
            patch(c, b, other, 66_000, 10);
            assertThat(healthy(f, 3, b)).as("the untouched damaged block is still caught").isFalse();
            assertThat(readFrom(c, b, 3)).as("and never reaches a reader").isEqualTo(other);
            long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (!healthy(f, 3, b) && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            assertThat(healthy(f, 3, b)).as("repaired behind the read").isTrue();
        }
    }

    /** Writes 4 KiB of seeded bytes at {@code offset} and applies them to {@code data}. */
    private static void patch(StorageClient c, ChunkAddress a, byte[] data, int offset, long seed) {
        byte[] patch = new byte[4096];
        new Random(seed).nextBytes(patch);
        ByteBuf p = Unpooled.wrappedBuffer(patch);
        try {
            Futures.join(c.writeAsync(a, offset, p, IO));
        } finally {
            p.release();
        }
        System.arraycopy(patch, 0, data, offset, patch.length);
    }

    @Test
    void whenEveryCopyIsCorruptReadsFailAndTheChunkIsReportedUnrepaired() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 64).nodes(3).chains(1).scrub(ScrubOptions.ON_DEMAND).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(73, 0, 1, SIZE);
            write(c, a, 150_000, 5);
            settle(f, a);
            for (int n = 1; n <= 3; n++) {
                flip(f, n, a, 1000 * n);
            }
            assertThatThrownBy(() -> readFrom(c, a, 1)).isInstanceOf(StrataException.class)
                    .extracting(e -> ((StrataException) e).status()).isEqualTo(Status.CHUNK_CORRUPT);
            for (int n = 1; n <= 3; n++) {
                f.node(n).scrubber().startAll();
            }
            for (int n = 1; n <= 3; n++) {
                f.node(n).scrubber().awaitPasses(Duration.ofSeconds(60));
                assertThat(report(f, n).unrepaired()).as("node %d", n).isGreaterThanOrEqualTo(1);
                assertThat(report(f, n).repaired()).as("node %d", n).isZero();
                assertThat(healthy(f, n, a)).as("a bad copy is never installed").isFalse();
            }
        }
    }

    @Test
    void aPassReadsNoFasterThanItsRate() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 65).nodes(3).chains(1)
                .scrub(ScrubOptions.ON_DEMAND.withRate(DataSize.ofMiB(1))).start()) {
            StorageClient c = f.client("c");
            for (int i = 0; i < 4; i++) {
                write(c, StorageCluster.chunk(74, i, 1, SIZE), SIZE, i);
                settle(f, StorageCluster.chunk(74, i, 1, SIZE));
            }
            long t0 = System.nanoTime();
            f.node(3).scrubber().startAll();
            f.node(3).scrubber().awaitPasses(Duration.ofSeconds(60));
            double seconds = (System.nanoTime() - t0) / 1e9;
            assertThat(report(f, 3).checkedBytes()).isEqualTo(4L * SIZE);
            assertThat(seconds).as("4 MiB at 1 MiB/s").isGreaterThan(2.5);
        }
    }
}
