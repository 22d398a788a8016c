package io.strata.harness;

import io.strata.testing.Slow;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.strata.core.DataSize;
import io.strata.core.TargetId;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.core.util.Crc32c;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.testing.Seeded;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Chaos with real storage processes and a real cluster manager: writers keep writing checksummed
 * values and a reader keeps reading them while storage nodes are killed with SIGKILL and
 * restarted on a schedule drawn from the test's seed (sometimes before the manager noticed, and
 * often while a resync of an earlier victim is still running, so syncs get interrupted by the
 * target's or the predecessor's death). Throughout, no read goes back in time (a value older
 * than one already acknowledged) or returns a torn value. At the end every chunk reads back, from
 * every serving replica, as its last acknowledged value (or a later write whose outcome its
 * writer never learned), with a matching CRC32C, and all replicas of each chain hold identical
 * chunks. A failure prints the seed ({@code -Dstrata.seed=N} replays the schedule).
 */
@Slow
class StorageChaosIT {
    static final int CHUNK = 256 * 1024;
    static final int VALUE = 96 * 1024;
    static final int WRITERS = 2;
    static final int CHUNKS_PER_WRITER = 40;
    static final Duration CHAOS = Duration.ofSeconds(40);

    @TempDir
    Path dir;

    /** What the writers know about one chunk. */
    static final class Expect {
        volatile long acked;
        final List<Long> unknownSinceAck = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger ackedCount = new AtomicInteger();
    }

    /** How the resync sessions in the node logs ended: started, done, cancelled, failed. */
    static Map<String, Integer> resyncs(StorageCluster cluster) {
        Map<String, Integer> out = new java.util.TreeMap<>();
        for (int i = 1; i <= cluster.nodeCount(); i++) {
            try {
                for (String line : java.nio.file.Files.readAllLines(cluster.nodeDir(i).resolve("storage.log"))) {
                    if (line.contains("ResyncWorker")) {
                        String k = line.contains(" starts") ? "started" : line.contains(" done in ") ? "done"
                                : line.contains(" cancelled") ? "cancelled" : line.contains(" failed") ? "failed" : null;
                        if (k != null) {
                            out.merge(k, 1, Integer::sum);
                        }
                    }
                }
            } catch (java.io.IOException e) {
                out.put("unreadable log", 1);
            }
        }
        return out;
    }

