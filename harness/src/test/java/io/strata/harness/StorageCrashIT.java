package io.strata.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.strata.core.TargetId;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.core.util.Crc32c;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Storage nodes as real processes, killed with SIGKILL (or halting themselves in the middle of a
 * chunk write) during a stream of writes. After the restart every chunk reads back, from every
 * replica, as the last acknowledged value or as a write whose outcome the client never learned
 * (issued after that acknowledgement), whole and with a matching CRC32C; never an older value,
 * never a torn one.
 */
class StorageCrashIT {
    static final int CHUNK = 1 << 20;
    static final int VALUE = 256 * 1024;
    static final int WRITERS = 2;
    static final int CHUNKS_PER_WRITER = 3;

    @TempDir
    Path dir;

    /** What a writer knows about one chunk: the last acknowledged value and the unknown ones after it. */
    static final class Expect {
        long acked;
        final List<Long> unknownSinceAck = new ArrayList<>();
        int ackedCount;
    }

    static final class Stream implements AutoCloseable {
        final StorageClient client;
        final List<ChunkAddress> chunks = new ArrayList<>();
        final ConcurrentHashMap<ChunkAddress, Expect> expect = new ConcurrentHashMap<>();
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicInteger acked = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();
        final List<Thread> threads = new ArrayList<>();

        Stream(StorageCluster cluster) {
            client = cluster.client("writer", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(1)));
            IoOptions io = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(3));
            for (int w = 0; w < WRITERS; w++) {
                List<ChunkAddress> mine = new ArrayList<>();
                for (int k = 0; k < CHUNKS_PER_WRITER; k++) {
                    ChunkAddress a = StorageCluster.chunk(100 + w, k, 1, CHUNK);
                    mine.add(a);
                    chunks.add(a);
                    expect.put(a, new Expect());
                }
                int writer = w;
                threads.add(Thread.ofPlatform().name("crash-writer-" + w).start(() -> {
                    long seq = 0;
                    while (!stop.get()) {
                        ChunkAddress a = mine.get((int) (seq % mine.size()));
                        long value = ((long) (writer + 1) << 40) | ++seq;
                        ByteBuf data = Registers.encode(value, VALUE);
                        Expect e = expect.get(a);
                        try {
                            Futures.join(client.writeAsync(a, 0, data, io));
                            synchronized (e) {
                                e.acked = value;
                                e.ackedCount++;
                                e.unknownSinceAck.clear();
                            }
                            acked.incrementAndGet();
                        } catch (RuntimeException ex) {
                            synchronized (e) {
                                e.unknownSinceAck.add(value);
                            }
                            failed.incrementAndGet();
                        } finally {
                            data.release();
                        }
                    }
                }));
            }
        }

        void awaitAcks(int n) throws InterruptedException {
            long deadline = System.nanoTime() + 60_000_000_000L;
            int target = acked.get() + n;
            while (acked.get() < target) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("writes did not make progress: " + acked.get() + " acked, " + failed.get() + " failed");
                }
                Thread.sleep(20);
            }
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join(30_000);
            }
        }
    }

    /** Reads every chunk from every replica and checks it against what the writers know. */
    static void verify(StorageCluster cluster, Stream s) {
        IoOptions io = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20));
        for (ChunkAddress a : s.chunks) {
            Expect e = s.expect.get(a);
            Long agreed = null;
            for (int node : cluster.members(1)) {
                TargetId t = StorageCluster.target(node, 1);
                StorageClient.ChunkRead r = Futures.join(s.client.readChunkAsync(a, 0, CHUNK, io, Optional.of(t)));
                long v;
                int crc;
                try {
                    v = Registers.decode(r.data(), VALUE);
                    crc = Crc32c.of(r.data());
                } finally {
                    r.data().release();
                }
                boolean allowed = v == e.acked || e.unknownSinceAck.contains(v);
                assertThat(allowed).as("chunk %s via node %d holds %x; last acked %x, unknown since %s", a.id(), node, v, e.acked,
                        e.unknownSinceAck).isTrue();
                if (agreed == null) {
                    agreed = v;
                } else {
                    assertThat(v).as("replicas agree on chunk %s", a.id()).isEqualTo(agreed);
                }
                ChunkStat stat = Futures.join(s.client.statAsync(a, t, Duration.ofSeconds(10)));
                if (stat.pendingVersion() == 0) {
                    assertThat(stat.crc32c()).as("replica %d's stored CRC32C of chunk %s", node, a.id()).isEqualTo(crc);
                }
            }
            assertThat(e.ackedCount).as("writes to %s were acknowledged", a.id()).isPositive();
        }
    }

    @ParameterizedTest(name = "kill -9 node {0} of the chain during writes")
    @ValueSource(ints = {1, 2})
    void killDuringAStreamOfWrites(int victim) throws Exception {
        long ts = System.nanoTime();
        try (StorageCluster cluster = StorageCluster.builder(dir, victim).nodes(3).chains(1).mode(StorageCluster.Mode.PROCESSES)
                .forwardTimeout(Duration.ofMillis(700)).start();
             Stream s = new Stream(cluster)) {
            System.out.printf("[strata] cluster start ms: %d%n", (System.nanoTime() - ts) / 1000000);
            long t0 = System.nanoTime();
            s.awaitAcks(15);
            long t1 = System.nanoTime();
            cluster.kill(victim);
            Thread.sleep(700);
            cluster.restart(victim);
            long t2 = System.nanoTime();
            s.awaitAcks(15);
            long t3 = System.nanoTime();
            s.close();
            verify(cluster, s);
            long t4 = System.nanoTime();
            System.out.printf("[strata] phases ms: writes %d, kill+restart %d, writes %d, verify %d%n", (t1 - t0) / 1000000,
                    (t2 - t1) / 1000000, (t3 - t2) / 1000000, (t4 - t3) / 1000000);
            System.out.printf("[strata] kill -9 of node %d: %d writes acknowledged, %d failed or timed out%n", victim, s.acked.get(),
                    s.failed.get());
        }
    }

    @ParameterizedTest(name = "node {0} halts in the middle of a chunk write")
    @ValueSource(ints = {3})
    void crashInTheMiddleOfAChunkWrite(int victim) throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir, 10 + victim).nodes(3).chains(1)
                .mode(StorageCluster.Mode.PROCESSES).forwardTimeout(Duration.ofMillis(700)).start()) {
            cluster.stop(victim);
            cluster.restartArmed(victim, "chunk.data-write", 8);
            try (Stream s = new Stream(cluster)) {
                assertThat(cluster.process(victim).waitFor(Duration.ofSeconds(60))).as("node %d halted at its 8th chunk write", victim)
                        .isTrue();
                assertThat(cluster.process(victim).exitValue()).isEqualTo(137);
                cluster.restart(victim);
                s.awaitAcks(10);
                s.close();
                verify(cluster, s);
            }
        }
    }
}
