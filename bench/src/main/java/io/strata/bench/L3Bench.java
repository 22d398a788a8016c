package io.strata.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.strata.core.ChainId;
import io.strata.harness.StorageCluster;
import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.rpc.EchoService;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.l3.ReadPolicy;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.storage.engine.EngineOptions;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * {@code strata bench l3}: chunk write and read throughput through the storage client on one
 * 3-replica CRAQ chain of 3 storage nodes on this machine, next to the raw baselines measured in
 * the same run, in alternating rounds: the disk (a plain {@code FileChannel} write of the same
 * bytes into a new file + fdatasync, and a read of them back) and loopback TCP (iperf3 with as
 * many streams when installed, else raw Netty as in {@code bench rpc}).
 *
 * <p>The storage nodes run <b>in this JVM</b> (each with its own context, sockets on loopback):
 * on 2 cores that spares three JVMs' JIT and GC threads, and the output says so. Every stream
 * keeps one request in flight on its own chunks. Reads of chunks just written are served from
 * the page cache, as are the raw-disk reads. Writes are fsync'ed on all three replicas, which
 * share this machine's disk, so 33% of raw disk write is the physical bound.
 *
 * <p>Run {@code strata bench l3 [--sizes 1MiB,4MiB] [--streams 1,8] [--round 3s] [--rounds 3]
 * [--dir DIR]}. The last line is {@code result: write_vs_disk=<worst case> read_vs_tcp=<worst
 * case> ...} with every case's ratios after it.
 */
public final class L3Bench {
    /**
     * @param verifyReads replicas check block CRCs on every read (the default); false: they send
     *                    chunk files with sendfile and the client checks the bytes end to end
     * @param pipeline    replicas forward an update while they store it (the default); false: after
     */
    public record Options(List<DataSize> sizes, List<Integer> streams, Duration round, int rounds, Path dir, boolean iperf,
                          boolean verifyReads, boolean pipeline) {
        public static Options defaults() {
            return new Options(List.of(DataSize.ofMiB(1), DataSize.ofMiB(4)), List.of(1, 8), Duration.ofSeconds(3), 3,
                    Path.of(System.getProperty("java.io.tmpdir")), true, true, true);
        }
    }

    /** Chunks each stream cycles through. */
    private static final int CHUNKS_PER_STREAM = 3;

    private L3Bench() {
    }

    /** One measured round: bytes/s, latency samples, CPU seconds per GB of payload on the storage side. */
    record Round(double bytesPerSec, Stats latency, double cpuSecPerGb) {
    }