    @Seeded
    @Test
    void storageProcessesKilledAndRestartedWhileClientsWriteAndRead(long seed) throws Exception {
        Random rnd = new Random(seed);
        try (StorageCluster cluster = StorageCluster.builder(dir, seed).nodes(3).chains(2).mode(StorageCluster.Mode.PROCESSES)
                .managed(Duration.ofSeconds(3)).forwardTimeout(Duration.ofMillis(800)).resyncBandwidth(DataSize.ofMiB(4)).start()) {
            StorageClient client = cluster.client("chaos", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(1)));
            Map<ChunkAddress, Expect> expect = new ConcurrentHashMap<>();
            List<ChunkAddress> all = new ArrayList<>();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger acked = new AtomicInteger();
            AtomicInteger failedWrites = new AtomicInteger();
            AtomicInteger reads = new AtomicInteger();
            List<String> violations = Collections.synchronizedList(new ArrayList<>());
            List<Thread> threads = new ArrayList<>();
            IoOptions io = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(8));
            for (int w = 0; w < WRITERS; w++) {
                List<ChunkAddress> mine = new ArrayList<>();
                for (int k = 0; k < CHUNKS_PER_WRITER; k++) {
                    ChunkAddress a = StorageCluster.chunk(100 + w, k, 1 + k % 2, CHUNK);
                    mine.add(a);
                    all.add(a);
                    expect.put(a, new Expect());
                }
                int writer = w;
                threads.add(Thread.ofPlatform().name("chaos-writer-" + w).start(() -> {
                    long seq = 0;
                    while (!stop.get()) {
                        ChunkAddress a = mine.get((int) (seq % mine.size()));
                        long value = ((long) (writer + 1) << 40) | ++seq;
                        Expect e = expect.get(a);
                        ByteBuf data = Registers.encode(value, VALUE);
                        try {
                            Futures.join(client.writeAsync(a, 0, data, io), Duration.ofSeconds(20));
                            e.unknownSinceAck.clear();
                            e.acked = value;
                            e.ackedCount.incrementAndGet();
                            acked.incrementAndGet();
                        } catch (RuntimeException ex) {
                            e.unknownSinceAck.add(value);
                            failedWrites.incrementAndGet();
                        } finally {
                            data.release();
                        }
                    }
                }));
            }
            threads.add(Thread.ofPlatform().name("chaos-reader").start(() -> {
                Random r = new Random(seed ^ 0x5EED);
                while (!stop.get()) {
                    ChunkAddress a = all.get(r.nextInt(all.size()));
                    long floor = expect.get(a).acked; // acknowledged before this read began: it must not read older
                    try {
                        StorageClient.ChunkRead got = Futures.join(client.readChunkAsync(a, 0, CHUNK, io, Optional.empty()),
                                Duration.ofSeconds(20));
                        long v;
                        try {
                            v = Registers.decode(got.data(), VALUE);
                        } catch (AssertionError torn) {
                            violations.add(a.id() + ": " + torn.getMessage());
                            continue;
                        } finally {
                            got.data().release();
                        }
                        if ((v & 0xFFFFFFFFFFL) < (floor & 0xFFFFFFFFFFL)) {
                            violations.add(a.id() + ": read " + Long.toHexString(v) + " after " + Long.toHexString(floor)
                                    + " was acknowledged");
                        }
                        reads.incrementAndGet();
                    } catch (RuntimeException ex) {
                        // a read may time out while a chain reconfigures; it must never return a wrong value
                    }
                }
            }));
            // the schedule: one victim at a time, killed at a random moment, restarted after a random pause
            List<String> schedule = new ArrayList<>();
            long end = System.nanoTime() + CHAOS.toNanos();
            try {
                int previous = 0;
                while (System.nanoTime() < end) {
                    // half the time strike again while the last victim is being resynced: the victim itself
                    // (the syncing target) or any node (often its predecessor)
                    boolean midSync = previous > 0 && rnd.nextBoolean();
                    Thread.sleep(midSync ? 100 + rnd.nextInt(400) : 300 + rnd.nextInt(2500));
                    int victim = midSync && rnd.nextBoolean() ? previous : 1 + rnd.nextInt(3);
                    long down = rnd.nextInt(4500);
                    cluster.kill(victim);
                    Thread.sleep(down);
                    cluster.restart(victim);
                    schedule.add((midSync ? "during the resync: " : "") + "kill -9 node " + victim + ", restart after " + down + " ms");
                    previous = victim;
                    if (rnd.nextInt(4) == 0) {
                        cluster.awaitServing(Duration.ofSeconds(60)); // sometimes let every resync finish first
                        schedule.add("all serving");
                        previous = 0;
                    }
                }
                RoutingInfo r = cluster.awaitServing(Duration.ofSeconds(90));
                int before = acked.get();
                long t0 = System.nanoTime();
                while (acked.get() < before + 10 && System.nanoTime() - t0 < 30_000_000_000L) {
                    Thread.sleep(20);
                }
                stop.set(true);
                for (Thread t : threads) {
                    t.join(30_000);
                }
                System.out.printf("[strata] chaos (seed %d): %s; %d writes acknowledged, %d failed or timed out, %d reads; resync"
                                + " sessions: %s%n", seed, schedule, acked.get(), failedWrites.get(), reads.get(), resyncs(cluster));
                assertThat(violations).as("reads that went back in time or were torn").isEmpty();
                assertThat(acked.get()).isGreaterThan(50);
                // every chunk, every replica: the last acknowledged value (or a later unknown one), with its checksum
                r = cluster.awaitServing(Duration.ofSeconds(60));
                IoOptions slow = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(30));
                for (ChunkAddress a : all) {
                    Expect e = expect.get(a);
                    assertThat(e.ackedCount.get()).as("writes to %s were acknowledged", a.id()).isPositive();
                    Long agreed = null;
                    for (TargetId t : r.chain(a.chain()).targets()) {
                        StorageClient.ChunkRead got = Futures.join(client.readChunkAsync(a, 0, CHUNK, slow, Optional.of(t)),
                                Duration.ofSeconds(40));
                        long v;
                        int crc;
                        try {
                            v = Registers.decode(got.data(), VALUE);
                            crc = Crc32c.of(got.data());
                        } finally {
                            got.data().release();
                        }
                        assertThat(v == e.acked || e.unknownSinceAck.contains(v)).as("%s on %s holds %x; last acknowledged %x, unknown since %s",
                                a.id(), t, v, e.acked, e.unknownSinceAck).isTrue();
                        assertThat(crc).as("%s on %s: stored CRC32C", a.id(), t)
                                .isEqualTo(Futures.join(client.statAsync(a, t, Duration.ofSeconds(10))).crc32c());
                        if (agreed == null) {
                            agreed = v;
                        }
                        assertThat(v).as("replicas of %s agree", a.id()).isEqualTo(agreed);
                    }
                }
                assertThat(Replicas.assertIdentical(client, r)).isEqualTo(all.size());
            } finally {
                stop.set(true);
                for (Thread t : threads) {
                    t.join(30_000);
                }
            }
        }
    }
}
