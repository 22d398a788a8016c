package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.Checkpoint.Generation;
import io.strata.protocol.meta.Checkpoint.Level;
import io.strata.testing.Seeded;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checkpoint generations through the whole client, on a real cluster with two L2 agents: many
 * ranks write one generation and it is committed, restored and compared; a commit racing a late
 * writer; retention under a stream of commits while a restore reads.
 */
class CheckpointsTest {
    private static final Duration T = Duration.ofSeconds(60);

    private static byte[] bytes(long seed, int n) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** Writes {@code data} in 256 KiB pieces, the second half before the first (the checksum joins runs written out of order). */
    private static void writeShard(StrataFileSystem fs, String path, byte[] data) {
        try (StrataFile f = fs.create(path)) {
            int piece = 256 * 1024;
            List<Integer> offsets = new ArrayList<>();
            for (int off = 0; off < data.length; off += piece) {
                offsets.add(off);
            }
            List<Integer> order = new ArrayList<>(offsets.subList(offsets.size() / 2, offsets.size()));
            order.addAll(offsets.subList(0, offsets.size() / 2));
            for (int off : order) {
                f.write(off, data, off, Math.min(piece, data.length - off));
            }
        }
    }

    private static byte[] read(StrataFileSystem fs, String path) {
        return StagedFilesTest.read(fs, path);
    }

