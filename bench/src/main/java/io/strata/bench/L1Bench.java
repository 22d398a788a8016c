package io.strata.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.tier.CacheHints;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.Tier;
import io.strata.core.util.Futures;
import io.strata.l1.L1Config;
import io.strata.l1.L1Stats;
import io.strata.l1.L1Tier;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * {@code strata bench l1}: the L1 cache (memory tier, NVMe tier) over the real L3 storage client
 * on a 3-replica chain of 3 storage nodes running in this JVM, next to baselines measured in the
 * same run, in alternating rounds:
 * <ul>
 * <li><b>hot re-read</b> of a working set that fits in L1, in {@code --read-sizes} requests at
 * random aligned offsets by {@code --threads} threads, each copying the bytes into its own buffer
 * (as read(2) would): from the memory tier vs the same reads of the same bytes from files on tmpfs
 * ({@code /dev/shm}, {@code FileChannel} positional reads); then from the NVMe tier (a restarted
 * cache with a tiny memory tier over the same directory) vs files on the local disk (both warm in
 * the page cache: the files were just written);</li>
 * <li><b>first read</b> of the working set through L1 (from L3) and straight from the storage
 * client;</li>
 * <li>a <b>Zipf sample-read job</b>: {@code --samples} small files with Zipf({@code --zipf-s})
 * popularity, an L1 that holds an eighth of them in memory and a quarter on NVMe: hit ratio and
 * throughput, next to the same job on the storage client alone;</li>
 * <li><b>cold random 4 KiB reads</b> over the working set through an L1 that holds a third of it
 * (memory an eighth, NVMe a quarter), as a dataloader's random samples over a data set larger
 * than the cache: with {@code l1.small-miss = "range"} (a first miss fetches 4 KiB) and
 * {@code "block"} (a miss fetches the whole block), next to the storage client alone, in rotating
 * order;</li>
 * <li><b>small-file writes</b> ({@code --small-files} files written in {@code --small-write}
 * pieces): write-through (each piece to L3, then close) vs write-back (pieces absorbed, one
 * coalesced write at close) vs write-back with one sync of all files at the end.</li>
 * </ul>
 * The last line is {@code result: hot_vs_tmpfs=<worst read size> hit_ratio=<zipf job> ...}.
 * Run {@code strata bench l1 [--working-set 256MiB] [--read-sizes 1MiB,128KiB] [--threads 2]
 * [--round 2s] [--rounds 3] [--dir DIR] [--tmpfs /dev/shm]}.
 */
public final class L1Bench {
    public record Options(DataSize workingSet, DataSize blockSize, DataSize chunkSize, List<DataSize> readSizes, int threads,
                          Duration round, int rounds, Path dir, Path tmpfs, int samples, DataSize sampleSize, double zipfS,
                          int zipfReads, int smallFiles, DataSize smallFileSize, DataSize smallWrite) {
        public static Options defaults() {
            return new Options(DataSize.ofMiB(256), DataSize.ofMiB(1), DataSize.ofMiB(4), List.of(DataSize.ofMiB(1), DataSize.ofKiB(128)),
                    2, Duration.ofSeconds(2), 3, Path.of(System.getProperty("java.io.tmpdir")), Path.of("/dev/shm"), 2048,
                    DataSize.ofKiB(128), 1.0, 20_000, 200, DataSize.ofKiB(16), DataSize.ofKiB(4));
        }
    }

    static final long INODE = 1000;

    private L1Bench() {
    }

