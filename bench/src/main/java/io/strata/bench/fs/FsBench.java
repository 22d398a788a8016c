package io.strata.bench.fs;

import io.strata.bench.Stats;
import io.strata.core.DataSize;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32C;

/**
 * The file-system benchmark behind {@code strata bench run} and {@code strata bench fs}: the
 * same jobs, like {@code juicefs bench}, against any number of {@link FsTarget}s (a FUSE mount,
 * the Java API, a local directory, tmpfs):
 * <ol>
 *   <li><b>write big</b>: {@code threads} writers, one file each of {@code fileSize}, sequential
 *       {@code ioSize} writes, then fsync and close (counted in the throughput);</li>
 *   <li><b>read big</b>: each reads its file back sequentially;</li>
 *   <li><b>random read</b> of each size in {@code randomSizes}: aligned reads at random offsets
 *       of all the big files, for {@code randomTime};</li>
 *   <li><b>small files</b>: write (create, one write, close), stat, then read {@code smallFiles}
 *       files of {@code smallFileSize}, spread over one directory per thread.</li>
 * </ol>
 * Every byte read is checked: each file's CRC32C against the one computed as it was written
 * ({@link Content} makes the bytes a function of file and offset, so random reads are compared
 * byte for byte). A mismatch fails the run: figures from wrong data are not figures.
 *
 * <p>With several targets, each job runs on every target before the next job starts, in an
 * order that rotates with the job and the round, so machine noise and cache warmth hit all of
 * them alike. Throughput and ops/s are the median of the rounds; latencies are quantiles over
 * all rounds' operations (per write/read call for big files and random reads, per file for
 * small-file jobs). Each target's counters (client meters, a mount's metrics) are read before
 * and after the run; their deltas are printed under the table.
 */
public final class FsBench {
    /** The jobs' sizes. */
    public record Options(int threads, DataSize fileSize, DataSize ioSize, int smallFiles, DataSize smallFileSize,
                          List<DataSize> randomSizes, Duration randomTime, int rounds) {
        public Options {
            if (threads < 1 || threads > 256) {
                throw new IllegalArgumentException("threads must be between 1 and 256, got " + threads);
            }
            if (ioSize.bytes() < 1 || ioSize.bytes() > 64L << 20) {
                throw new IllegalArgumentException("the I/O size must be between 1B and 64MiB, got " + ioSize);
            }
            if (fileSize.bytes() < ioSize.bytes()) {
                throw new IllegalArgumentException("the file size (" + fileSize + ") must be at least the I/O size (" + ioSize + ")");
            }
            if (smallFiles < 0 || smallFileSize.bytes() < 1 || smallFileSize.bytes() > 64L << 20) {
                throw new IllegalArgumentException("small files: count >= 0 and size between 1B and 64MiB");
            }
            for (DataSize s : randomSizes) {
                if (s.bytes() < 1 || s.bytes() > fileSize.bytes() || s.bytes() > 64L << 20) {
                    throw new IllegalArgumentException("random read size " + s + " must be between 1B and the file size");
                }
            }
            if (randomTime.isNegative() || randomTime.isZero()) {
                throw new IllegalArgumentException("the random read time must be positive");
            }
            if (rounds < 1) {
                throw new IllegalArgumentException("rounds must be at least 1");
            }
            randomSizes = List.copyOf(randomSizes);
        }

        /** {@code juicefs bench}-like defaults sized so a run of four targets takes a couple of minutes on 2 cores. */
        public static Options defaults() {
            return new Options(2, DataSize.ofMiB(256), DataSize.ofMiB(1), 200, DataSize.ofKiB(128),
                    List.of(DataSize.ofKiB(4), DataSize.ofKiB(128)), Duration.ofSeconds(3), 1);
        }

        public Options withRounds(int r) {
            return new Options(threads, fileSize, ioSize, smallFiles, smallFileSize, randomSizes, randomTime, r);
        }
    }

