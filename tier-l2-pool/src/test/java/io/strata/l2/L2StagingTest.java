package io.strata.l2;

import static io.strata.l2.L2Cluster.T;
import static io.strata.l2.L2Cluster.chunk;
import static io.strata.l2.L2Cluster.failure;
import static io.strata.l2.L2Cluster.read;
import static io.strata.l2.L2Cluster.staged;
import static io.strata.l2.L2Cluster.write;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l2.pool.L2Tier;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.Staging;
import io.strata.testing.Seeded;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Staging through real L2 agents over a real storage cluster and meta service: what a trainer
 * writing a checkpoint relies on. Every failure here is injected for real: an agent's server is
 * closed (routing then marks it down, as its lease would), or its disk is wiped.
 */
class L2StagingTest {
    static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    static void awaitDurable(L2Cluster c, InodeAttrs f, Duration within) throws InterruptedException {
        long end = System.nanoTime() + within.toNanos();
        while (System.nanoTime() < end) {
            Staging s = c.staging(f).orElseThrow();
            if (s.state() == Staging.State.DURABLE) {
                return;
            }
            assertThat(s.state()).isNotEqualTo(Staging.State.LOST);
            TimeUnit.MILLISECONDS.sleep(50);
        }
        throw new AssertionError("not durable in L3 within " + within + ": " + c.staging(f));
    }