    public static Map<String, String> run(Options o, PrintStream out) throws Exception {
        Path root = Files.createTempDirectory(o.dir(), "strata-bench-l3-");
        out.printf(Locale.ROOT, "strata bench l3: 3 storage nodes in this JVM (one 3-replica chain), data in %s, %d rounds of %d ms per case,"
                        + " reads %s, writes %s, cores=%d%n", root, o.rounds(), o.round().toMillis(),
                o.verifyReads() ? "CRC-checked on the replica" : "sent with sendfile, checked by the client",
                o.pipeline() ? "pipelined along the chain" : "stored before forwarded", Runtime.getRuntime().availableProcessors());
        Table t = new Table("chunk", "streams", "op", "system", "MB/s", "p50 ms", "p99 ms", "cpu s/GB", "ratio");
        Map<String, String> result = new LinkedHashMap<>();
        double worstWrite = Double.MAX_VALUE;
        double worstRead = Double.MAX_VALUE;
        Map<Integer, Double> tcp = new LinkedHashMap<>();
        try (Cluster cluster = new Cluster(root.resolve("nodes"), EngineOptions.DEFAULTS.withVerifyReads(o.verifyReads()), o.pipeline())) {
            for (int streams : o.streams()) {
                tcp.put(streams, loopbackTcp(streams, o, out));
            }
            for (DataSize size : o.sizes()) {
                for (int streams : o.streams()) {
                    int bytes = size.toIntExact();
                    Raw raw = new Raw(root.resolve("raw"), bytes, streams);
                    // warm-up: JIT, pools, connections, file pools
                    cluster.writeRound(bytes, streams, Duration.ofMillis(800));
                    raw.writeRound(Duration.ofMillis(400));
                    double[] l3w = new double[o.rounds()];
                    double[] diskw = new double[o.rounds()];
                    double[] l3r = new double[o.rounds()];
                    double[] diskr = new double[o.rounds()];
                    Stats l3wLat = new Stats();
                    Stats diskwLat = new Stats();
                    Stats l3rLat = new Stats();
                    Stats diskrLat = new Stats();
                    double l3wCpu = 0;
                    double l3rCpu = 0;
                    for (int r = 0; r < o.rounds(); r++) {
                        Round a;
                        Round b;
                        if (r % 2 == 0) {
                            a = cluster.writeRound(bytes, streams, o.round());
                            b = raw.writeRound(o.round());
                        } else {
                            b = raw.writeRound(o.round());
                            a = cluster.writeRound(bytes, streams, o.round());
                        }
                        l3w[r] = a.bytesPerSec();
                        diskw[r] = b.bytesPerSec();
                        l3wLat.addAll(a.latency());
                        diskwLat.addAll(b.latency());
                        l3wCpu += a.cpuSecPerGb() / o.rounds();
                        Round c = cluster.readRound(bytes, streams, o.round());
                        Round d = raw.readRound(o.round());
                        l3r[r] = c.bytesPerSec();
                        diskr[r] = d.bytesPerSec();
                        l3rLat.addAll(c.latency());
                        diskrLat.addAll(d.latency());
                        l3rCpu += c.cpuSecPerGb() / o.rounds();
                    }
                    raw.close();
                    double w = Stats.median(l3w);
                    double dw = Stats.median(diskw);
                    double rd = Stats.median(l3r);
                    double dr = Stats.median(diskr);
                    double net = tcp.get(streams);
                    double wRatio = w / dw;
                    double rRatio = rd / net;
                    t.row(size, streams, "write", "strata l3 (3 replicas)", mb(w), ms(l3wLat, 0.5), ms(l3wLat, 0.99), Stats.fmt(l3wCpu, 1),
                            Stats.fmt(wRatio, 2));
                    t.row(size, streams, "write", "raw disk (write+fdatasync)", mb(dw), ms(diskwLat, 0.5), ms(diskwLat, 0.99), "", "1.00");
                    t.row(size, streams, "read", "strata l3", mb(rd), ms(l3rLat, 0.5), ms(l3rLat, 0.99), Stats.fmt(l3rCpu, 1),
                            Stats.fmt(rRatio, 2));
                    t.row(size, streams, "read", "raw disk (page cache)", mb(dr), ms(diskrLat, 0.5), ms(diskrLat, 0.99), "",
                            Stats.fmt(rd / dr, 2));
                    String key = size + "_x" + streams;
                    result.put("write_vs_disk_" + key, Stats.fmt(wRatio, 2));
                    result.put("read_vs_tcp_" + key, Stats.fmt(rRatio, 2));
                    result.put("write_mbps_" + key, mb(w));
                    result.put("read_mbps_" + key, mb(rd));
                    worstWrite = Math.min(worstWrite, wRatio);
                    worstRead = Math.min(worstRead, rRatio);
                }
            }
            for (Map.Entry<Integer, Double> e : tcp.entrySet()) {
                t.row("tcp", e.getKey(), "-", tcpName, mb(e.getValue()), "", "", "", "");
                result.put("tcp_mbps_x" + e.getKey(), mb(e.getValue()));
            }
            t.print(out);
            out.println(cluster.engineSummary());
        } finally {
            deleteTree(root);
        }
        Map<String, String> head = new LinkedHashMap<>();
        head.put("write_vs_disk", Stats.fmt(worstWrite, 2));
        head.put("read_vs_tcp", Stats.fmt(worstRead, 2));
        head.put("nodes", "in-process");
        head.put("reads", o.verifyReads() ? "verified" : "sendfile");
        head.put("chain", o.pipeline() ? "pipelined" : "store-then-forward");
        head.putAll(result);
        StringBuilder line = new StringBuilder("result:");
        head.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
        out.println(line);
        return head;
    }