    /** One job of the suite. {@code key} names it in JSON and result lines. */
    public record Item(String key, String label, Kind kind, int size) {
        /** What a job's operations are. */
        public enum Kind { SEQ_WRITE, SEQ_READ, RANDOM_READ, SMALL_WRITE, SMALL_STAT, SMALL_READ }
    }

    /** One job on one target in one round. {@code fsyncSeconds}: the slowest writer's fsync + close (write big). */
    public record Measure(long ops, long bytes, double seconds, Stats latency, double fsyncSeconds) {
        public double mbPerSec() {
            return bytes / seconds / 1e6;
        }

        public double opsPerSec() {
            return ops / seconds;
        }
    }

    /** One job on one target over all rounds. */
    public record Result(String target, Item item, List<Measure> rounds, Stats latency) {
        public double mbPerSec() {
            return Stats.median(rounds.stream().mapToDouble(Measure::mbPerSec).toArray());
        }

        public double opsPerSec() {
            return Stats.median(rounds.stream().mapToDouble(Measure::opsPerSec).toArray());
        }

        public double fsyncMillis() {
            return Stats.median(rounds.stream().mapToDouble(m -> m.fsyncSeconds() * 1000).toArray());
        }
    }

    /** What a target's counters did during the run: the moved keys, or why there are none. */
    public record CounterDelta(String source, Map<String, Double> moved, String unavailable) {
    }

    /** A finished run. */
    public record Report(Options options, List<FsTarget> targets, List<Item> items, Map<String, Map<String, Result>> results,
                         Map<String, CounterDelta> counters, double seconds) {
        public Result result(String target, String itemKey) {
            Map<String, Result> m = results.get(target);
            return m == null ? null : m.get(itemKey);
        }
    }

    private final Options o;
    private final PrintStream progress;
    private final boolean liveProgress;

    /** {@code progress}: where progress lines go (null: silent); {@code live}: redraw one line in place. */
    public FsBench(Options o, PrintStream progress, boolean live) {
        this.o = o;
        this.progress = progress;
        this.liveProgress = live;
    }

    public static List<Item> items(Options o) {
        List<Item> items = new ArrayList<>();
        items.add(new Item("seq_write", "write big " + o.fileSize() + " x" + o.threads(), Item.Kind.SEQ_WRITE, o.ioSize().toIntExact()));
        items.add(new Item("seq_read", "read big " + o.fileSize() + " x" + o.threads(), Item.Kind.SEQ_READ, o.ioSize().toIntExact()));
        for (DataSize s : o.randomSizes()) {
            items.add(new Item("rand_" + s.toString().toLowerCase(java.util.Locale.ROOT).replace("ib", ""), "random read " + s,
                    Item.Kind.RANDOM_READ, s.toIntExact()));
        }
        if (o.smallFiles() > 0) {
            int s = o.smallFileSize().toIntExact();
            items.add(new Item("small_write", "write " + o.smallFiles() + " x " + o.smallFileSize(), Item.Kind.SMALL_WRITE, s));
            items.add(new Item("small_stat", "stat " + o.smallFiles() + " files", Item.Kind.SMALL_STAT, s));
            items.add(new Item("small_read", "read " + o.smallFiles() + " x " + o.smallFileSize(), Item.Kind.SMALL_READ, s));
        }
        return items;
    }