    @Seeded
    @Test
    void aStagedFileIsReadFromL2AndDurableInL3OnceFsyncReturns(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 3)) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            int cs = f.layout().chunkSize();
            byte[][] data = new byte[4][];
            for (int i = 0; i < 4; i++) {
                data[i] = bytes(i == 3 ? cs / 3 : cs, seed + i);
                write(t, chunk(f, i), 0, data[i], io);
            }
            assertThat(c.inL3(chunk(f, 0))).as("nothing reaches L3 before the file is published").isEmpty();
            assertThat(read(t, chunk(f, 2), io)).isEqualTo(data[2]);
            double served = 0;
            for (int id = 11; id <= 13; id++) {
                served += c.agentContext(id).meters().find("strata.l2.read.bytes").counter().count();
            }
            assertThat(served).as("bytes the agents served to the reader (strata stats' L2 rd MB/s)").isEqualTo(data[2].length);
            assertThat(read(c.tier(), chunk(f, 2), io)).as("another client, before the publish, reads L3").isEmpty();

            Futures.join(t.flushAsync(f.id(), io), T);

            Staging s = c.staging(f).orElseThrow();
            assertThat(s.state()).isEqualTo(Staging.State.DURABLE);
            assertThat(s.durableMillis()).isGreaterThanOrEqualTo(s.publishedMillis());
            for (int i = 0; i < 4; i++) {
                assertThat(c.inL3(chunk(f, i))).as("chunk %d in L3", i).isEqualTo(data[i]);
                assertThat(read(c.tier(), chunk(f, i), io)).isEqualTo(data[i]);
            }
        }
    }

    @Seeded
    @Test
    void withDurabilityL2FsyncReturnsBeforeTheDrainAndNoReaderSeesOlderL3Bytes(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2, a -> a.withDrainBandwidth(DataSize.ofKiB(64)))) {
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            L2Tier t = c.tier();
            IoOptions io = staged(true);
            write(t, chunk(f, 0), 0, bytes(cs, seed + 1), io);
            // an agent drains its first chunk at once, then one every cs / 64 KiB s (8 s), oldest
            // staged first: the patched chunk is the third its drainer holds, so L3 waits 16 s for it
            int target = thirdOfItsDrainer(c.staging(f).orElseThrow());
            byte[] old = bytes(cs, seed);
            Futures.join(c.l3.writeAsync(chunk(f, target), 0, Unpooled.wrappedBuffer(old), IoOptions.DEFAULT), T);
            for (int i = 1; i < target; i++) {
                write(t, chunk(f, i), 0, bytes(cs, seed + 10 + i), io);
            }
            byte[] patch = bytes(4096, seed + 2);
            write(t, chunk(f, target), 8192, patch, io);

            long start = System.nanoTime();
            Futures.join(t.flushAsync(f.id(), io), T);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(ms).as("fsync at durability l2 waits for two fdatasyncs, not a 16 s drain").isLessThan(8000);
            assertThat(c.staging(f).orElseThrow().state()).isNotEqualTo(Staging.State.DURABLE);

            byte[] expected = old.clone();
            System.arraycopy(patch, 0, expected, 8192, patch.length);
            assertThat(read(c.tier(), chunk(f, target), io)).as("a new reader sees the staged bytes over the old ones").isEqualTo(expected);
            assertThat(c.inL3(chunk(f, target))).as("L3 still has the old bytes: the drain has not reached them").isEqualTo(old);
        }
    }

    /** The first chunk index that two lower chunks share the first holder (the drainer) with. */
    private static int thirdOfItsDrainer(Staging s) {
        for (int j = 2; ; j++) {
            int drainer = Holders.of(s, j).get(0);
            int before = 0;
            for (int i = 0; i < j; i++) {
                before += Holders.of(s, i).get(0) == drainer ? 1 : 0;
            }
            if (before >= 2) {
                return j;
            }
        }
    }

    @Seeded
    @Test
    void aChunkKeepsAsManyL2CopiesAsAskedAndSurvivesLosingAllButOne(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 4, a -> a.withDrainBandwidth(DataSize.ofKiB(64)))) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(true, 3);
            int n = 6;
            byte[][] data = L2Cluster.writeChunks(t, f, io, n, seed, 256 * 1024);
            Futures.join(t.flushAsync(f.id(), io), T);
            Staging s = c.staging(f).orElseThrow();
            assertThat(s.replicas()).isEqualTo(3);
            for (int i = 0; i < n; i++) {
                assertThat(Holders.of(s, i)).as("holders of chunk %d", i).hasSize(3).doesNotHaveDuplicates();
            }
            assertThat(c.ctx.meters().find("strata.l2.client.fsync.short.of.copies").counter().count())
                    .as("every chunk has its three copies: the fsync returned at L2").isZero();
            // an agent drains its first chunk at once, then one per 4 s: a chunk second in its drainer's
            // line is not in L3 yet when two of its three holders die
            int victim = secondOfItsDrainer(s, n);
            assertThat(c.inL3(chunk(f, victim))).as("chunk %d is in L2 only when its holders die", victim).isEmpty();
            List<Integer> holders = Holders.of(s, victim);
            c.kill(holders.get(0));
            c.kill(holders.get(1));

            awaitDurable(c, f, Duration.ofSeconds(60));
            for (int i = 0; i < n; i++) {
                assertThat(c.inL3(chunk(f, i))).as("chunk %d (holders %s) in L3", i, Holders.of(s, i)).isEqualTo(data[i]);
            }

            InodeAttrs one = c.newFile();
            IoOptions single = staged(false, 1);
            write(t, chunk(one, 0), 0, data[0], single);
            Futures.join(t.flushAsync(one.id(), single), T);
            assertThat(Holders.of(c.staging(one).orElseThrow(), 0)).as("l2.replicas = 1").hasSize(1);
            assertThat(c.inL3(chunk(one, 0))).isEqualTo(data[0]);
        }
    }

    /** A chunk below {@code n} whose first holder (its drainer) holds a lower chunk first. */
    private static int secondOfItsDrainer(Staging s, int n) {
        for (int j = 1; j < n; j++) {
            int drainer = Holders.of(s, j).get(0);
            for (int i = 0; i < j; i++) {
                if (Holders.of(s, i).get(0) == drainer) {
                    return j;
                }
            }
        }
        throw new AssertionError("no two of " + n + " chunks share a drainer among 4 agents");
    }

    @Seeded
    @Test
    void withFewerAgentsServingThanCopiesAskedAnL2FsyncWaitsForL3(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2, a -> a.withDrainBandwidth(DataSize.ofKiB(128)))) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(true, 3);
            byte[][] data = L2Cluster.writeChunks(t, f, io, 3, seed, 256 * 1024);
            Futures.join(t.flushAsync(f.id(), io), T);
            Staging s = c.staging(f).orElseThrow();
            assertThat(Holders.of(s, 0)).as("two agents serve: two copies of three").hasSize(2);
            assertThat(s.state()).as("two copies are less than durability = l2 with l2.replicas = 3 promises: the fsync waited for L3")
                    .isEqualTo(Staging.State.DURABLE);
            for (int i = 0; i < data.length; i++) {
                assertThat(c.inL3(chunk(f, i))).as("chunk %d", i).isEqualTo(data[i]);
            }
            assertThat(c.ctx.meters().find("strata.l2.client.fsync.short.of.copies").counter().count()).isEqualTo(1.0);
        }
    }

    @Seeded
    @Test
    void anAgentKilledWhileAFileIsWrittenLosesNoAcknowledgedByte(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 3)) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            int cs = f.layout().chunkSize();
            byte[][] data = new byte[8][];
            for (int i = 0; i < 4; i++) {
                data[i] = bytes(cs, seed + i);
                write(t, chunk(f, i), 0, data[i], io);
            }
            int victim = Holders.of(c.staging(f).orElseThrow(), 2).get(0);
            c.kill(victim);
            for (int i = 2; i < 8; i++) { // overwrite chunks the dead agent held, and write new ones
                data[i] = bytes(cs, seed + 100 + i);
                write(t, chunk(f, i), 0, data[i], io);
            }
            Futures.join(t.flushAsync(f.id(), io), T);

            Staging s = c.staging(f).orElseThrow();
            assertThat(s.state()).isEqualTo(Staging.State.DURABLE);
            assertThat(s.overrides()).as("chunks moved off agent %d are recorded", victim).isNotEmpty();
            assertThat(s.overrides().values()).allSatisfy(h -> assertThat(h).doesNotContain(victim));
            for (int i = 0; i < 8; i++) {
                assertThat(c.inL3(chunk(f, i))).as("chunk %d", i).isEqualTo(data[i]);
                assertThat(read(c.tier(), chunk(f, i), io)).isEqualTo(data[i]);
            }
        }
    }

    @Seeded
    @Test
    void theSurvivingCopyDrainsWhenTheOtherHolderDiesAfterAnL2Fsync(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2, a -> a.withDrainBandwidth(DataSize.ofMiB(2)))) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(true);
            byte[][] data = L2Cluster.writeChunks(t, f, io, 6, seed);
            Futures.join(t.flushAsync(f.id(), io), T);
            c.kill(11);

            awaitDurable(c, f, Duration.ofSeconds(60));
            for (int i = 0; i < data.length; i++) {
                assertThat(c.inL3(chunk(f, i))).as("chunk %d", i).isEqualTo(data[i]);
                assertThat(read(c.tier(), chunk(f, i), io)).isEqualTo(data[i]);
            }
        }
    }

    @Seeded
    @Test
    void anAgentRestartKeepsItsCopiesAndTheDrainResumes(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2, a -> a.withDrainBandwidth(DataSize.ofMiB(2)))) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(true);
            byte[][] data = L2Cluster.writeChunks(t, f, io, 5, seed);
            Futures.join(t.flushAsync(f.id(), io), T);
            c.kill(11);
            c.kill(12);
            c.start(11);
            c.start(12);

            for (int i = 0; i < data.length; i++) {
                assertThat(read(c.tier(), chunk(f, i), io)).as("chunk %d after both agents restarted", i).isEqualTo(data[i]);
            }
            awaitDurable(c, f, Duration.ofSeconds(60));
            for (int i = 0; i < data.length; i++) {
                assertThat(c.inL3(chunk(f, i))).as("chunk %d", i).isEqualTo(data[i]);
            }
        }
    }

    @Seeded
    @Test
    void bothCopiesLostBeforeTheDrainIsAClearErrorNeverZerosOrOldBytes(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2, a -> a.withDrainBandwidth(DataSize.ofKiB(64)))) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(true);
            byte[][] data = L2Cluster.writeChunks(t, f, io, 3, seed);
            Futures.join(t.flushAsync(f.id(), io), T);

            // both agents go away: a reader cannot reach any copy
            c.kill(11);
            c.kill(12);
            StrataException down = failure(() -> read(c.tier(), chunk(f, 2), io));
            assertThat(down.status()).isEqualTo(Status.DATA_LOST);
            assertThat(down.getMessage()).contains(f.id().toString()).contains("chunk 2").contains("no L2 copy can be reached");

            // they come back with empty disks: the copies are gone for good
            c.wipe(11);
            c.wipe(12);
            c.start(11);
            c.start(12);
            int lost = 0;
            for (int i = 0; i < data.length; i++) {
                ChunkAddress a = chunk(f, i);
                try {
                    assertThat(read(c.tier(), a, io)).as("chunk %d: the right bytes, or an error", i).isEqualTo(data[i]);
                } catch (StrataException e) {
                    assertThat(e.status()).isEqualTo(Status.DATA_LOST);
                    assertThat(e.getMessage()).contains(f.id().toString()).contains("chunk " + i);
                    lost++;
                }
            }
            assertThat(lost).as("the drain had a 64 KiB/s budget: most chunks were never drained").isGreaterThanOrEqualTo(2);
            Staging s = c.staging(f).orElseThrow();
            assertThat(s.state()).isEqualTo(Staging.State.LOST);
            assertThat(s.lost()).contains("every L2 copy is gone");
        }
    }

    @Seeded
    @Test
    void anAgentWhoseDiskFailsStepsAsideAndNoAcknowledgedByteIsLost(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 3)) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            int cs = f.layout().chunkSize();
            byte[][] data = new byte[8][];
            for (int i = 0; i < 4; i++) {
                write(t, chunk(f, i), 0, bytes(cs, seed + i), io);
            }
            int victim = Holders.of(c.staging(f).orElseThrow(), 1).get(0);
            c.breakDisk(victim);
            for (int i = 0; i < data.length; i++) { // rewrite what it held, and write more
                data[i] = bytes(cs, seed + 50 + i);
                write(t, chunk(f, i), 0, data[i], io);
            }
            Futures.join(t.flushAsync(f.id(), io), T);

            assertThat(c.agent(victim).status().diskFailed()).isTrue();
            Staging s = c.staging(f).orElseThrow();
            assertThat(s.state()).isEqualTo(Staging.State.DURABLE);
            for (int i = 0; i < data.length; i++) {
                assertThat(Holders.of(s, i)).as("chunk %d's holders", i).doesNotContain(victim);
                assertThat(c.inL3(chunk(f, i))).as("chunk %d", i).isEqualTo(data[i]);
                assertThat(read(c.tier(), chunk(f, i), io)).isEqualTo(data[i]);
            }
        }
    }

    @Seeded
    @Test
    void aHolderThatLostItsCopyNeverRebuildsAStagedChunkFromOlderL3Bytes(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2)) {
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            byte[] old = bytes(cs, seed);
            Futures.join(c.l3.writeAsync(chunk(f, 0), 0, Unpooled.wrappedBuffer(old), IoOptions.DEFAULT), T);
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            write(t, chunk(f, 0), 0, bytes(cs, seed + 1), io); // acknowledged by both holders, not published: nothing drains

            List<Integer> holders = Holders.of(c.staging(f).orElseThrow(), 0);
            c.kill(holders.get(1));
            c.kill(holders.get(0));
            c.wipe(holders.get(0));
            c.start(holders.get(0)); // back with an empty disk; the other holder stays down

            StrataException e = failure(() -> write(t, chunk(f, 0), 100, bytes(4096, seed + 2), io));
            assertThat(e.status()).as("the newest bytes are gone: an error, not a chunk rebuilt on L3's older bytes").isEqualTo(Status.DATA_LOST);
            assertThat(e.getMessage()).contains("chunk 0");
            assertThat(c.agent(holders.get(0)).status().stagedChunks()).as("no copy built from L3").isZero();
            assertThat(c.inL3(chunk(f, 0))).isEqualTo(old);
        }
    }

    @Seeded
    @Test
    void aFullPoolSendsChunksElsewhereOrThroughToL3NeverNoSpace(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2, a -> a.withCapacity(DataSize.ofMiB(1)))) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            int cs = f.layout().chunkSize();
            assertThat(cs).isEqualTo(1 << 20);
            byte[][] data = new byte[3][];
            for (int i = 0; i < data.length; i++) {
                data[i] = bytes(cs, seed + i);
                write(t, chunk(f, i), 0, data[i], io); // each agent has room for one chunk
            }
            Futures.join(t.flushAsync(f.id(), io), T);
            Staging s = c.staging(f).orElseThrow();
            assertThat(s.state()).isEqualTo(Staging.State.DURABLE);
            assertThat(s.overrides()).as("chunks no agent could take were written through to L3").containsValue(List.of());
            assertThat(c.agent(11).status().refusedFull() + c.agent(12).status().refusedFull()).isPositive();
            for (int i = 0; i < data.length; i++) {
                assertThat(c.inL3(chunk(f, i))).as("chunk %d", i).isEqualTo(data[i]);
                assertThat(read(c.tier(), chunk(f, i), io)).isEqualTo(data[i]);
            }
        }
    }

    @Seeded
    @Test
    void overwritesTruncatesAndUnlinksOfAStagedFileDoTheRightThing(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2)) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            int cs = f.layout().chunkSize();
            byte[] v1 = bytes(cs, seed);
            write(t, chunk(f, 0), 0, v1, io);
            write(t, chunk(f, 1), 0, v1, io);
            Futures.join(t.flushAsync(f.id(), io), T);

            byte[] patch = bytes(1000, seed + 1);
            write(t, chunk(f, 0), 5000, patch, io);
            Futures.join(t.truncateAsync(chunk(f, 1), 3000, io), T);
            Futures.join(t.flushAsync(f.id(), io), T);
            byte[] v2 = v1.clone();
            System.arraycopy(patch, 0, v2, 5000, patch.length);
            assertThat(c.inL3(chunk(f, 0))).isEqualTo(v2);
            assertThat(c.inL3(chunk(f, 1))).isEqualTo(Arrays.copyOf(v1, 3000));
            assertThat(read(c.tier(), chunk(f, 1), io)).isEqualTo(Arrays.copyOf(v1, 3000));
            long[] listed = Futures.join(t.chunksOfAsync(f.layout().chunks(f.id()), 0, io), T);
            assertThat(listed).containsExactly(0, 1);

            Futures.join(c.meta.unlinkAsync(Caller.ROOT, InodeId.ROOT, "f1", RequestId.create(1, c.ctx.random())), T);
            Futures.join(c.cluster.meta().meta().collectGarbageAsync(), T);
            c.agent(11).drainNow();
            c.agent(12).drainNow();
            assertThat(c.agent(11).status().stagedChunks() + c.agent(11).status().cachedChunks()).as("copies of an unlinked file").isZero();
            assertThat(c.agent(12).status().stagedChunks() + c.agent(12).status().cachedChunks()).isZero();
        }
    }
}