    @Seeded
    @Test
    void manyRanksWriteOneGenerationThatIsCommittedRestoredAndVerified(long seed, @TempDir Path dir) throws Exception {
        StagedFilesTest.withAgents(dir, seed, c -> {
            StrataFileSystem admin = c.client("admin");
            admin.mkdirs("/ckpt/run1");
            admin.setPolicy("/ckpt/run1", "profile=checkpoint");
            admin.mkdir("/ckpt/run1/step-100", 0755);
            int ranks = 6;
            Map<String, byte[]> shards = new ConcurrentHashMap<>();
            ExecutorService pool = Executors.newFixedThreadPool(ranks);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int r = 0; r < ranks; r++) {
                    int rank = r;
                    done.add(pool.submit(() -> {
                        StrataFileSystem fs = c.client("rank-" + rank);
                        byte[] data = bytes(seed + rank, 3 * (1 << 20) + 1000 * rank);
                        writeShard(fs, "/ckpt/run1/step-100/__" + rank + "_0.distcp", data);
                        shards.put("__" + rank + "_0.distcp", data);
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get();
                }
            } finally {
                pool.shutdownNow();
            }
            Checkpoints ck = admin.checkpoints();
            assertThat(ck.latest("/ckpt/run1")).as("nothing is committed yet").isEmpty();
            List<Checkpoint.Expected> expected = shards.entrySet().stream()
                    .map(e -> new Checkpoint.Expected(e.getKey(), e.getValue().length)).toList();
            List<Generation> seen = new ArrayList<>();
            Generation g = ck.commit("/ckpt/run1/step-100", Level.L2, expected, Checkpoints.BUSY_WAIT, T, seen::add);
            assertThat(g.files()).isEqualTo(ranks);
            assertThat(g.unchecked()).as("every rank's client computed its shard's checksum").isZero();
            assertThat(g.durability().reaches(Level.L2)).isTrue();
            assertThat(ck.latest("/ckpt/run1")).map(Generation::name).contains("step-100");

            // the manifest's checksums are the bytes' own
            for (Checkpoint.Entry e : ck.manifest("/ckpt/run1/step-100")) {
                CRC32C crc = new CRC32C();
                crc.update(shards.get(e.path()));
                assertThat(e.crc()).as(e.path()).isEqualTo(crc.getValue());
            }
            StrataFileSystem restorer = c.client("restorer");
            for (var e : shards.entrySet()) {
                assertThat(read(restorer, "/ckpt/run1/step-100/" + e.getKey())).as(e.getKey()).isEqualTo(e.getValue());
            }
            Generation durable = ck.await("/ckpt/run1/step-100", Level.L3, T, seen::add);
            assertThat(durable.l3Millis()).isGreaterThanOrEqualTo(durable.committedMillis());
            assertThat(seen.get(seen.size() - 1).durability()).isEqualTo(Checkpoint.Durability.L3);
            Checkpoints.Verified v = restorer.checkpoints().verify("/ckpt/run1/step-100", null);
            assertThat(v.problems()).isEmpty();
            assertThat(v.files()).isEqualTo(ranks);
            assertThat(v.withoutCrc()).isZero();
            Checkpoints.Staged staged = ck.stage("/ckpt/run1/step-100", null);
            assertThat(staged.stagedFiles()).isEqualTo(ranks);
            int chunks = shards.values().stream().mapToInt(b -> (b.length + (1 << 20) - 1) >> 20).sum();
            assertThat(staged.presentChunks()).as("two copies of every 1 MiB chunk are still on the agents").isEqualTo(2 * chunks);
            assertThat(staged.fetchedChunks()).isZero();
        });
    }

    @Seeded
    @Test
    void aCommitRacingALateWriterIsRefusedUntilItClosesAndTheGenerationIsThenReadOnly(long seed, @TempDir Path dir) throws Exception {
        StagedFilesTest.withAgents(dir, seed, c -> {
            StrataFileSystem trainer = c.client("trainer");
            trainer.mkdirs("/ckpt/run2/g1");
            trainer.setPolicy("/ckpt/run2", "profile=checkpoint");
            writeShard(trainer, "/ckpt/run2/g1/a", bytes(seed, 1 << 20));
            StrataFile late = trainer.create("/ckpt/run2/g1/b");
            late.write(0, bytes(seed + 1, 1000), 0, 1000);
            Checkpoints ck = c.client("coordinator").checkpoints();
            assertThatThrownBy(() -> ck.commit("/ckpt/run2/g1", Level.L2, List.of(), Duration.ofMillis(500), T, null))
                    .isInstanceOf(StrataException.class)
                    .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.FILE_BUSY))
                    .hasMessageContaining("open for writing: b");
            assertThat(ck.status("/ckpt/run2/g1").state()).isEqualTo(Checkpoint.State.WRITING);
            // the writer closes while the commit waits for it
            AtomicBoolean closed = new AtomicBoolean();
            Thread closer = new Thread(() -> {
                try {
                    Thread.sleep(700);
                    late.close();
                    closed.set(true);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            closer.start();
            Generation g = ck.commit("/ckpt/run2/g1", Level.L2, List.of(new Checkpoint.Expected("b", 1000)), Duration.ofSeconds(10), T, null);
            closer.join();
            assertThat(closed).isTrue();
            assertThat(g.files()).isEqualTo(2);
            // a write after the commit cannot change the generation
            assertThatThrownBy(() -> trainer.open("/ckpt/run2/g1/a", EnumSet.of(OpenFlag.WRITE), 0))
                    .satisfies(e -> assertThat(StrataException.wrap(e).status()).isEqualTo(Status.READ_ONLY));
            assertThatThrownBy(() -> trainer.create("/ckpt/run2/g1/c"))
                    .satisfies(e -> assertThat(StrataException.wrap(e).status()).isEqualTo(Status.READ_ONLY));
            assertThat(c.client("reader").checkpoints().verify("/ckpt/run2/g1", null).ok()).isTrue();
        });
    }

    @Seeded
    @Test
    void retentionUnderAStreamOfCommitsNeverDisturbsARestoreOfTheLatest(long seed, @TempDir Path dir) throws Exception {
        StagedFilesTest.withAgents(dir, seed, c -> {
            StrataFileSystem trainer = c.client("trainer");
            trainer.mkdirs("/ckpt/run3");
            trainer.setPolicy("/ckpt/run3", "profile=checkpoint", "checkpoint.keep-last=2");
            Map<String, byte[]> content = new ConcurrentHashMap<>();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger restores = new AtomicInteger();
            List<String> wrong = new ArrayList<>();
            StrataFileSystem restorer = c.client("restorer");
            Thread reader = new Thread(() -> {
                while (!stop.get()) {
                    var latest = restorer.checkpoints().latest("/ckpt/run3");
                    if (latest.isEmpty()) {
                        continue;
                    }
                    String gen = "/ckpt/run3/" + latest.get().name();
                    try {
                        byte[] got = read(restorer, gen + "/model");
                        if (!java.util.Arrays.equals(got, content.get(latest.get().name()))) {
                            synchronized (wrong) {
                                wrong.add(gen);
                            }
                        }
                        restores.incrementAndGet();
                    } catch (StrataException e) {
                        if (e.status() != Status.NOT_FOUND) { // latest moved on and the old one was removed before the open
                            synchronized (wrong) {
                                wrong.add(gen + ": " + e);
                            }
                        }
                    }
                }
            });
            reader.start();
            try {
                for (int i = 1; i <= 6; i++) {
                    String name = "g" + i;
                    trainer.mkdir("/ckpt/run3/" + name, 0755);
                    byte[] data = bytes(seed + i, (1 << 20) + i);
                    writeShard(trainer, "/ckpt/run3/" + name + "/model", data);
                    content.put(name, data);
                    trainer.checkpoints().commit("/ckpt/run3/" + name, Level.L3, List.of(), Checkpoints.BUSY_WAIT, T, null);
                    Futures.join(c.cluster.meta().meta().keepCheckpointsAsync(), T);
                }
            } finally {
                stop.set(true);
                reader.join();
            }
            assertThat(wrong).isEmpty();
            assertThat(restores.get()).isPositive();
            Futures.join(c.cluster.meta().meta().keepCheckpointsAsync(), T);
            assertThat(trainer.checkpoints().list("/ckpt/run3")).extracting(Generation::name).containsExactly("g5", "g6");
            assertThat(trainer.list("/ckpt/run3")).extracting(io.strata.protocol.meta.DirEntry::name).containsExactlyInAnyOrder("g5", "g6");
        });
    }

    @Seeded
    @Test
    void stagingFetchesCopiesTheAgentsEvictedBackFromL3(long seed, @TempDir Path dir) throws Exception {
        StagedFilesTest.withAgents(dir, seed, io.strata.core.DataSize.ofMiB(6), c -> {
            StrataFileSystem trainer = c.client("trainer");
            trainer.mkdirs("/ckpt/run4/old");
            trainer.setPolicy("/ckpt/run4", "profile=checkpoint", "checkpoint.keep-last=5");
            byte[] old = bytes(seed, 4 << 20);
            writeShard(trainer, "/ckpt/run4/old/model", old);
            Checkpoints ck = trainer.checkpoints();
            ck.commit("/ckpt/run4/old", Level.L3, List.of(), Checkpoints.BUSY_WAIT, T, null);
            // a newer generation fills the agents: the old one's drained copies are evicted for it
            trainer.mkdir("/ckpt/run4/new", 0755);
            writeShard(trainer, "/ckpt/run4/new/model", bytes(seed + 1, 5 << 20));
            ck.commit("/ckpt/run4/new", Level.L3, List.of(), Checkpoints.BUSY_WAIT, T, null);
            Checkpoints.Staged s = ck.stage("/ckpt/run4/old", null);
            assertThat(s.fetchedChunks()).as("evicted copies fetched back from L3").isPositive();
            assertThat(s.presentChunks() + s.fetchedChunks()).isEqualTo(2 * 4);
            assertThat(s.fetchedBytes()).isEqualTo((long) s.fetchedChunks() << 20);
            assertThat(read(c.client("restorer"), "/ckpt/run4/old/model")).isEqualTo(old);
            assertThat(c.client("checker").checkpoints().verify("/ckpt/run4/old", null).ok()).isTrue();
        });
    }

    @Test
    void theContentChecksumJoinsRunsWrittenInAnyOrderAndForgetsOverwrites() {
        byte[] data = bytes(7, 10_000);
        CRC32C whole = new CRC32C();
        whole.update(data);
        ContentCrc c = new ContentCrc(0);
        c.wrote(6000, Unpooled.wrappedBuffer(data, 6000, 4000));
        c.wrote(0, Unpooled.wrappedBuffer(data, 0, 2000));
        assertThat(c.crc()).as("a hole is left").isEqualTo(Checkpoint.NO_CRC);
        c.wrote(2000, Unpooled.wrappedBuffer(data, 2000, 4000));
        assertThat(c.crc()).isEqualTo(whole.getValue());
        assertThat(c.length()).isEqualTo(10_000);
        c.wrote(100, Unpooled.wrappedBuffer(data, 100, 10));
        assertThat(c.crc()).as("an overwrite").isEqualTo(Checkpoint.NO_CRC);
        ContentCrc onExisting = new ContentCrc(5);
        onExisting.wrote(5, Unpooled.wrappedBuffer(data));
        assertThat(onExisting.crc()).as("opened on a file that had bytes").isEqualTo(Checkpoint.NO_CRC);
    }
}