    private static String tcpName = "iperf3";

    private static String mb(double bytesPerSec) {
        return Stats.fmt(bytesPerSec / 1e6, 0);
    }

    private static String ms(Stats s, double q) {
        return Stats.fmt(s.quantileMicros(q) / 1000, 1);
    }

    /** Loopback TCP with {@code streams} streams, bytes/s: iperf3 when installed, else raw Netty with 1 MiB messages. */
    private static double loopbackTcp(int streams, Options o, PrintStream out) throws Exception {
        if (o.iperf()) {
            String gbps = RpcBench.iperf3(streams, o.round().multipliedBy(2));
            if (!gbps.equals("n/a")) {
                tcpName = "iperf3";
                return Double.parseDouble(gbps) * 1e9;
            }
        }
        tcpName = "raw netty (iperf3 not installed)";
        try (NodeContext s = NodeContext.builder("bench-tcp-server").eventLoopThreads(1).build();
             NodeContext c = NodeContext.builder("bench-tcp-client").eventLoopThreads(1).build();
             RpcBench.RawNetty raw = new RpcBench.RawNetty(s, c)) {
            raw.round(1 << 20, streams, Duration.ofMillis(500));
            return raw.round(1 << 20, streams, o.round()).bytesPerSec();
        }
    }

    /** Three storage nodes in this JVM, one chain across them, and a client. */
    /** The harness's storage cluster as this bench drives it: three nodes in this JVM, one chain of all three. */
    static final class Cluster implements AutoCloseable {
        final StorageCluster storage;
        final StorageClient client;
        final ChainId chain = ChainId.of(1);
        final AtomicLong written = new AtomicLong();

        Cluster(Path dir, EngineOptions engine, boolean pipeline) {
            storage = StorageCluster.builder(dir, 1).nodes(3).chains(1).engine(engine).pipeline(pipeline)
                    .forwardTimeout(Duration.ofSeconds(10)).start();
            client = storage.client("bench-client",
                    StorageClientOptions.DEFAULTS.withReadPolicy(ReadPolicy.ROUND_ROBIN).withAttemptTimeout(Duration.ofSeconds(30)));
        }

        private io.micrometer.core.instrument.MeterRegistry meters(int node) {
            return storage.context(node).meters();
        }

        ChunkAddress chunk(int stream, int k, int size) {
            return new ChunkAddress(ChunkId.of(1000 + stream, size / 65536 * 16 + k), chain, size);
        }

        long storageCpu() {
            return RpcBench.cpuNanos("storage-");
        }

        Round writeRound(int size, int streams, Duration d) throws InterruptedException {
            return loop(size, streams, d, (a, data) -> client.writeAsync(a, 0, data, IoOptions.DEFAULT).thenApply(x -> 0));
        }

        Round readRound(int size, int streams, Duration d) throws InterruptedException {
            return loop(size, streams, d, (a, data) -> client.readAsync(a, 0, size, IoOptions.DEFAULT).thenApply(b -> {
                int n = b.readableBytes();
                b.release();
                if (n != size) {
                    throw new IllegalStateException("read " + n + " bytes of a " + size + "-byte chunk");
                }
                return n;
            }));
        }

        interface Op {
            CompletableFuture<Integer> start(ChunkAddress a, ByteBuf data);
        }

