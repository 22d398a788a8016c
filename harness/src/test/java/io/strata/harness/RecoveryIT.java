package io.strata.harness;

import io.strata.testing.Slow;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChainId;
import io.strata.core.TargetId;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.storage.ResyncProgress;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.core.util.Crc32c;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.core.util.Eventually;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Recovery at scale: a storage node is stopped, its chain takes 1 GiB of writes without it (new
 * chunks and overwrites), the node returns, and its target is resynced while clients keep writing
 * and reading. It serves again holding exactly what its chain peers hold: the same chunks, each
 * with the same version, request memory and CRC32C, and every chunk read back from it matches the
 * checksum of its last acknowledged write. Prints the resync time and client throughput before and
 * during the resync (what {@code strata bench recovery} measures with processes).
 */
@Slow
class RecoveryIT {
    static final int CHUNK = 4 << 20;
    static final long MISSED = 1L << 30;
    static final Duration LEASE = Duration.ofSeconds(2);
    static final Duration T = Duration.ofSeconds(120);
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(60));

    @TempDir
    Path dir;

    /**
     * Every value written to one chunk: sequence -> CRC32C, and when each write was invoked and
     * acknowledged. Two writers may write one chunk at once, so sequence numbers give the order
     * writes were issued in, not the order they took effect: a read may return #273 after #274
     * was acknowledged if #273 was still in flight then. What a read may not return is a value
     * that a later write had overwritten before the read began.
     */
    static final class History {
        final Map<Long, Integer> crcBySeq = new ConcurrentHashMap<>();
        final Map<Integer, Long> seqByCrc = new ConcurrentHashMap<>();
        /** seq -> {invoked, acknowledged (Long.MAX_VALUE while in flight or failed)}, System.nanoTime. */
        final Map<Long, long[]> times = new ConcurrentHashMap<>();

        /**
         * Why returning write {@code s} to a read that began at {@code readStart} is not
         * linearizable (null when it is): some write invoked after {@code s} was acknowledged was
         * itself acknowledged before the read began, so {@code s} had been overwritten.
         */
        String stale(Long s, long readStart) {
            if (s == null) {
                return "read a value never written";
            }
            long sAcked = times.get(s)[1];
            for (Map.Entry<Long, long[]> e : times.entrySet()) {
                long[] x = e.getValue();
                if (x[0] > sAcked && x[1] < readStart) {
                    return "read #" + s + " though #" + e.getKey() + ", written after it was acknowledged, was acknowledged before the read";
                }
            }
            return null;
        }
    }

    static final class Load {
        final Map<ChunkAddress, History> chunks = new ConcurrentHashMap<>();
        final List<ChunkAddress> written = new CopyOnWriteArrayList<>();
        final AtomicLong bytesAcked = new AtomicLong();
        final AtomicLong seq = new AtomicLong();
        final AtomicInteger reads = new AtomicInteger();
        final List<String> violations = new CopyOnWriteArrayList<>();
    }

    /** Writes {@code seq}'s content (random bytes from the sequence number) whole to {@code a}; records it. */
    static void write(StorageClient c, Load load, ChunkAddress a) {
        long s = load.seq.incrementAndGet();
        byte[] b = new byte[CHUNK];
        new SplittableRandom(s).nextBytes(b);
        ByteBuf buf = Unpooled.wrappedBuffer(b);
        int crc = Crc32c.of(buf);
        History h = load.chunks.computeIfAbsent(a, k -> new History());
        h.crcBySeq.put(s, crc);
        h.seqByCrc.put(crc, s);
        long invoked = System.nanoTime();
        h.times.put(s, new long[] {invoked, Long.MAX_VALUE});
        try {
            Futures.join(c.writeAsync(a, 0, buf, IO), T);
        } finally {
            buf.release();
        }
        h.times.put(s, new long[] {invoked, System.nanoTime()});
        if (!load.written.contains(a)) {
            load.written.add(a);
        }
        load.bytesAcked.addAndGet(CHUNK);
    }

    /** Reads a random written chunk; its CRC32C must be a value a linearizable register could return ({@link History#stale}). */
    static void read(StorageClient c, Load load, Random r) {
        List<ChunkAddress> w = load.written;
        ChunkAddress a = w.get(r.nextInt(w.size()));
        History h = load.chunks.get(a);
        long readStart = System.nanoTime();
        StorageClient.ChunkRead got = Futures.join(c.readChunkAsync(a, 0, CHUNK, IO, Optional.empty()), T);
        int crc;
        try {
            crc = Crc32c.of(got.data());
        } finally {
            got.data().release();
        }
        String why = h.stale(h.seqByCrc.get(crc), readStart);
        if (why != null) {
            load.violations.add(a.id() + ": " + why);
        }
        load.reads.incrementAndGet();
    }

    @Test
    void aTargetThatMissedOneGibResyncsWhileClientsKeepWritingAndReading() throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir, 41).nodes(3).chains(1).managed(LEASE).start()) {
            RoutingInfo r0 = cluster.awaitServing(T);
            ChainId chain = ChainId.of(1);
            TargetId victimT = r0.chain(chain).targets().get(2);
            int victim = StorageCluster.nodeOf(victimT);
            StorageClient c = cluster.client("load", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(10)));
            Load load = new Load();
            for (int i = 0; i < 16; i++) {
                write(c, load, StorageCluster.chunk(7, i, 1, CHUNK));
            }
            cluster.kill(victim);
            Eventually.await("the stopped node's target offline", T,
                    () -> cluster.managerRouting().target(victimT).state() == TargetState.OFFLINE);
            // 1 GiB the stopped target misses: new chunks and overwrites of old ones, two writers
            long t0 = System.nanoTime();
            long before = load.bytesAcked.get();
            AtomicInteger next = new AtomicInteger(16);
            List<Thread> writers = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                writers.add(Thread.ofPlatform().start(() -> {
                    while (true) {
                        int i = next.getAndIncrement();
                        if ((long) (i - 16) * CHUNK >= MISSED) {
                            return;
                        }
                        int index = i % 17 == 0 ? i % 16 : i; // every 17th write overwrites an old chunk
                        write(c, load, StorageCluster.chunk(7, index, 1, CHUNK));
                    }
                }));
            }
            for (Thread t : writers) {
                t.join();
            }
            double beforeMbps = (load.bytesAcked.get() - before) / ((System.nanoTime() - t0) / 1e9) / 1e6;
            // the node returns; clients keep writing and reading during its resync
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> load2 = new ArrayList<>();
            AtomicLong duringBytes = new AtomicLong();
            AtomicInteger duringReads = new AtomicInteger();
            AtomicBoolean syncing = new AtomicBoolean();
            for (int w = 0; w < 2; w++) {
                Random r = new Random(w);
                load2.add(Thread.ofPlatform().start(() -> {
                    while (!stop.get()) {
                        int index = r.nextInt(3) == 0 ? 300 + r.nextInt(40) : r.nextInt(load.written.size());
                        boolean during = syncing.get();
                        write(c, load, StorageCluster.chunk(7, index, 1, CHUNK));
                        if (during && syncing.get()) {
                            duringBytes.addAndGet(CHUNK);
                        }
                    }
                }));
            }
            load2.add(Thread.ofPlatform().start(() -> {
                Random r = new Random(2);
                while (!stop.get()) {
                    read(c, load, r);
                    if (syncing.get()) {
                        duringReads.incrementAndGet();
                    }
                }
            }));
            long restartAt = System.nanoTime();
            syncing.set(true);
            cluster.restart(victim);
            Eventually.await("the returning target serving", T, () -> cluster.managerRouting().target(victimT).state() == TargetState.SERVING);
            syncing.set(false);
            long servingAt = System.nanoTime();
            double resyncS = (servingAt - restartAt) / 1e9;
            double duringMbps = duringBytes.get() / resyncS / 1e6;
            stop.set(true);
            for (Thread t : load2) {
                t.join(60_000);
            }
            ResyncProgress p = null;
            for (int n = 1; n <= 3; n++) {
                if (n != victim && cluster.node(n).resyncs().get(chain) != null) {
                    p = cluster.node(n).resyncs().get(chain);
                }
            }
            System.out.printf("[strata] recovery: %d chunks (%.2f GiB) written while the target was away at %.0f MB/s;"
                            + " resync to serving %.1f s (%s), clients wrote %.0f MB/s and read %d chunks meanwhile%n",
                    load.written.size(), (load.bytesAcked.get() - before) / (double) (1L << 30), beforeMbps, resyncS, p, duringMbps,
                    duringReads.get());
            assertThat(load.violations).as("reads that went back in time").isEmpty();
            assertThat(duringBytes.get()).as("writes acknowledged during the resync").isPositive();
            assertThat(duringReads.get()).as("reads served during the resync").isPositive();
            assertThat(p).isNotNull();
            assertThat(p.bytes()).as("the resync copied what the target missed").isGreaterThanOrEqualTo(MISSED / 2);
            // identical to its peers, and every chunk on it holds a value no later write overwrote
            RoutingInfo r = cluster.awaitServing(T);
            StorageClient check = cluster.client("check");
            assertThat(Replicas.assertIdentical(check, r)).isEqualTo(load.written.size());
            for (ChunkAddress a : load.written) {
                History h = load.chunks.get(a);
                StorageClient.ChunkRead got = Futures.join(check.readChunkAsync(a, 0, CHUNK, IO, Optional.of(victimT)), T);
                try {
                    assertThat(h.stale(h.seqByCrc.get(Crc32c.of(got.data())), System.nanoTime())).as("%s on the resynced target", a.id())
                            .isNull();
                } finally {
                    got.data().release();
                }
            }
        }
    }
}