    public static Map<String, String> run(Options o, PrintStream out) throws Exception {
        Path root = Files.createTempDirectory(o.dir(), "strata-bench-l1-");
        Path shm = Files.createTempDirectory(o.tmpfs(), "strata-bench-l1-");
        long ws = o.workingSet().bytes();
        int chunk = o.chunkSize().toIntExact();
        int chunks = (int) (ws / chunk);
        out.printf(Locale.ROOT, "strata bench l1: working set %s (%d chunks of %s), blocks of %s, %d threads, %d rounds of %d ms;%n"
                        + "  L3 = 3 storage nodes in this JVM (one 3-replica chain), data and NVMe tier in %s, tmpfs %s, cores=%d%n",
                o.workingSet(), chunks, o.chunkSize(), o.blockSize(), o.threads(), o.rounds(), o.round().toMillis(), root, shm,
                Runtime.getRuntime().availableProcessors());
        Map<String, String> result = new LinkedHashMap<>();
        Table t = new Table("case", "read", "system", "MB/s", "ratio", "note");
        try (L1BenchSupport.MiniL3 l3 = new L1BenchSupport.MiniL3(root.resolve("l3"))) {
            long t0 = System.nanoTime();
            l3.load(chunks, chunk);
            out.printf(Locale.ROOT, "loaded the working set into L3 in %.1f s%n", (System.nanoTime() - t0) / 1e9);
            L1BenchSupport.FileSet tmpfsFiles = L1BenchSupport.FileSet.create(shm.resolve("ws"), chunks, chunk, false);
            L1BenchSupport.FileSet diskFiles = L1BenchSupport.FileSet.create(root.resolve("raw"), chunks, chunk, true);
            NodeContext ctx = NodeContext.builder("bench-l1").eventLoopThreads(1).build();
            try {
                Path nvmeDir = root.resolve("nvme");
                L1Config big = config("hot", DataSize.ofBytes(ws + (64L << 20)), o, nvmeDir, DataSize.ofBytes(ws * 2));
                // ---- first read: through L1 (memory + NVMe fill) and straight from L3 ----
                double cold;
                double direct;
                sweep(l3.client, chunks, chunk, o.blockSize().toIntExact(), o.threads()); // warm-up: JIT, connections
                direct = sweep(l3.client, chunks, chunk, o.blockSize().toIntExact(), o.threads());
                try (L1Tier l1 = new L1Tier(ctx, big, l3.client)) {
                    cold = sweep(l1, chunks, chunk, o.blockSize().toIntExact(), o.threads());
                    Futures.join(l1.drainAsync());
                    t.row("first read", o.blockSize(), "L1 <- L3 (cold)", mb(cold), "", "blocks copied into memory, written to NVMe in the background");
                    t.row("first read", o.blockSize(), "L3 client", mb(direct), Stats.fmt(cold / direct, 2), "ratio: L1 cold / L3");
                    result.put("cold_mbps", Stats.fmt(cold / 1e6, 0));
                    result.put("l3_mbps", Stats.fmt(direct / 1e6, 0));
                    // ---- hot re-read from memory vs tmpfs ----
                    double worst = Double.MAX_VALUE;
                    for (DataSize rs : o.readSizes()) {
                        int len = rs.toIntExact();
                        Reader fromL1 = (th, pos, dst) -> readL1(l1, pos, len, chunk, dst);
                        Reader fromTmpfs = (th, pos, dst) -> tmpfsFiles.read(pos, len, dst);
                        measure(fromL1, ws, len, o.threads(), Duration.ofMillis(500));
                        measure(fromTmpfs, ws, len, o.threads(), Duration.ofMillis(500));
                        double[] ab = alternate(fromL1, fromTmpfs, ws, len, o);
                        double a = ab[0];
                        double b = ab[1];
                        worst = Math.min(worst, a / b);
                        t.row("hot re-read", rs, "L1 memory", mb(a), Stats.fmt(a / b, 2), "ratio: L1 / tmpfs");
                        t.row("hot re-read", rs, "tmpfs files", mb(b), "", "");
                        result.put("hot_vs_tmpfs_" + rs, Stats.fmt(a / b, 2));
                        result.put("hot_gbps_" + rs, Stats.fmt(a / 1e9, 2));
                        result.put("tmpfs_gbps_" + rs, Stats.fmt(b / 1e9, 2));
                    }
                    result.put("hot_vs_tmpfs", Stats.fmt(worst, 2));
                    L1Stats s = l1.stats();
                    out.printf(Locale.ROOT, "memory phase: %d blocks served from memory, %d from NVMe, %d from L3%n",
                            s.memoryHits(), s.nvmeHits(), s.belowReads());
                }
                // ---- hot re-read from NVMe (a restarted cache with a tiny memory tier) vs local disk ----
                L1Config small = config("nvme", DataSize.ofBytes(4 * (o.blockSize().bytes() + 4096)), o, nvmeDir, DataSize.ofBytes(ws * 2));
                try (L1Tier l1 = new L1Tier(ctx, small, l3.client)) {
                    double worst = Double.MAX_VALUE;
                    for (DataSize rs : o.readSizes()) {
                        int len = rs.toIntExact();
                        double[] ab = alternate((th, pos, dst) -> readL1(l1, pos, len, chunk, dst),
                                (th, pos, dst) -> diskFiles.read(pos, len, dst), ws, len, o);
                        double a = ab[0];
                        double b = ab[1];
                        worst = Math.min(worst, a / b);
                        t.row("hot re-read", rs, "L1 NVMe", mb(a), Stats.fmt(a / b, 2), "ratio: L1 NVMe / disk files (both page-cache warm)");
                        t.row("hot re-read", rs, "disk files", mb(b), "", "");
                        result.put("nvme_vs_disk_" + rs, Stats.fmt(a / b, 2));
                    }
                    result.put("nvme_vs_disk", Stats.fmt(worst, 2));
                    L1Stats s = l1.stats();
                    out.printf(Locale.ROOT, "NVMe phase: %d blocks served from memory, %d from NVMe, %d from L3 (restart: no refetch)%n",
                            s.memoryHits(), s.nvmeHits(), s.belowReads());
                    result.put("nvme_phase_l3_reads", Long.toString(s.belowReads()));
                }
                // ---- Zipf sample-read job ----
                zipf(o, l3, ctx, root, t, result, out);
                // ---- cold random small reads over a data set larger than the cache ----
                coldRandom(o, l3, ctx, root, t, result, out, ws, chunk);
                // ---- small-file writes ----
                smallFiles(o, l3, ctx, root, t, result);
            } finally {
                ctx.close();
                tmpfsFiles.close();
                diskFiles.close();
            }
        } finally {
            deleteTree(shm);
            deleteTree(root);
        }
        t.print(out);
        StringBuilder line = new StringBuilder("result:");
        line.append(" hot_vs_tmpfs=").append(result.get("hot_vs_tmpfs"));
        line.append(" hit_ratio=").append(result.get("hit_ratio"));
        for (Map.Entry<String, String> e : result.entrySet()) {
            if (!e.getKey().equals("hot_vs_tmpfs") && !e.getKey().equals("hit_ratio")) {
                line.append(' ').append(e.getKey()).append('=').append(e.getValue());
            }
        }
        out.println(line);
        return result;
    }

