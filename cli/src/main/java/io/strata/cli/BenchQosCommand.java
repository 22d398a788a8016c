package io.strata.cli;

import static io.strata.cli.BenchL2Command.dropCaches;
import static io.strata.cli.BenchL2Command.fmt;
import static io.strata.cli.BenchL2Command.strata;
import static io.strata.cli.BenchL2Command.writeShards;

import io.strata.bench.Table;
import io.strata.cli.BenchL2Command.Run;
import io.strata.core.DataSize;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata bench qos}: whether a dataloader's reads keep their latency while a checkpoint
 * is saved next to them. Starts the embedded cluster ({@code strata up}) twice, first with the
 * storage nodes' QoS scheduling on, then with it off ({@code strata up --no-qos}), and in each:
 * writes a data set ({@code --dataset}, larger than the page cache it is read through is allowed
 * to keep: the page cache is dropped before each phase) into a directory whose policy is
 * {@code qos=training-read tiers.l1=off tiers.l2=off consistency=strict} (every read goes to the
 * storage nodes); then a training-read job, {@code --readers} threads issuing random 128 KiB
 * reads at a steady total {@code --rate} (open loop: a read's latency counts from when it was
 * due, so a stalled read also delays the ones queued behind it), runs alone for {@code --idle}
 * (each measured phase follows a drop of the page cache and 2 s of untimed reads),
 * then during a checkpoint burst: {@code --writers} processes save a shard each ({@code dd
 * bs=1M conv=fsync}) into a {@code qos=checkpoint tiers.l2=off} directory, one more into a
 * {@code profile=checkpoint} directory (staged in L2, drained to L3 in the background class), and
 * a prefetch hint has the L2 agents fetch a second data set (the prefetch class). The reads'
 * p99 during the burst against their idle p99 is the figure; the checkpoint's time with QoS on
 * against off is what the reads' protection cost it.
 * Last line: {@code result: p99_during_vs_idle_qos=... p99_during_vs_idle_noqos=...
 * ckpt_slowdown_qos=... p99_idle_qos_ms=... p99_burst_qos_ms=... p99_idle_noqos_ms=...
 * p99_burst_noqos_ms=... ckpt_qos_s=... ckpt_noqos_s=...}.
 */
@Command(name = "qos", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench qos", "  strata bench qos --dataset 4GiB --rate 400 --writers 4"},
        description = {"Training reads (random 128 KiB at a steady rate) alone and during a checkpoint burst with its drain and a "
                + "prefetch, with the storage nodes' QoS on, then off.", "",
                "Floor: with QoS on, the reads' p99 during the burst at most 1.5x their idle p99."})
final class BenchQosCommand implements Callable<Integer> {
    private static final String TAG = "strata bench qos: ";
    private static final int READ = 128 * 1024;
    private static final long FILE = 64L << 20;

    @Option(names = "--dataset", defaultValue = "2GiB", description = "Bytes of the data set the reads sample (default ${DEFAULT-VALUE}).")
    String dataset;

    @Option(names = "--rate", defaultValue = "200", description = "Reads per second, all readers together (default ${DEFAULT-VALUE}).")
    int rate;

    @Option(names = "--readers", defaultValue = "8", description = "Reader threads (default ${DEFAULT-VALUE}).")
    int readers;

    @Option(names = "--idle", defaultValue = "15s", description = "How long the reads run alone (default ${DEFAULT-VALUE}).")
    String idle;

    @Option(names = "--writers", defaultValue = "4", description = "Checkpoint writer processes (default ${DEFAULT-VALUE}).")
    int writers;

    @Option(names = "--shard", defaultValue = "512MiB", description = "Bytes each checkpoint writer saves (default ${DEFAULT-VALUE}).")
    String shard;

    @Option(names = "--noqos-first", description = "Run the cluster without QoS first (to see what the order does to the figures).")
    boolean noqosFirst;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where the temporary data directory goes (default: the temp directory).")
    Path dir;

    /** One cluster's figures: read latencies alone and during the burst (ms), the checkpoint's time. */
    record Mode(String name, double[] idleMs, double[] burstMs, Run ckpt) {
        double p99Idle() {
            return percentile(idleMs, 0.99);
        }

        double p99Burst() {
            return percentile(burstMs, 0.99);
        }
    }