        private Round loop(int size, int streams, Duration d, Op op) throws InterruptedException {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong done = new AtomicLong();
            AtomicLong failed = new AtomicLong();
            Stats lat = new Stats();
            CountDownLatch finished = new CountDownLatch(streams);
            List<ByteBuf> buffers = new ArrayList<>();
            long cpu0 = storageCpu();
            long t0 = System.nanoTime();
            for (int s = 0; s < streams; s++) {
                ByteBuf data = PooledByteBufAllocator.DEFAULT.directBuffer(size);
                EchoService.fill(data, size, s);
                buffers.add(data);
                int stream = s;
                new Object() {
                    int k;

                    void next() {
                        if (stop.get()) {
                            finished.countDown();
                            return;
                        }
                        long start = System.nanoTime();
                        ChunkAddress a = chunk(stream, k++ % CHUNKS_PER_STREAM, size);
                        op.start(a, data).whenComplete((r, e) -> {
                            if (e != null) {
                                failed.incrementAndGet();
                                if (failed.get() > 3) {
                                    stop.set(true);
                                }
                            } else {
                                lat.add(System.nanoTime() - start);
                                done.incrementAndGet();
                            }
                            next();
                        });
                    }
                }.next();
            }
            Thread.sleep(d.toMillis());
            stop.set(true);
            finished.await(120, TimeUnit.SECONDS);
            double secs = (System.nanoTime() - t0) / 1e9;
            long cpu = storageCpu() - cpu0;
            buffers.forEach(ByteBuf::release);
            if (failed.get() > 0) {
                throw new IllegalStateException(failed.get() + " storage requests failed during a round");
            }
            double bytes = done.get() * (double) size;
            return new Round(bytes / secs, lat, bytes == 0 ? 0 : cpu / 1e9 / (bytes / 1e9));
        }

        String engineSummary() {
            double batches = 0;
            double writes = 0;
            double copied = 0;
            for (int i = 1; i <= 3; i++) {
                batches += meters(i).find("strata.storage.fsync.batches").counters().stream().mapToDouble(c -> c.count()).sum();
                copied += meters(i).find("strata.storage.cow.copied.bytes").counters().stream().mapToDouble(c -> c.count()).sum();
                writes += meters(i).find("strata.storage.requests").tag("op", "write").counters().stream().mapToDouble(c -> c.count()).sum();
                writes += meters(i).find("strata.storage.requests").tag("op", "forward").counters().stream().mapToDouble(c -> c.count()).sum();
            }
            double writeMs = 0;
            double commitMs = 0;
            double n = 0;
            for (int i = 1; i <= 3; i++) {
                var w = meters(i).find("strata.storage.engine.write").timer();
                var c = meters(i).find("strata.storage.engine.commit").timer();
                if (w != null && c != null) {
                    writeMs += w.mean(TimeUnit.MILLISECONDS);
                    commitMs += c.mean(TimeUnit.MILLISECONDS);
                    n++;
                }
            }
            StringBuilder per = new StringBuilder();
            for (int i = 1; i <= 3; i++) {
                var w = meters(i).find("strata.storage.engine.write").timer();
                var c = meters(i).find("strata.storage.engine.commit").timer();
                var op = meters(i).find("strata.storage.latency").tag("op", i == 1 ? "write" : "forward").timer();
                per.append(String.format(Locale.ROOT, "%n  node %d (%s): request %.1f ms, data write+fdatasync %.1f ms, metadata commit %.1f ms (%d)",
                        i, i == 1 ? "head" : i == 2 ? "middle" : "tail", op == null ? 0 : op.mean(TimeUnit.MILLISECONDS),
                        w == null ? 0 : w.mean(TimeUnit.MILLISECONDS), c == null ? 0 : c.mean(TimeUnit.MILLISECONDS), c == null ? 0 : c.count()));
            }
            // how the reads spread over the replicas (the client reads any serving replica of a clean chunk)
            double[] reads = new double[4];
            double allReads = 0;
            for (int i = 1; i <= 3; i++) {
                reads[i] = meters(i).find("strata.storage.requests").tag("op", "read").counters().stream().mapToDouble(c -> c.count()).sum();
                allReads += reads[i];
            }
            per.append(String.format(Locale.ROOT, "%n  reads served: head %.0f%%, middle %.0f%%, tail %.0f%% of %.0f",
                    100 * reads[1] / Math.max(1, allReads), 100 * reads[2] / Math.max(1, allReads), 100 * reads[3] / Math.max(1, allReads),
                    allReads));
            return per + "\n" + String.format(Locale.ROOT, "storage engines: %.0f replica writes, %.0f metadata group commits (%.2f per replica write),"
                    + " %s copied on write; mean data write+fdatasync %.1f ms, mean metadata commit %.1f ms",
                    writes, batches, batches / Math.max(1, writes), DataSize.human((long) copied), writeMs / Math.max(1, n), commitMs / Math.max(1, n));
        }