    /** Runs every job on every target for the configured rounds. The targets stay open (the caller closes them). */
    public Report run(List<FsTarget> targets) throws IOException {
        long t0 = System.nanoTime();
        List<Item> items = items(o);
        Map<String, Map<String, List<Measure>>> measures = new LinkedHashMap<>();
        Map<String, Map<String, Stats>> latencies = new LinkedHashMap<>();
        Map<String, Map<String, Double>> before = new LinkedHashMap<>();
        for (FsTarget t : targets) {
            if (measures.put(t.name(), new LinkedHashMap<>()) != null) {
                throw new IllegalArgumentException("two targets named " + t.name());
            }
            latencies.put(t.name(), new LinkedHashMap<>());
            before.put(t.name(), t.counters().snapshot());
        }
        String base = "strata-bench-" + ProcessHandle.current().pid() + "-" + Long.toString(System.currentTimeMillis(), 36);
        ExecutorService pool = Executors.newFixedThreadPool(o.threads(), r -> {
            Thread th = new Thread(r, "bench-fs-worker");
            th.setDaemon(true);
            return th;
        });
        try {
            for (int round = 0; round < o.rounds(); round++) {
                String dir = base + "/round-" + round;
                Map<String, long[]> bigCrcs = new LinkedHashMap<>();
                Map<String, long[]> smallCrcs = new LinkedHashMap<>();
                for (FsTarget t : targets) {
                    t.mkdirs(dir);
                    for (int i = 0; i < o.threads(); i++) {
                        t.mkdirs(dir + "/small-" + i);
                    }
                    bigCrcs.put(t.name(), new long[o.threads()]);
                    smallCrcs.put(t.name(), new long[o.smallFiles()]);
                }
                for (int k = 0; k < items.size(); k++) {
                    Item item = items.get(k);
                    for (int j = 0; j < targets.size(); j++) {
                        FsTarget t = targets.get((j + k + round) % targets.size());
                        String label = t.name() + ": " + item.label() + (o.rounds() > 1 ? " (" + (round + 1) + "/" + o.rounds() + ")" : "");
                        Measure m = job(pool, t, dir, item, round, bigCrcs.get(t.name()), smallCrcs.get(t.name()), label);
                        measures.get(t.name()).computeIfAbsent(item.key(), x -> new ArrayList<>()).add(m);
                        latencies.get(t.name()).computeIfAbsent(item.key(), x -> new Stats()).addAll(m.latency());
                    }
                }
                for (FsTarget t : targets) {
                    t.deleteTree(dir);
                }
            }
        } finally {
            pool.shutdownNow();
            // also after a failed job: leave nothing in the user's directories
            for (FsTarget t : targets) {
                try {
                    t.deleteTree(base);
                } catch (RuntimeException | java.io.IOException e) {
                    System.err.println("strata bench: could not remove " + base + " on " + t.name() + ": " + e.getMessage());
                }
            }
        }
        Map<String, Map<String, Result>> results = new LinkedHashMap<>();
        Map<String, CounterDelta> counters = new LinkedHashMap<>();
        for (FsTarget t : targets) {
            Map<String, Result> r = new LinkedHashMap<>();
            for (Item item : items) {
                r.put(item.key(), new Result(t.name(), item, measures.get(t.name()).get(item.key()), latencies.get(t.name()).get(item.key())));
            }
            results.put(t.name(), r);
            Counters.Source src = t.counters();
            Map<String, Double> b = before.get(t.name());
            Map<String, Double> a = b == null ? null : src.snapshot();
            counters.put(t.name(), a == null ? new CounterDelta(src.describe(), Map.of(), src.unavailable())
                    : new CounterDelta(src.describe(), Counters.delta(b, a), null));
        }
        return new Report(o, List.copyOf(targets), items, results, counters, (System.nanoTime() - t0) / 1e9);
    }