    @Override
    public Integer call() throws Exception {
        long datasetBytes = DataSize.parse(dataset).bytes();
        long shardBytes = DataSize.parse(shard).bytes();
        Duration idleFor = io.strata.config.Durations.parse(idle);
        if (datasetBytes < FILE) {
            throw new IllegalArgumentException("--dataset must be at least 64MiB, got " + dataset);
        }
        if (shardBytes < (1 << 20) || shardBytes % (1 << 20) != 0) {
            throw new IllegalArgumentException("--shard must be a whole number of MiB, at least 1MiB, got " + shard);
        }
        if (rate < 1 || rate > 100_000 || readers < 1 || readers > 256 || writers < 1 || writers > 64) {
            throw new IllegalArgumentException("--rate must be 1..100000, --readers 1..256, --writers 1..64");
        }
        Path parent = (dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"))).toAbsolutePath().normalize();
        Files.createDirectories(parent);
        PrintStream log = System.err;
        Map<String, Mode> modes = new LinkedHashMap<>();
        for (boolean qos : noqosFirst ? new boolean[] {false, true} : new boolean[] {true, false}) {
            String name = qos ? "qos" : "noqos";
            Path work = Files.createTempDirectory(parent, "strata-bench-qos-");
            try (BenchFsCluster cluster = BenchFsCluster.up(work.resolve("data"), log, qos ? List.of() : List.of("--no-qos"))) {
                modes.put(name, runMode(name, cluster, datasetBytes, shardBytes, idleFor, log));
            } finally {
                BenchFsCluster.deleteTree(work, log);
            }
        }
        Table t = new Table("qos", "phase", "reads", "p50 ms", "p99 ms", "max ms", "ckpt s", "ckpt MB/s");
        for (Mode m : List.of(modes.get("qos"), modes.get("noqos"))) {
            t.row(m.name(), "alone", String.valueOf(m.idleMs().length), fmt(percentile(m.idleMs(), 0.5)), fmt(m.p99Idle()),
                    fmt(percentile(m.idleMs(), 1.0)), "", "");
            t.row(m.name(), "during burst", String.valueOf(m.burstMs().length), fmt(percentile(m.burstMs(), 0.5)), fmt(m.p99Burst()),
                    fmt(percentile(m.burstMs(), 1.0)), fmt(m.ckpt().seconds()), fmt(m.ckpt().mbps()));
        }
        System.out.print(t.render());
        Mode on = modes.get("qos");
        Mode off = modes.get("noqos");
        System.out.printf("result: p99_during_vs_idle_qos=%s p99_during_vs_idle_noqos=%s ckpt_slowdown_qos=%s p99_idle_qos_ms=%s "
                        + "p99_burst_qos_ms=%s p99_idle_noqos_ms=%s p99_burst_noqos_ms=%s ckpt_qos_s=%s ckpt_noqos_s=%s%n",
                fmt(on.p99Burst() / on.p99Idle()), fmt(off.p99Burst() / off.p99Idle()), fmt(on.ckpt().seconds() / off.ckpt().seconds()),
                fmt(on.p99Idle()), fmt(on.p99Burst()), fmt(off.p99Idle()), fmt(off.p99Burst()), fmt(on.ckpt().seconds()),
                fmt(off.ckpt().seconds()));
        return 0;
    }

    private Mode runMode(String name, BenchFsCluster cluster, long datasetBytes, long shardBytes, Duration idleFor, PrintStream log)
            throws Exception {
        Path mnt = cluster.mount.orElseThrow(() -> new IllegalStateException("strata bench qos needs the FUSE mount: "
                + cluster.noMount.orElse("no mount")));
        String d = cluster.data.toString();
        Path data = Files.createDirectories(mnt.resolve("dataset"));
        Path hinted = Files.createDirectories(mnt.resolve("hinted"));
        Path ckpt = Files.createDirectories(mnt.resolve("ckpt"));
        Path staged = Files.createDirectories(mnt.resolve("staged"));
        strata(log, "policy", "set", "--data", d, "/dataset", "qos=training-read", "tiers.l1=off", "tiers.l2=off", "consistency=strict");
        strata(log, "policy", "set", "--data", d, "/ckpt", "qos=checkpoint", "tiers.l2=off");
        strata(log, "policy", "set", "--data", d, "/staged", "profile=checkpoint");
        int files = (int) (datasetBytes / FILE);
        log.printf("%s[%s] writing the data set: %d files x 64 MiB, and %d MiB to prefetch later%n", TAG, name, files, 512);
        for (int i = 0; i < files; i += 4) {
            writeShards(Math.min(4, files - i), data, 64, FILE, "file-" + i + "-");
        }
        writeShards(4, hinted, 128, 128L << 20, "part-");
        List<Path> samples = new ArrayList<>();
        try (var s = Files.list(data)) {
            s.sorted().forEach(samples::add);
        }

        log.printf("%s[%s] warm-up (not measured): training reads alone for 5s%n", TAG, name);
        warmUp(samples, 5000);

        dropCaches(cluster.data, log);
        warmUp(samples, 2000);
        log.printf("%s[%s] training reads alone for %ds at %d reads/s%n", TAG, name, idleFor.toSeconds(), rate);
        AtomicBoolean stop = new AtomicBoolean();
        java.time.Instant idleStart = java.time.Instant.now();
        Reads alone = Reads.start(samples, rate, readers, stop);
        Thread.sleep(idleFor.toMillis());
        stop.set(true);
        double[] idleMs = alone.await();
        log.printf("%s[%s] alone, per strata admin slow: %s%n", TAG, name, slowReads(cluster.data, idleStart));

        dropCaches(cluster.data, log);
        warmUp(samples, 2000);
        log.printf("%s[%s] during the burst: %d writers x %s into /ckpt, one into /staged (drained in the background), "
                + "a prefetch of /hinted%n", TAG, name, writers, DataSize.human(shardBytes));
        AtomicBoolean stopBurst = new AtomicBoolean();
        Map<String, double[]> before = nodeFigures(cluster.data);
        java.time.Instant burstStart = java.time.Instant.now();
        Reads during = Reads.start(samples, rate, readers, stopBurst);
        strata(log, "prefetch", "submit", "--data", d, "--job", "bench-qos", "--path", "/hinted", "--deadline", "10m");
        ExecutorService bg = Executors.newSingleThreadExecutor();
        Future<Run> stagedSave = bg.submit(() -> writeShards(1, staged, (int) (shardBytes >> 20), shardBytes, "shard-"));
        Run ckptRun = writeShards(writers, ckpt, (int) (shardBytes >> 20), shardBytes, "shard-");
        stagedSave.get(30, TimeUnit.MINUTES);
        bg.shutdown();
        stopBurst.set(true);
        double[] burstMs = during.await();
        Map<String, double[]> after = nodeFigures(cluster.data);
        StringBuilder where = new StringBuilder();
        for (Map.Entry<String, double[]> e : after.entrySet()) {
            double[] b = before.get(e.getKey());
            double n = e.getValue()[1] - b[1];
            where.append(String.format(java.util.Locale.ROOT, " %s %.0f ops, mean %s ms;", e.getKey(), n,
                    n == 0 ? "-" : fmt((e.getValue()[0] - b[0]) * 1000 / n)));
        }
        log.printf("%s[%s] at the storage nodes during the burst:%s%n", TAG, name, where);
        log.printf("%s[%s] during the burst, per strata admin slow: %s%n", TAG, name, slowReads(cluster.data, burstStart));
        strata(log, "prefetch", "end", "--data", d, "bench-qos");
        log.printf("%s[%s] p99 alone %s ms, during the burst %s ms; checkpoint %s s%n", TAG, name, fmt(percentile(idleMs, 0.99)),
                fmt(percentile(burstMs, 0.99)), fmt(ckptRun.seconds()));
        return new Mode(name, idleMs, burstMs, ckptRun);
    }

    /**
     * Where the reads slower than the daemons' slow-op threshold since {@code since} spent their
     * time, from every daemon's {@code /slow} ({@code strata admin slow}): the mean of each hop
     * and of the storage nodes' device queue and device time.
     */
    private static String slowReads(Path data, java.time.Instant since) {
        try {
            List<AdminSlow.Hop> hops = new ArrayList<>();
            java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
            for (java.net.URI u : MetricsTargets.local(ClusterDir.resolve(data)).values()) {
                for (AdminSlow.Hop h : AdminSlow.fetch(http, u.resolve("/slow"))) {
                    if (java.time.Instant.parse(h.at()).isAfter(since)) {
                        hops.add(h);
                    }
                }
            }
            return AdminSlow.readBreakdown(AdminSlow.join(hops, null, false)).line();
        } catch (Exception e) {
            return "not available (" + e + ")";
        }
    }

    /**
     * Untimed reads for {@code millis}. After the page cache is dropped, they fault the daemons'
     * code and index pages back in (dropping the cache drops those too), so that the measured
     * phase is not the first to pay for them; they bring back a negligible part of the data set.
     */
    private void warmUp(List<Path> samples, long millis) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        Reads r = Reads.start(samples, rate, readers, stop);
        Thread.sleep(millis);
        stop.set(true);
        r.await();
    }