        @Override
        public void close() {
            storage.close();
        }
    }

    /** The baseline: the same bytes written to new files with fdatasync, and read back, by as many threads. */
    static final class Raw implements AutoCloseable {
        private final Path dir;
        private final int size;
        private final int streams;
        private final ByteBuffer[] data;
        private final AtomicLong fileSeq = new AtomicLong();
        private final List<List<Path>> files = new ArrayList<>();

        Raw(Path dir, int size, int streams) throws IOException {
            this.dir = dir;
            this.size = size;
            this.streams = streams;
            Files.createDirectories(dir);
            data = new ByteBuffer[streams];
            for (int s = 0; s < streams; s++) {
                ByteBuf b = PooledByteBufAllocator.DEFAULT.heapBuffer(size);
                EchoService.fill(b, size, s);
                data[s] = ByteBuffer.allocateDirect(size);
                b.getBytes(0, data[s]);
                data[s].flip();
                b.release();
                files.add(new ArrayList<>());
            }
        }

        Round writeRound(Duration d) throws InterruptedException {
            return threads(d, s -> {
                Path p = dir.resolve("f" + fileSeq.incrementAndGet());
                try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                    ByteBuffer b = data[s].duplicate();
                    while (b.hasRemaining()) {
                        ch.write(b);
                    }
                    ch.force(false);
                }
                List<Path> mine = files.get(s);
                mine.add(p);
                if (mine.size() > CHUNKS_PER_STREAM) {
                    Files.deleteIfExists(mine.remove(0));
                }
            });
        }

        Round readRound(Duration d) throws InterruptedException {
            ByteBuffer[] bufs = new ByteBuffer[streams];
            for (int s = 0; s < streams; s++) {
                bufs[s] = ByteBuffer.allocateDirect(size);
            }
            int[] next = new int[streams];
            return threads(d, s -> {
                List<Path> mine = files.get(s);
                Path p = mine.get(next[s]++ % mine.size());
                try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                    ByteBuffer b = bufs[s];
                    b.clear();
                    while (b.hasRemaining() && ch.read(b) > 0) {
                        // fill
                    }
                }
            });
        }

        interface Body {
            void run(int stream) throws IOException;
        }

        private Round threads(Duration d, Body body) throws InterruptedException {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong done = new AtomicLong();
            Stats lat = new Stats();
            List<Thread> ts = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int s = 0; s < streams; s++) {
                int stream = s;
                ts.add(Thread.ofPlatform().name("bench-raw-" + s).start(() -> {
                    while (!stop.get()) {
                        long start = System.nanoTime();
                        try {
                            body.run(stream);
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                        lat.add(System.nanoTime() - start);
                        done.incrementAndGet();
                    }
                }));
            }
            Thread.sleep(d.toMillis());
            stop.set(true);
            for (Thread t : ts) {
                t.join();
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            return new Round(done.get() * (double) size / secs, lat, 0);
        }

        @Override
        public void close() throws IOException {
            deleteTree(dir);
        }
    }

    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(x);
            }
        }
    }
}