    private static L1Config config(String name, DataSize memory, Options o, Path nvme, DataSize nvmeCapacity) {
        L1Config.Nvme n = new L1Config.Nvme(nvme, nvmeCapacity, DataSize.ofGiB(1), true, DataSize.ofBytes(nvmeCapacity.bytes()),
                DataSize.ofMiB(256), true);
        return new L1Config(name, memory, o.blockSize(), Duration.ofSeconds(1), Optional.of(n), L1Config.WriteBack.DEFAULTS);
    }

    private static String mb(double bytesPerSec) {
        return Stats.fmt(bytesPerSec / 1e6, 0);
    }

    static ChunkAddress chunk(long inode, int index, int size) {
        return new ChunkAddress(ChunkId.of(inode, index), ChainId.of(1), size);
    }

    static final IoOptions IO = new IoOptions(1, QosClass.TRAINING_READ, Duration.ofSeconds(60));

    /** Reads [pos, pos+len) of the working set through a tier into {@code dst}, as an application read would. */
    private static void readL1(Tier tier, long pos, int len, int chunk, ByteBuffer dst) {
        ByteBuf b = Futures.join(tier.readAsync(chunk(INODE, (int) (pos / chunk), chunk), pos % chunk, len, IO));
        try {
            if (b.readableBytes() != len) {
                throw new IllegalStateException("short read: " + b.readableBytes() + " of " + len);
            }
            dst.clear().limit(len);
            b.getBytes(b.readerIndex(), dst);
        } finally {
            b.release();
        }
    }