    /**
     * What the storage nodes report so far, summed over them: per class, the seconds operations
     * waited for a device slot and their count; and the seconds and count of the reads they served.
     */
    private static Map<String, double[]> nodeFigures(Path data) throws IOException {
        Map<String, double[]> out = new LinkedHashMap<>();
        List<Path> nodes;
        try (var dirs = Files.list(data)) {
            nodes = dirs.filter(p -> p.getFileName().toString().startsWith("storage-")).sorted().toList();
        }
        for (String cls : List.of("training-read", "checkpoint", "background", "prefetch")) {
            double[] v = new double[2];
            for (Path d : nodes) {
                v[0] += BenchPrefetchCommand.scrapeSum(d, "strata_qos_queued_seconds_sum", "class=\"" + cls + "\"");
                v[1] += BenchPrefetchCommand.scrapeSum(d, "strata_qos_queued_seconds_count", "class=\"" + cls + "\"");
            }
            out.put("queued " + cls, v);
        }
        double[] reads = new double[2];
        for (Path d : nodes) {
            reads[0] += BenchPrefetchCommand.scrapeSum(d, "strata_storage_latency_seconds_sum", "op=\"read\"");
            reads[1] += BenchPrefetchCommand.scrapeSum(d, "strata_storage_latency_seconds_count", "op=\"read\"");
        }
        out.put("read served", reads);
        return out;
    }

