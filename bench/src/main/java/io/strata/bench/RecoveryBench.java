package io.strata.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChainId;
import io.strata.harness.StorageCluster;
import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.TargetId;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l3.ReadPolicy;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.storage.StorageNodeMain;
import io.strata.core.util.Crc32c;
import io.strata.protocol.storage.ChunkSummary;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * {@code strata bench recovery}: what losing and recovering a storage node costs. A local
 * cluster of a cluster manager (one Ratis peer, in this JVM) and three storage nodes as real
 * processes ({@link StorageNodeMain}) with one 3-replica chain; a client in this JVM writes
 * checksummed chunks (each value's CRC32C is remembered) and reads them back throughout:
 *
 * <ol>
 * <li><b>before</b>: the client load on the healthy chain for {@code --before} (the baseline);</li>
 * <li><b>degraded</b>: one node is killed with SIGKILL and the client keeps writing until
 * {@code --missed} (1 GiB) more has been acknowledged without it (new chunks);</li>
 * <li><b>resync</b>: the node is restarted; the time from the restart until its target serves
 * again is the recovery time (process start, registration, waiting, the resync itself), under
 * the same client load (now also overwriting old chunks);</li>
 * <li><b>verification</b>: every chunk ever written is read from every replica and checked
 * against the CRC32C of its last acknowledged write, and the replicas' chunk lists compared.</li>
 * </ol>
 *
 * Client throughput before and during the resync are printed side by side (the baseline is the
 * same load on the healthy cluster, measured in the same run). The last line is
 * {@code result: resync_s=<n> client_mbps_during=<n> client_mbps_before=<n> lost=<count>}; lost
 * counts acknowledged writes that did not read back with their checksum from some replica, and
 * must be 0.
 *
 * <p>Run {@code strata bench recovery [--missed 1GiB] [--chunk 4MiB] [--writers 2]
 * [--resync-bandwidth 256MiB] [--lease 3s] [--before 10s] [--dir DIR]}.
 */
public final class RecoveryBench {
    /**
     * @param dir             where the cluster's data goes (a new temporary directory inside, deleted after)
     * @param chunk           chunk size (every write is a whole chunk)
     * @param missed          bytes written while the node is down
     * @param writers         concurrent writer streams (one reader stream runs beside them)
     * @param resyncBandwidth the storage nodes' {@code resync-bandwidth}
     * @param lease           the cluster manager's lease
     * @param before          how long the baseline load runs
     */
    public record Options(Path dir, DataSize chunk, DataSize missed, int writers, DataSize resyncBandwidth, Duration lease,
                          Duration before) {
        public static Options defaults() {
            return new Options(Path.of(System.getProperty("java.io.tmpdir")), DataSize.ofMiB(4), DataSize.ofGiB(1), 2,
                    io.strata.storage.StorageConfig.DEFAULT_RESYNC_BANDWIDTH, Duration.ofSeconds(3), Duration.ofSeconds(10));
        }
    }

    private static final ChainId CHAIN = ChainId.of(1);
    private static final int NODES = 3;
    private static final Duration T = Duration.ofSeconds(180);

    private RecoveryBench() {
    }

    public static Map<String, String> run(Options o, PrintStream out) throws Exception {
        Path root = Files.createTempDirectory(o.dir(), "strata-bench-recovery-");
        out.printf(Locale.ROOT, "strata bench recovery: cluster manager (in this JVM) + %d storage node processes, one %d-replica chain,"
                        + " %s chunks, %d writer streams + 1 reader, %s missed, resync-bandwidth %s/s, lease %s, data in %s, cores=%d%n",
                NODES, NODES, o.chunk(), o.writers(), o.missed(), o.resyncBandwidth(), o.lease(), root,
                Runtime.getRuntime().availableProcessors());
        try (Cluster c = new Cluster(root, o, out)) {
            return c.run();
        } finally {
            deleteTree(root);
        }
    }

    /** Every value written to one chunk (sequence -> CRC32C), the last acknowledged one, and those whose outcome is unknown. */
    static final class History {
        final Map<Long, Integer> crcBySeq = new ConcurrentHashMap<>();
        final Map<Integer, Long> seqByCrc = new ConcurrentHashMap<>();
        final List<Long> unknown = new CopyOnWriteArrayList<>();
        volatile long acked = -1;
    }

    /** The cluster, the client and the load. */
    static final class Cluster implements AutoCloseable {
        final Path root;
        final Options o;
        final PrintStream out;
        final StorageCluster storage;
        final StorageClient client;
        final Map<ChunkAddress, History> chunks = new ConcurrentHashMap<>();
        final List<ChunkAddress> written = new CopyOnWriteArrayList<>();
        final AtomicLong seq = new AtomicLong();
        final AtomicInteger nextIndex = new AtomicInteger();
        final AtomicLong writtenBytes = new AtomicLong();
        final AtomicLong readBytes = new AtomicLong();
        final AtomicLong failedWrites = new AtomicLong();
        final AtomicLong staleReads = new AtomicLong();
        final AtomicBoolean stop = new AtomicBoolean();
        volatile boolean overwrite;
        final List<Thread> threads = new ArrayList<>();

        Cluster(Path root, Options o, PrintStream out) throws IOException {
            this.root = root;
            this.o = o;
            this.out = out;
            // a cluster manager in this JVM, NODES storage processes of one target each, one chain of all of them
            storage = StorageCluster.builder(root, 1).nodes(NODES).chains(1).replicas(NODES).mode(StorageCluster.Mode.PROCESSES)
                    .managed(o.lease()).resyncBandwidth(o.resyncBandwidth()).jvmArgs(List.of("-Xmx512m", "-XX:+ExitOnOutOfMemoryError"))
                    .start();
            client = storage.client("bench-client",
                    StorageClientOptions.DEFAULTS.withReadPolicy(ReadPolicy.RANDOM).withAttemptTimeout(Duration.ofSeconds(10)));
        }

        Map<String, String> run() throws Exception {
            await("the client's routing", () -> allServing(client.routing().current()));
            ChainInfo chain = storage.managerRouting().chain(CHAIN);
            TargetId victimT = chain.targets().get(chain.targets().size() - 1);
            int victim = StorageCluster.nodeOf(victimT);
            Table t = new Table("phase", "seconds", "client write MB/s", "client read MB/s", "what happened");

            // 1. the baseline: the healthy chain under the client load
            startLoad();
            Window warm = Window.start(this);
            Thread.sleep(2000);
            warm.end();
            Window before = Window.start(this);
            Thread.sleep(o.before().toMillis());
            before.end();
            t.row("before (3 replicas)", fmt(before.seconds(), 1), mb(before.writeRate()), mb(before.readRate()),
                    "baseline, after " + fmt(warm.seconds(), 0) + " s warm-up");

            // 2. kill -9 one node; keep writing until the missed bytes are acknowledged without it
            storage.kill(victim);
            long killedAt = System.nanoTime();
            Window degraded = Window.start(this);
            long target = writtenBytes.get() + o.missed().bytes();
            long[] noticed = {0};
            await("the missed bytes written", () -> {
                if (noticed[0] == 0 && storage.managerRouting().target(victimT).state() != TargetState.SERVING) {
                    noticed[0] = System.nanoTime();
                }
                return writtenBytes.get() >= target;
            });
            degraded.end();
            t.row("node " + victim + " killed (2 replicas)", fmt(degraded.seconds(), 1), mb(degraded.writeRate()),
                    mb(degraded.readRate()), String.format(Locale.ROOT, "kill -9; manager noticed after %.1f s; %s written",
                            (noticed[0] - killedAt) / 1e9, DataSize.ofBytes(degraded.written())));

            // 3. restart it; the load goes on (now also overwriting old chunks) until its target serves again
            overwrite = true;
            Window resync = Window.start(this);
            long restartAt = System.nanoTime();
            storage.restartAsync(victim);
            long[] marks = new long[3]; // registered, syncing, serving
            await("the restarted target serving", () -> {
                long now = System.nanoTime();
                if (marks[0] == 0 && Files.exists(storage.nodeDir(victim).resolve("ready.properties"))) {
                    marks[0] = now;
                }
                TargetState s = storage.managerRouting().target(victimT).state();
                if (marks[1] == 0 && s == TargetState.SYNCING) {
                    marks[1] = now;
                }
                if (s == TargetState.SERVING && marks[0] != 0) {
                    marks[2] = now;
                    return true;
                }
                return false;
            });
            resync.end();
            double resyncS = (marks[2] - restartAt) / 1e9;
            long syncFrom = marks[1] == 0 ? marks[2] : marks[1];
            t.row("resync (restart -> serving)", fmt(resyncS, 1), mb(resync.writeRate()), mb(resync.readRate()),
                    String.format(Locale.ROOT, "process up and registered at %.1f s, syncing from %.1f s, serving at %.1f s",
                            (marks[0] - restartAt) / 1e9, (syncFrom - restartAt) / 1e9, resyncS));
            stopLoad();

            // 4. read everything back from every replica
            long v0 = System.nanoTime();
            Verification v = verify();
            double vs = (System.nanoTime() - v0) / 1e9;
            t.row("verification read", fmt(vs, 1), "", mb(v.bytes / vs), v.chunks + " chunks x " + NODES + " replicas, " + v.lost
                    + " lost, replica lists " + (v.identical ? "identical" : "DIFFER"));
            t.print(out);
            out.printf(Locale.ROOT, "writes whose outcome the client never learned: %d; reads that went back in time: %d%n",
                    failedWrites.get(), staleReads.get());
            Map<String, String> result = new LinkedHashMap<>();
            result.put("resync_s", fmt(resyncS, 1));
            result.put("client_mbps_during", mb(resync.writeRate()));
            result.put("client_mbps_before", mb(before.writeRate()));
            result.put("lost", String.valueOf(v.lost));
            result.put("stale_reads", String.valueOf(staleReads.get()));
            result.put("replicas_identical", String.valueOf(v.identical));
            result.put("missed_gib", fmt(degraded.written() / (double) (1L << 30), 2));
            result.put("read_mbps_during", mb(resync.readRate()));
            result.put("read_mbps_before", mb(before.readRate()));
            StringBuilder line = new StringBuilder("result:");
            result.forEach((k, x) -> line.append(' ').append(k).append('=').append(x));
            out.println(line);
            return result;
        }

        // ---- load ----

        void startLoad() {
            for (int w = 0; w < o.writers(); w++) {
                Random r = new Random(w);
                threads.add(Thread.ofPlatform().name("bench-writer-" + w).start(() -> {
                    while (!stop.get()) {
                        ChunkAddress a;
                        if (overwrite && r.nextInt(2) == 0 && !written.isEmpty()) {
                            a = written.get(r.nextInt(written.size()));
                        } else {
                            a = new ChunkAddress(ChunkId.of(77, nextIndex.getAndIncrement()), CHAIN, o.chunk().toIntExact());
                        }
                        write(a);
                    }
                }));
            }
            threads.add(Thread.ofPlatform().name("bench-reader").start(() -> {
                Random r = new Random(99);
                while (!stop.get()) {
                    if (written.isEmpty()) {
                        sleep(10);
                        continue;
                    }
                    read(written.get(r.nextInt(written.size())));
                }
            }));
        }

        void stopLoad() throws InterruptedException {
            stop.set(true);
            for (Thread th : threads) {
                th.join(120_000);
            }
        }

        void write(ChunkAddress a) {
            long s = seq.incrementAndGet();
            byte[] b = new byte[o.chunk().toIntExact()];
            new SplittableRandom(s).nextBytes(b);
            ByteBuf buf = Unpooled.wrappedBuffer(b);
            int crc = Crc32c.of(buf);
            History h = chunks.computeIfAbsent(a, k -> new History());
            h.crcBySeq.put(s, crc);
            h.seqByCrc.put(crc, s);
            try {
                Futures.join(client.writeAsync(a, 0, buf, IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(60))), Duration.ofSeconds(70));
                synchronized (h) {
                    if (s > h.acked) {
                        h.acked = s;
                    }
                    h.unknown.removeIf(x -> x < s);
                }
                if (!written.contains(a)) {
                    written.add(a);
                }
                writtenBytes.addAndGet(b.length);
            } catch (RuntimeException e) {
                h.unknown.add(s);
                failedWrites.incrementAndGet();
            } finally {
                buf.release();
            }
        }

        void read(ChunkAddress a) {
            History h = chunks.get(a);
            long floor = h.acked;
            try {
                StorageClient.ChunkRead got = Futures.join(client.readChunkAsync(a, 0, o.chunk().toIntExact(),
                        IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(30)), Optional.empty()), Duration.ofSeconds(40));
                try {
                    Long s = h.seqByCrc.get(Crc32c.of(got.data()));
                    if (s == null || s < floor) {
                        staleReads.incrementAndGet();
                    }
                    readBytes.addAndGet(got.data().readableBytes());
                } finally {
                    got.data().release();
                }
            } catch (RuntimeException e) {
                // a read may time out while the chain reconfigures; wrong data is what counts
            }
        }

        record Verification(int chunks, long bytes, int lost, boolean identical) {
        }

        Verification verify() {
            RoutingInfo r = storage.managerRouting();
            int lost = 0;
            long bytes = 0;
            IoOptions io = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(60));
            for (ChunkAddress a : written) {
                History h = chunks.get(a);
                for (TargetId t : r.chain(CHAIN).targets()) {
                    boolean ok;
                    try {
                        StorageClient.ChunkRead got = Futures.join(client.readChunkAsync(a, 0, o.chunk().toIntExact(), io, Optional.of(t)), T);
                        try {
                            bytes += got.data().readableBytes();
                            Long s = h.seqByCrc.get(Crc32c.of(got.data()));
                            ok = s != null && (s == h.acked || (s > h.acked && h.unknown.contains(s)));
                        } finally {
                            got.data().release();
                        }
                    } catch (RuntimeException e) {
                        ok = false;
                    }
                    if (!ok) {
                        lost++;
                        out.println("LOST: chunk " + a.id() + " on " + t + " does not hold its last acknowledged write");
                    }
                }
            }
            boolean identical = true;
            List<ChunkSummary> first = null;
            for (TargetId t : r.chain(CHAIN).targets()) {
                List<ChunkSummary> l = Futures.join(client.listChunksAsync(CHAIN, t, Duration.ofSeconds(30)), T);
                if (first == null) {
                    first = l;
                } else if (l.size() != first.size()) {
                    identical = false;
                } else {
                    for (int i = 0; i < l.size(); i++) {
                        identical &= l.get(i).sameAs(first.get(i));
                    }
                }
            }
            return new Verification(written.size(), bytes, lost, identical);
        }

        // ---- processes ----

        static boolean allServing(RoutingInfo r) {
            ChainInfo c = r.chains().get(CHAIN);
            return c != null && c.targets().stream().allMatch(t -> r.target(t).state() == TargetState.SERVING);
        }

        @Override
        public void close() {
            stop.set(true);
            storage.close();
        }
    }

    /** Client bytes written and read over a stretch of time. */
    static final class Window {
        final Cluster c;
        final long t0;
        final long w0;
        final long r0;
        long t1;
        long w1;
        long r1;

        private Window(Cluster c) {
            this.c = c;
            this.t0 = System.nanoTime();
            this.w0 = c.writtenBytes.get();
            this.r0 = c.readBytes.get();
        }

        static Window start(Cluster c) {
            return new Window(c);
        }

        void end() {
            t1 = System.nanoTime();
            w1 = c.writtenBytes.get();
            r1 = c.readBytes.get();
        }

        double seconds() {
            return (t1 - t0) / 1e9;
        }

        long written() {
            return w1 - w0;
        }

        double writeRate() {
            return written() / seconds();
        }

        double readRate() {
            return (r1 - r0) / seconds();
        }
    }

    private static void await(String what, BooleanSupplier ok) throws InterruptedException {
        long deadline = System.nanoTime() + T.toNanos();
        while (!ok.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after " + T.toSeconds() + " s waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String mb(double bytesPerSec) {
        return Stats.fmt(bytesPerSec / 1e6, 0);
    }

    private static String fmt(double v, int decimals) {
        return Stats.fmt(v, decimals);
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