    private Measure job(ExecutorService pool, FsTarget t, String dir, Item item, int round, long[] bigCrcs, long[] smallCrcs,
                        String label) throws IOException {
        long fileSize = o.fileSize().bytes();
        int io = o.ioSize().toIntExact();
        int n = o.threads();
        long total = switch (item.kind()) {
            case SEQ_WRITE, SEQ_READ -> n * ((fileSize + io - 1) / io);
            case RANDOM_READ -> 1;
            case SMALL_WRITE, SMALL_STAT, SMALL_READ -> o.smallFiles();
        };
        Stats lat = new Stats();
        double[] fsync = new double[n];
        long timed = item.kind() == Item.Kind.RANDOM_READ ? o.randomTime().toNanos() : 0;
        try (Progress p = new Progress(progress, liveProgress, label, total, timed)) {
            List<Callable<Void>> work = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int w = i;
                work.add(switch (item.kind()) {
                    case SEQ_WRITE -> () -> {
                        fsync[w] = writeBig(t, dir, w, bigCrcs, lat, p);
                        return null;
                    };
                    case SEQ_READ -> () -> {
                        readBig(t, dir, w, bigCrcs[w], lat, p);
                        return null;
                    };
                    case RANDOM_READ -> () -> {
                        randomRead(t, dir, w, item.size(), new Random(round * 1000L + w * 7L + item.size()), lat, p);
                        return null;
                    };
                    case SMALL_WRITE, SMALL_STAT, SMALL_READ -> () -> {
                        small(t, dir, w, item.kind(), smallCrcs, lat, p);
                        return null;
                    };
                });
            }
            long start = System.nanoTime();
            runAll(pool, work, t.name() + ": " + item.label());
            double secs = (System.nanoTime() - start) / 1e9;
            double maxFsync = 0;
            for (double f : fsync) {
                maxFsync = Math.max(maxFsync, f);
            }
            return new Measure(p.done.get(), p.bytes.get(), secs, lat, maxFsync);
        }
    }

    private static void runAll(ExecutorService pool, List<Callable<Void>> work, String what) throws IOException {
        List<Future<Void>> fs = new ArrayList<>();
        for (Callable<Void> c : work) {
            fs.add(pool.submit(c));
        }
        Throwable first = null;
        for (Future<Void> f : fs) {
            try {
                f.get();
            } catch (ExecutionException e) {
                if (first == null) {
                    first = e.getCause();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted during " + what);
            }
        }
        if (first instanceof IOException e) {
            throw new IOException(what + ": " + e.getMessage(), e);
        }
        if (first instanceof UncheckedIOException e) {
            throw new IOException(what + ": " + e.getCause().getMessage(), e.getCause());
        }
        if (first != null) {
            throw new IllegalStateException(what + ": " + first.getMessage(), first);
        }
    }

    static String bigFile(String dir, int i) {
        return dir + "/big-" + i;
    }

    static String smallFile(String dir, int thread, int j) {
        return dir + "/small-" + thread + "/f-" + j;
    }

    private static long smallId(int j) {
        return 1_000_000L + j;
    }

    /** Writes big file {@code w}; returns the seconds its fsync and close took. */
    private double writeBig(FsTarget t, String dir, int w, long[] crcs, Stats lat, Progress p) throws IOException {
        long size = o.fileSize().bytes();
        int io = o.ioSize().toIntExact();
        ByteBuffer buf = ByteBuffer.allocateDirect(io);
        CRC32C crc = new CRC32C();
        FsTarget.Handle h = t.create(bigFile(dir, w));
        try {
            for (long pos = 0; pos < size; pos += io) {
                int len = (int) Math.min(io, size - pos);
                buf.clear().limit(len);
                Content.fill(w, pos, buf);
                crc.update(buf.duplicate());
                long s = System.nanoTime();
                h.write(pos, buf);
                lat.add(System.nanoTime() - s);
                p.add(1, len);
            }
            long s = System.nanoTime();
            h.fsync();
            h.close();
            h = null;
            crcs[w] = crc.getValue();
            return (System.nanoTime() - s) / 1e9;
        } finally {
            if (h != null) {
                h.close();
            }
        }
    }

    private void readBig(FsTarget t, String dir, int w, long expectedCrc, Stats lat, Progress p) throws IOException {
        long size = o.fileSize().bytes();
        int io = o.ioSize().toIntExact();
        ByteBuffer buf = ByteBuffer.allocateDirect(io);
        CRC32C crc = new CRC32C();
        String f = bigFile(dir, w);
        try (FsTarget.Handle h = t.open(f)) {
            for (long pos = 0; pos < size; pos += io) {
                int len = (int) Math.min(io, size - pos);
                buf.clear().limit(len);
                long s = System.nanoTime();
                int got = h.read(pos, buf);
                lat.add(System.nanoTime() - s);
                if (got != len) {
                    throw new IOException(f + ": short read at " + pos + ": " + got + " of " + len + " bytes");
                }
                buf.flip();
                crc.update(buf);
                p.add(1, len);
            }
            buf.clear().limit(1);
            if (h.read(size, buf) != 0) {
                throw new IOException(f + ": bytes past the end (" + size + ") that were never written");
            }
        }
        if (crc.getValue() != expectedCrc) {
            throw new IOException(f + ": read back wrong bytes (CRC32C " + Long.toHexString(crc.getValue()) + ", written "
                    + Long.toHexString(expectedCrc) + ")");
        }
    }

    private void randomRead(FsTarget t, String dir, int w, int size, Random rnd, Stats lat, Progress p) throws IOException {
        int n = o.threads();
        long blocks = o.fileSize().bytes() / size;
        FsTarget.Handle[] hs = new FsTarget.Handle[n];
        ByteBuffer buf = ByteBuffer.allocateDirect(size);
        ByteBuffer want = ByteBuffer.allocateDirect(size);
        try {
            for (int i = 0; i < n; i++) {
                hs[i] = t.open(bigFile(dir, i));
            }
            long deadline = System.nanoTime() + o.randomTime().toNanos();
            while (System.nanoTime() < deadline) {
                int f = rnd.nextInt(n);
                long pos = rnd.nextLong(blocks) * size;
                buf.clear();
                long s = System.nanoTime();
                int got = hs[f].read(pos, buf);
                lat.add(System.nanoTime() - s);
                if (got != size) {
                    throw new IOException(bigFile(dir, f) + ": short read at " + pos + ": " + got + " of " + size + " bytes");
                }
                buf.flip();
                long bad = Content.mismatch(f, pos, buf, want);
                if (bad >= 0) {
                    throw new IOException(bigFile(dir, f) + ": read back wrong bytes at offset " + bad);
                }
                p.add(1, size);
            }
        } finally {
            for (FsTarget.Handle h : hs) {
                if (h != null) {
                    h.close();
                }
            }
        }
    }

    private void small(FsTarget t, String dir, int w, Item.Kind kind, long[] crcs, Stats lat, Progress p) throws IOException {
        int size = o.smallFileSize().toIntExact();
        ByteBuffer buf = ByteBuffer.allocateDirect(size + 1);
        for (int j = w; j < o.smallFiles(); j += o.threads()) {
            String f = smallFile(dir, w, j);
            long s = System.nanoTime();
            switch (kind) {
                case SMALL_WRITE -> {
                    buf.clear().limit(size);
                    Content.fill(smallId(j), 0, buf);
                    CRC32C crc = new CRC32C();
                    crc.update(buf.duplicate());
                    crcs[j] = crc.getValue();
                    s = System.nanoTime();
                    try (FsTarget.Handle h = t.create(f)) {
                        h.write(0, buf);
                    }
                }
                case SMALL_STAT -> {
                    long got = t.size(f);
                    if (got != size) {
                        throw new IOException(f + ": stat says " + got + " bytes, " + size + " were written");
                    }
                }
                case SMALL_READ -> {
                    buf.clear(); // one byte more than the file: a longer file shows
                    int got;
                    try (FsTarget.Handle h = t.open(f)) {
                        got = h.read(0, buf);
                    }
                    if (got != size) {
                        throw new IOException(f + ": read " + got + " bytes, " + size + " were written");
                    }
                    buf.flip();
                    CRC32C crc = new CRC32C();
                    crc.update(buf);
                    if (crc.getValue() != crcs[j]) {
                        throw new IOException(f + ": read back wrong bytes (CRC32C mismatch)");
                    }
                }
                default -> throw new IllegalArgumentException(kind.toString());
            }
            lat.add(System.nanoTime() - s);
            p.add(1, kind == Item.Kind.SMALL_STAT ? 0 : size);
        }
    }
}