    /**
     * Random 128 KiB reads of the sample files at a steady total rate until {@code stop}: read
     * {@code i} is due at start + i / rate and is taken by thread i mod threads; its latency is
     * from when it was due until it returned.
     */
    private static final class Reads {
        private final List<FileChannel> channels = new ArrayList<>();
        private final List<Future<List<Double>>> threads = new ArrayList<>();
        private final ExecutorService pool;

        private Reads(int n) {
            this.pool = Executors.newFixedThreadPool(n);
        }

        static Reads start(List<Path> files, int rate, int n, AtomicBoolean stop) throws IOException {
            Reads r = new Reads(n);
            for (Path f : files) {
                r.channels.add(FileChannel.open(f, StandardOpenOption.READ));
            }
            long t0 = System.nanoTime();
            double interval = 1e9 / rate;
            for (int k = 0; k < n; k++) {
                int me = k;
                r.threads.add(r.pool.submit(() -> {
                    List<Double> ms = new ArrayList<>();
                    SplittableRandom random = new SplittableRandom(me);
                    ByteBuffer buf = ByteBuffer.allocateDirect(READ);
                    for (long i = me; !stop.get(); i += n) {
                        long due = t0 + (long) (i * interval);
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                        FileChannel ch = r.channels.get(random.nextInt(r.channels.size()));
                        long off = (long) random.nextInt((int) (FILE / READ)) * READ;
                        buf.clear();
                        while (buf.hasRemaining()) {
                            if (ch.read(buf, off + buf.position()) < 0) {
                                throw new IOException("short read at " + off + " of a 64 MiB sample file");
                            }
                        }
                        ms.add((System.nanoTime() - due) / 1e6);
                    }
                    return ms;
                }));
            }
            r.pool.shutdown();
            return r;
        }

        /** Waits for the threads (after {@code stop}); every read's latency in ms, sorted. */
        double[] await() throws Exception {
            try {
                List<Double> all = new ArrayList<>();
                for (Future<List<Double>> f : threads) {
                    all.addAll(f.get(5, TimeUnit.MINUTES));
                }
                double[] v = all.stream().mapToDouble(Double::doubleValue).toArray();
                Arrays.sort(v);
                return v;
            } finally {
                pool.shutdownNow();
                for (FileChannel c : channels) {
                    c.close();
                }
            }
        }
    }

    /** The value at fraction {@code q} of sorted {@code v} (NaN when empty). */
    static double percentile(double[] v, double q) {
        if (v.length == 0) {
            return Double.NaN;
        }
        int i = (int) Math.ceil(q * v.length) - 1;
        return v[Math.max(0, Math.min(v.length - 1, i))];
    }
}