    /** Reads every chunk once, in blocks, with {@code threads} threads; bytes/s. */
    private static double sweep(Tier tier, int chunks, int chunk, int block, int threads) throws InterruptedException {
        AtomicLong bytes = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int th = 0; th < threads; th++) {
            int me = th;
            ts.add(Thread.ofPlatform().name("bench-l1-sweep-" + th).start(() -> {
                ByteBuffer dst = ByteBuffer.allocateDirect(block);
                for (int c = me; c < chunks; c += threads) {
                    for (int off = 0; off < chunk; off += block) {
                        readL1(tier, (long) c * chunk + off, block, chunk, dst);
                        bytes.addAndGet(block);
                    }
                }
            }));
        }
        for (Thread x : ts) {
            x.join();
        }
        return bytes.get() / ((System.nanoTime() - t0) / 1e9);
    }

    interface Reader {
        void read(int thread, long pos, ByteBuffer dst) throws Exception;
    }

    /** {@code threads} threads read random {@code len}-aligned ranges of [0, ws) for {@code d}; bytes/s. */
    /** {@code a} and {@code b} in alternating order for {@code o.rounds()} rounds (noise hits both alike): their medians. */
    static double[] alternate(Reader a, Reader b, long ws, int len, Options o) throws InterruptedException {
        double[] ra = new double[o.rounds()];
        double[] rb = new double[o.rounds()];
        for (int r = 0; r < o.rounds(); r++) {
            if (r % 2 == 0) {
                ra[r] = measure(a, ws, len, o.threads(), o.round());
                rb[r] = measure(b, ws, len, o.threads(), o.round());
            } else {
                rb[r] = measure(b, ws, len, o.threads(), o.round());
                ra[r] = measure(a, ws, len, o.threads(), o.round());
            }
        }
        return new double[] {Stats.median(ra), Stats.median(rb)};
    }

    static double measure(Reader r, long ws, int len, int threads, Duration d) throws InterruptedException {
        AtomicLong bytes = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        long slots = ws / len;
        long t0 = System.nanoTime();
        long deadline = t0 + d.toNanos();
        for (int th = 0; th < threads; th++) {
            int me = th;
            ts.add(Thread.ofPlatform().name("bench-l1-reader-" + th).start(() -> {
                Random rnd = new Random(1234 + me);
                ByteBuffer dst = ByteBuffer.allocateDirect(len);
                long n = 0;
                try {
                    while (System.nanoTime() < deadline) {
                        r.read(me, Math.floorMod(rnd.nextLong(), slots) * len, dst);
                        n += len;
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                bytes.addAndGet(n);
            }));
        }
        for (Thread x : ts) {
            x.join();
        }
        return bytes.get() / ((System.nanoTime() - t0) / 1e9);
    }

    // ---- cold random small reads ----

    private static void coldRandom(Options o, L1BenchSupport.MiniL3 l3, NodeContext ctx, Path root, Table t, Map<String, String> result,
                                   PrintStream out, long ws, int chunk) throws Exception {
        int len = 4096;
        long memory = Math.max(ws / 8, 2 * o.blockSize().bytes());
        long nvme = Math.max(ws / 4, 4 * o.blockSize().bytes());
        L1Config range = config("cold-range", DataSize.ofBytes(memory), o, root.resolve("nvme-range"), DataSize.ofBytes(nvme));
        L1Config block = config("cold-block", DataSize.ofBytes(memory), o, root.resolve("nvme-block"), DataSize.ofBytes(nvme))
                .withSmallMiss(L1Config.SmallMiss.BLOCK);
        try (L1Tier r = new L1Tier(ctx, range, l3.client); L1Tier b = new L1Tier(ctx, block, l3.client)) {
            Reader[] readers = {
                (th, pos, dst) -> readL1(r, pos, len, chunk, dst),
                (th, pos, dst) -> readL1(b, pos, len, chunk, dst),
                (th, pos, dst) -> readL1(l3.client, pos, len, chunk, dst)};
            double[][] rates = new double[3][o.rounds()];
            for (int round = 0; round < o.rounds(); round++) {
                for (int k = 0; k < 3; k++) {
                    int which = (round + k) % 3; // rotate the order: noise and cache warm-up hit each alike
                    rates[which][round] = measure(readers[which], ws, len, o.threads(), o.round());
                }
            }
            double ra = Stats.median(rates[0]);
            double bl = Stats.median(rates[1]);
            double l3r = Stats.median(rates[2]);
            L1Stats rs = r.stats();
            L1Stats bs = b.stats();
            long ranges = (long) ctx.meters().get("strata.l1.range.reads").tag("cache", "cold-range").counter().count();
            out.printf(Locale.ROOT, "cold random %d B reads over %s, L1 memory %s + NVMe %s: range: %d ranges and %d blocks from L3, "
                            + "hit ratio %.3f; block: %d blocks from L3, hit ratio %.3f%n", len, DataSize.human(ws), DataSize.human(memory),
                    DataSize.human(nvme), ranges, rs.belowReads() - ranges, rs.hitRatio(), bs.belowReads(), bs.hitRatio());
            t.row("cold random", DataSize.ofBytes(len), "L1 small-miss=range", mb(ra), Stats.fmt(ra / l3r, 2), "ratio: vs L3 alone");
            t.row("cold random", DataSize.ofBytes(len), "L1 small-miss=block", mb(bl), Stats.fmt(bl / l3r, 2), "ratio: vs L3 alone");
            t.row("cold random", DataSize.ofBytes(len), "L3 client", mb(l3r), "", String.format(Locale.ROOT, "%.0f reads/s", l3r / len));
            result.put("cold_random_range_vs_l3", Stats.fmt(ra / l3r, 2));
            result.put("cold_random_block_vs_l3", Stats.fmt(bl / l3r, 2));
            result.put("cold_random_range_vs_block", Stats.fmt(ra / bl, 2));
        }
    }

    // ---- Zipf sample reads ----

    private static void zipf(Options o, L1BenchSupport.MiniL3 l3, NodeContext ctx, Path root, Table t, Map<String, String> result, PrintStream out)
            throws Exception {
        int n = o.samples();
        int size = o.sampleSize().toIntExact();
        int chunkSize = Math.max(64 * 1024, Integer.highestOneBit(size - 1) << 1);
        long t0 = System.nanoTime();
        l3.loadSamples(n, size, chunkSize);
        out.printf(Locale.ROOT, "loaded %d samples of %s into L3 in %.1f s%n", n, o.sampleSize(), (System.nanoTime() - t0) / 1e9);
        long dataset = (long) n * size;
        Zipf z = new Zipf(n, o.zipfS(), 99);
        long block = o.blockSize().bytes();
        long memory = Math.max(dataset / 8, 2 * block);
        long nvme = Math.max(dataset / 4, 4 * block);
        L1Config cfg = config("zipf", DataSize.ofBytes(memory), o, root.resolve("nvme-zipf"), DataSize.ofBytes(nvme));
        double l1Rate;
        double ratio;
        double steady;
        try (L1Tier l1 = new L1Tier(ctx, cfg, l3.client)) {
            int half = o.zipfReads() / 2;
            l1Rate = samples(l1, z, half, o.threads(), size, chunkSize);
            L1Stats a = l1.stats();
            l1Rate = (l1Rate + samples(l1, z, o.zipfReads() - half, o.threads(), size, chunkSize)) / 2;
            L1Stats b = l1.stats();
            ratio = b.hitRatio();
            long hits = b.memoryHits() + b.nvmeHits() - a.memoryHits() - a.nvmeHits();
            long all = hits + b.belowReads() - a.belowReads();
            steady = all == 0 ? 0 : (double) hits / all;
            out.printf(Locale.ROOT, "zipf job: %d reads of %d samples (s=%.2f), L1 memory %s, NVMe %s: %d memory hits, %d NVMe hits, %d from L3%n",
                    o.zipfReads(), n, o.zipfS(), DataSize.human(memory), DataSize.human(nvme), b.memoryHits(), b.nvmeHits(),
                    b.belowReads());
        }
        double l3Rate = samples(l3.client, z, Math.max(1000, o.zipfReads() / 4), o.threads(), size, chunkSize);
        t.row("zipf samples", o.sampleSize(), "L1 + L3", Stats.fmt(l1Rate * size / 1e6, 0), Stats.fmt(l1Rate / l3Rate, 2),
                String.format(Locale.ROOT, "%.0f samples/s; hit ratio %.3f (second half %.3f); ratio: vs L3 alone", l1Rate, ratio, steady));
        t.row("zipf samples", o.sampleSize(), "L3 client", Stats.fmt(l3Rate * size / 1e6, 0), "", String.format(Locale.ROOT, "%.0f samples/s", l3Rate));
        result.put("hit_ratio", Stats.fmt(ratio, 3));
        result.put("zipf_steady_hit_ratio", Stats.fmt(steady, 3));
        result.put("zipf_samples_per_s", Stats.fmt(l1Rate, 0));
        result.put("zipf_vs_l3", Stats.fmt(l1Rate / l3Rate, 2));
    }

    /** {@code reads} Zipf-chosen whole-sample reads with {@code threads} threads; samples/s. */
    private static double samples(Tier tier, Zipf z, int reads, int threads, int size, int chunkSize) throws InterruptedException {
        AtomicLong left = new AtomicLong(reads);
        List<Thread> ts = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int th = 0; th < threads; th++) {
            int me = th;
            ts.add(Thread.ofPlatform().name("bench-l1-zipf-" + th).start(() -> {
                Random rnd = new Random(777L * (me + 1) + reads);
                ByteBuffer dst = ByteBuffer.allocateDirect(size);
                while (left.getAndDecrement() > 0) {
                    int s = z.next(rnd);
                    ByteBuf b = Futures.join(tier.readAsync(chunk(L1BenchSupport.MiniL3.SAMPLE_INODE + s, 0, chunkSize), 0, size, IO));
                    try {
                        dst.clear();
                        b.getBytes(b.readerIndex(), dst);
                    } finally {
                        b.release();
                    }
                }
            }));
        }
        for (Thread x : ts) {
            x.join();
        }
        return reads / ((System.nanoTime() - t0) / 1e9);
    }

    /** Zipf(s) over n items, each rank mapped to a random item (so hot samples are not neighbours). */
    static final class Zipf {
        private final double[] cdf;
        private final int[] item;

        Zipf(int n, double s, long seed) {
            cdf = new double[n];
            double sum = 0;
            for (int k = 1; k <= n; k++) {
                sum += 1 / Math.pow(k, s);
                cdf[k - 1] = sum;
            }
            for (int k = 0; k < n; k++) {
                cdf[k] /= sum;
            }
            item = new int[n];
            for (int i = 0; i < n; i++) {
                item[i] = i;
            }
            Random r = new Random(seed);
            for (int i = n - 1; i > 0; i--) {
                int j = r.nextInt(i + 1);
                int x = item[i];
                item[i] = item[j];
                item[j] = x;
            }
        }

        int next(Random r) {
            int i = java.util.Arrays.binarySearch(cdf, r.nextDouble());
            return item[Math.min(cdf.length - 1, i >= 0 ? i : -i - 1)];
        }
    }

    // ---- small-file writes ----

    private static void smallFiles(Options o, L1BenchSupport.MiniL3 l3, NodeContext ctx, Path root, Table t, Map<String, String> result) {
        int files = o.smallFiles();
        int size = o.smallFileSize().toIntExact();
        int piece = o.smallWrite().toIntExact();
        int chunkSize = Math.max(64 * 1024, Integer.highestOneBit(size - 1) << 1);
        IoOptions through = IO;
        IoOptions back = IO.withCache(new CacheHints(true, true, Duration.ofSeconds(5), 4L << 20, false, Optional.empty()));
        L1Config cfg = config("writes", DataSize.ofMiB(64), o, root.resolve("nvme-writes"), DataSize.ofMiB(256));
        double wt;
        double wbClose;
        double wbSync;
        try (L1Tier l1 = new L1Tier(ctx, cfg, l3.client)) {
            wt = writeFiles(l1, 200_000, files, size, piece, chunkSize, through, true);
            wbClose = writeFiles(l1, 300_000, files, size, piece, chunkSize, back, true);
            wbSync = writeFiles(l1, 400_000, files, size, piece, chunkSize, back, false);
        }
        String what = String.format(Locale.ROOT, "%d files of %s in %s writes", files, o.smallFileSize(), o.smallWrite());
        t.row("small files", o.smallWrite(), "write-through", Stats.fmt(wt * size / 1e6, 1), "",
                String.format(Locale.ROOT, "%.0f files/s; each write to L3, then close; %s", wt, what));
        t.row("small files", o.smallWrite(), "write-back", Stats.fmt(wbClose * size / 1e6, 1), Stats.fmt(wbClose / wt, 2),
                String.format(Locale.ROOT, "%.0f files/s; writes absorbed, one write per file at close", wbClose));
        t.row("small files", o.smallWrite(), "write-back, sync at end", Stats.fmt(wbSync * size / 1e6, 1), Stats.fmt(wbSync / wt, 2),
                String.format(Locale.ROOT, "%.0f files/s incl. the final flush of all files", wbSync));
        result.put("smallfile_wt_per_s", Stats.fmt(wt, 0));
        result.put("smallfile_wb_per_s", Stats.fmt(wbClose, 0));
        result.put("smallfile_wb_sync_end_per_s", Stats.fmt(wbSync, 0));
        result.put("wb_speedup", Stats.fmt(wbClose / wt, 2));
    }

    /** Writes {@code files} files in pieces (closing each when {@code closeEach}, else syncing all at the end); files/s. */
    private static double writeFiles(L1Tier l1, long base, int files, int size, int piece, int chunkSize, IoOptions io, boolean closeEach) {
        byte[] data = new byte[size];
        new Random(base).nextBytes(data);
        long t0 = System.nanoTime();
        for (int f = 0; f < files; f++) {
            ChunkAddress a = chunk(base + f, 0, chunkSize);
            for (int off = 0; off < size; off += piece) {
                ByteBuf b = Unpooled.wrappedBuffer(data, off, Math.min(piece, size - off));
                try {
                    Futures.join(l1.writeAsync(a, off, b, io));
                } finally {
                    b.release();
                }
            }
            if (closeEach) {
                Futures.join(l1.flushAsync(InodeId.of(base + f), io));
            }
        }
        if (!closeEach) {
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (int f = 0; f < files; f++) {
                all.add(l1.flushAsync(InodeId.of(base + f), io));
            }
            Futures.join(CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)));
        }
        return files / ((System.nanoTime() - t0) / 1e9);
    }

    private static void deleteTree(Path p) throws IOException {
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
