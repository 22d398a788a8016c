package io.strata.cli;

import static io.strata.cli.BenchL2Command.dropCaches;
import static io.strata.cli.BenchL2Command.fmt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.bench.Table;
import io.strata.core.DataSize;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata bench prefetch}: what the scheduler hooks (docs/scheduler-hooks.md) give a job
 * whose data was hinted before it started. Starts the embedded cluster ({@code strata up}: two
 * L2 agents l2-1 and l2-2, three storage nodes, the FUSE mount, the hooks server) and writes two
 * data sets of the same shape through the mount: {@code --jobs} segments of half a
 * {@code --dataset} each, in files of {@code --file-size}; job {@code i}'s dataset is segments
 * {@code i} and {@code i+1} (mod jobs), so each half of it is shared with another job and the
 * union is {@code jobs x dataset / 2}. Both keep the default policy ({@code tiers.l2=prefetch}):
 * writing them puts nothing in L2, and reads of a file without a prefetch record go to L3 and
 * leave nothing in L2.
 *
 * <p><b>Warm-up.</b> First a hint on a separate set ({@code --warmup}, 1 GiB by default) is
 * staged and its job ended, unmeasured, so that the measured hints meet daemons that have
 * staged before, as in a cluster that has run for a while.
 *
 * <p><b>Hints.</b> One hint per job on the hinted set (its two segments, nodes l2-1 and l2-2,
 * deadlines {@code --deadline} after the submission plus {@code --deadline-step} per job),
 * submitted together after {@code sync} and dropping the page cache (so that the agents read the
 * storage nodes' disks), followed every 250 ms until each is ready: the L3 bytes the agents fetched
 * for them ({@code strata_l2_prefetch_bytes}) against the union's bytes; whether each was ready
 * before its deadline; the ETA each reported at 25-50% progress (at least 1 s before it was
 * ready) against its {@code ready_at}.
 *
 * <p><b>Epochs.</b> Then, job by job, its first epoch on the hinted set and the same reads of
 * the cold set (never hinted: from L3), in alternating order: {@code --readers} threads read
 * whole files sequentially (1 MiB reads) in a shuffled order, after {@code sync}, emptying the
 * mount's L1 and dropping the page cache; the bytes the storage nodes served, the reads the L2
 * agents served and the L1 blocks served are counted, to show where each epoch's bytes came from.
 *
 * <p><b>Cancel.</b> A hint on the whole cold set (page cache dropped first); once it is staging
 * with 10% done, the time {@code DELETE /v1/hints/{id}} takes to answer {@code cancelled}, and
 * when the agents' fetched bytes (sampled every 20 ms plus the time to read their metrics) stop
 * growing. Every job is ended ({@code POST /v1/jobs/{job}/end}) and the cluster stopped at the
 * end, also on failure.
 * Last line: {@code result: l3_egress_vs_unique=... ready_before_deadline=... eta_error=...
 * first_epoch_vs_cold=... cancel_ms=... cancel_stop_ms=... ...}.
 */
@Command(name = "prefetch", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n",
        footer = {"  strata bench prefetch", "  strata bench prefetch --dataset 256MiB --file-size 256KiB --readers 8"},
        description = {"Scheduler hooks: jobs hint overlapping datasets with deadlines, the L2 agents stage them once, "
                + "then each job's first epoch reads them, against the same reads cold from L3; and cancelling a hint.", "",
                "Floors: L3 bytes fetched at most 1.05x the union of the datasets; ETA error at most 10%%; "
                        + "first epoch at least 3x cold; a cancel within 1 s."})
final class BenchPrefetchCommand implements Callable<Integer> {
    private static final String TAG = "strata bench prefetch: ";
    private static final String ROOT = "/bench-prefetch";
    private static final String EXTRA_JOB = "bench-prefetch-extra";
    private static final String WARMUP_JOB = "bench-prefetch-warmup";
    /** An estimate is judged when computed at least this long before its hint was ready (see {@link Followed#pickEta}). */
    static final long JUDGED_AHEAD_MS = 1000;
    private static final List<String> NODES = List.of("l2-1", "l2-2");
    /** The daemons whose CPU time is reported, by kind (l2-1 and l2-2 are "l2"). */
    private static final List<String> CPU_KINDS = List.of("mount", "l2", "storage", "meta", "hooks");
    private static final int BLOCK = 1 << 20;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient METRICS_HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Option(names = "--jobs", defaultValue = "3", description = "Jobs, 2..16 (default ${DEFAULT-VALUE}); with 2 both want the same data.")
    int jobs;

    @Option(names = "--dataset", defaultValue = "1GiB", description = "Each job's dataset (default ${DEFAULT-VALUE}); half of it is shared.")
    String dataset;

    @Option(names = "--file-size", defaultValue = "64MiB", description = "Size of each file, 4KiB or more (default ${DEFAULT-VALUE}).")
    String fileSize;

    @Option(names = "--readers", defaultValue = "4", description = "Reader threads of each epoch, 1..64 (default ${DEFAULT-VALUE}).")
    int readers;

    @Option(names = "--deadline", defaultValue = "30s", description = "The first job's deadline after the submission (default ${DEFAULT-VALUE}).")
    String deadline;

    @Option(names = "--deadline-step", defaultValue = "10s", description = "Each next job's deadline is this much later (default ${DEFAULT-VALUE}).")
    String deadlineStep;

    @Option(names = "--warmup", defaultValue = "1GiB", description = "Staged and released before the measured hints, so that they meet "
            + "warm daemons, as in a cluster that has run for a while (default ${DEFAULT-VALUE}; 0: none).")
    String warmup;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where the temporary data directory goes (default: the temp directory).")
    Path dir;

    /** One epoch of one job: seconds until every file was read, bytes read, what served them, blocks not as written. */
    record Epoch(double seconds, long bytes, long l3Bytes, long l2Hits, long l1Hits, long bad, String cpu) {
        double mbps() {
            return bytes / 1e6 / seconds;
        }
    }

    /** What one hint did: its figures as the API showed them, and the ETA sample taken. */
    static final class Followed {
        final int job;
        final String name;
        final String id;
        long deadline;
        long bytesTotal;
        long readyAt;
        String state = "?";
        String message = "";
        final Set<String> states = new LinkedHashSet<>();
        /** Every estimate the API showed while the hint was active: when it was computed (the hint's updated), progress, ETA. */
        final List<long[]> estimates = new ArrayList<>();
        /** The ETA sample: when it was computed, the predicted instant, the progress then (-1: none). */
        long etaAt;
        long etaPredicted;
        double etaProgress = -1;

        Followed(int job, String name, String id) {
            this.job = job;
            this.name = name;
            this.id = id;
        }

        boolean settled() {
            return state.equals("ready") || state.equals("failed") || state.equals("cancelled");
        }

        /**
         * Picks the ETA sample: the first estimate shown at 25-50% progress; when the hint went
         * through that range between two updates, the estimate nearest to 37.5% within 10-90%.
         * Only estimates computed at least {@link #JUDGED_AHEAD_MS} before the hint was ready are
         * judged: the API updates a hint's figures every 0.5 s and the bench reads them every
         * 0.25 s, so 10% of a shorter remainder is below what either resolves (a hint whose files
         * another hint already fetched is ready a fraction of a second after its first estimate).
         */
        void pickEta() {
            long[] best = pick(JUDGED_AHEAD_MS);
            if (best != null) {
                etaAt = best[0];
                etaProgress = best[1] / 1e6;
                etaPredicted = best[2];
            }
        }

        private long[] pick(long minAheadMs) {
            long[] best = null;
            for (long[] e : estimates) {
                double p = e[1] / 1e6;
                if (readyAt > 0 && readyAt - e[0] < minAheadMs) {
                    continue;
                }
                if (p >= 0.25 && p <= 0.5) {
                    best = e;
                    break;
                }
                if (p >= 0.1 && p <= 0.9 && (best == null || Math.abs(p - 0.375) < Math.abs(best[1] / 1e6 - 0.375))) {
                    best = e;
                }
            }
            return best;
        }

        double etaError() {
            if (etaProgress < 0 || readyAt <= 0 || readyAt <= etaAt) {
                return Double.NaN;
            }
            return Math.abs(etaPredicted - readyAt) / (double) (readyAt - etaAt);
        }

        /** The error of the estimate picked without the 1-s rule: shown next to the floor, not judged. */
        double etaErrorUnjudged() {
            long[] e = pick(0);
            if (e == null || readyAt <= 0 || readyAt <= e[0]) {
                return Double.NaN;
            }
            return Math.abs(e[2] - readyAt) / (double) (readyAt - e[0]);
        }
    }

    /**
     * The cancel test: DELETE's time to answer cancelled, the bytes the agents fetched between the
     * request and the answer and after the answer, when they last grew (ms after the request).
     */
    record Cancel(double cancelMs, String answered, long bytesAtCancel, double progressAtCancel, long growthAfter, double stopMs,
                  boolean stoppedWithin1s, double sampleMs, double lastBeforeMs, String note) {
    }

    private HttpClient http;
    private String hooks;

    @Override
    public Integer call() throws Exception {
        if (jobs < 2 || jobs > 16) {
            throw new IllegalArgumentException("--jobs must be between 2 and 16, got " + jobs);
        }
        if (readers < 1 || readers > 64) {
            throw new IllegalArgumentException("--readers must be between 1 and 64, got " + readers);
        }
        long datasetBytes = size("--dataset", dataset);
        long fileBytes = size("--file-size", fileSize);
        if (fileBytes < 4096) {
            throw new IllegalArgumentException("--file-size must be at least 4KiB, got " + fileSize);
        }
        if (datasetBytes % (2 * fileBytes) != 0) {
            throw new IllegalArgumentException("--dataset must be an even number of files of --file-size: " + dataset + " / " + fileSize);
        }
        Duration first = HintDelay.parse("--deadline", deadline);
        Duration step = HintDelay.parse("--deadline-step", deadlineStep);
        int filesPerSegment = (int) (datasetBytes / 2 / fileBytes);
        long segmentBytes = datasetBytes / 2;
        long unionBytes = jobs * segmentBytes;
        Path parent = (dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"))).toAbsolutePath().normalize();
        Files.createDirectories(parent);
        Path work = Files.createTempDirectory(parent, "strata-bench-prefetch-");
        PrintStream log = System.err;

        Map<Integer, Epoch> cold = new LinkedHashMap<>();
        Map<Integer, Epoch> warm = new LinkedHashMap<>();
        List<Followed> hints = new ArrayList<>();
        Set<String> toEnd = new LinkedHashSet<>();
        long egress = -1;
        long l3DuringStaging = -1;
        long fetches = -1;
        long pinned = -1;
        double stagingSeconds = Double.NaN;
        String stagingCpu = "-";
        long submitted = 0;
        Cancel cancel = null;
        try (BenchFsCluster cluster = BenchFsCluster.up(work.resolve("data"), log)) {
            Path mnt = cluster.mount.orElseThrow(() -> new IllegalStateException("strata bench prefetch needs the FUSE mount: "
                    + cluster.noMount.orElse("no mount")));
            Path data = cluster.data;
            // the cluster's hooks server: HTTPS verified with the cluster CA, as strata up runs it (plain HTTP with --no-tls)
            HooksEndpoint endpoint = HooksEndpoint.local(data);
            hooks = endpoint.url();
            http = endpoint.client(Duration.ofSeconds(5));
            // the hooks server takes a scheduler's or an admin's token: the local cluster's admin token
            Path admin = data.resolve(UpAuth.ADMIN_TOKEN);
            bearer = Files.exists(admin) ? Optional.of(io.strata.core.auth.Credentials.read(admin).token()) : Optional.empty();
            try {
                log.printf("%s%d jobs x %s (files of %s; job i reads segments i and i+1 of %d): union %s; written twice (hinted set, "
                        + "cold set), %s in all%n", TAG, jobs, DataSize.human(datasetBytes), DataSize.human(fileBytes), jobs,
                        DataSize.human(unionBytes), DataSize.human(2 * unionBytes));
                Path hinted = mnt.resolve(ROOT.substring(1)).resolve("hinted");
                Path coldSet = mnt.resolve(ROOT.substring(1)).resolve("cold");
                write(List.of(hinted, coldSet), filesPerSegment, fileBytes, log);
                long warmupBytes = size("--warmup", warmup);
                if (warmupBytes > 0) {
                    warmUp(mnt, data, (int) Math.max(1, warmupBytes / ((long) jobs * fileBytes)), fileBytes, log);
                }

                // the hints, all at once, as a scheduler would post them for queued jobs; what they fetch comes from the
                // storage nodes' disks, not from the page cache the writes left
                BenchL2Command.run(log, List.of("sync"));
                dropCaches(data, log);
                long p0 = agentsSum(data, "strata_l2_prefetch_bytes");
                long f0 = agentsSum(data, "strata_l2_prefetch_fetches");
                long s0 = l3ReadBytes(data);
                Map<String, Long> cpu0 = DaemonCpu.read(data, CPU_KINDS);
                submitted = System.currentTimeMillis();
                for (int j = 0; j < jobs; j++) {
                    Instant due = Instant.ofEpochMilli(submitted + first.plus(step.multipliedBy(j)).toMillis());
                    String job = "job-" + j;
                    ObjectNode b = JSON.createObjectNode().put("job", job);
                    b.putArray("paths").add(ROOT + "/hinted/seg-" + j).add(ROOT + "/hinted/seg-" + ((j + 1) % jobs));
                    b.put("deadline", due.toString());
                    NODES.forEach(b.putArray("nodes")::add);
                    toEnd.add(job);
                    JsonNode h = call("POST", "/v1/hints", b);
                    Followed f = new Followed(j, job, h.path("id").asText());
                    see(f, h);
                    hints.add(f);
                }
                log.printf("%ssubmitted %d hints (nodes %s), deadlines %s%n", TAG, jobs, NODES, deadlines(hints, submitted));
                follow(hints, submitted, log);
                stagingSeconds = (hints.stream().mapToLong(f -> f.readyAt).max().orElse(0) - submitted) / 1000.0;
                egress = delta(p0, agentsSum(data, "strata_l2_prefetch_bytes"));
                fetches = delta(f0, agentsSum(data, "strata_l2_prefetch_fetches"));
                l3DuringStaging = delta(s0, l3ReadBytes(data));
                pinned = agentsSum(data, "strata_l2_pinned_chunks");
                stagingCpu = DaemonCpu.used(CPU_KINDS, cpu0, DaemonCpu.read(data, CPU_KINDS));
                log.printf("%sstaging: the agents fetched %s from L3 (%d chunks) for a union of %s; the storage nodes served %s; "
                        + "%d chunks pinned; CPU s meanwhile: %s%n", TAG, human(egress), fetches, DataSize.human(unionBytes),
                        human(l3DuringStaging), pinned, stagingCpu);

                // each job's first epoch and its cold baseline one after the other, in alternating order, so that a change in the
                // machine's load meanwhile hits both
                for (int j = 0; j < jobs; j++) {
                    if (j % 2 == 0) {
                        cold.put(j, epoch("cold", j, coldSet, filesPerSegment, fileBytes, mnt, data, log));
                        warm.put(j, epoch("first epoch", j, hinted, filesPerSegment, fileBytes, mnt, data, log));
                    } else {
                        warm.put(j, epoch("first epoch", j, hinted, filesPerSegment, fileBytes, mnt, data, log));
                        cold.put(j, epoch("cold", j, coldSet, filesPerSegment, fileBytes, mnt, data, log));
                    }
                }

                toEnd.add(EXTRA_JOB);
                cancel = cancelTest(data, log);
            } finally {
                for (String job : toEnd) {
                    try {
                        int code = send("POST", "/v1/jobs/" + URLEncoder.encode(job, StandardCharsets.UTF_8) + "/end", null).statusCode();
                        log.printf("%sended %s (HTTP %d)%n", TAG, job, code);
                    } catch (IOException | RuntimeException e) {
                        log.printf("%sending %s: %s%n", TAG, job, e.getMessage());
                    }
                }
            }
        } finally {
            BenchFsCluster.deleteTree(work, log);
        }
        long bad = cold.values().stream().mapToLong(Epoch::bad).sum() + warm.values().stream().mapToLong(Epoch::bad).sum();
        print(cold, warm, hints, submitted, unionBytes, datasetBytes, fileBytes, egress, fetches, l3DuringStaging, pinned, stagingSeconds,
                stagingCpu, cancel, bad);
        return bad == 0 ? 0 : 1;
    }

    private static long size(String option, String text) {
        try {
            return DataSize.parse(text).bytes();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": " + e.getMessage());
        }
    }

    /** "90s", "2m", "1h" as a duration. */
    private static final class HintDelay {
        static Duration parse(String option, String s) {
            String t = s.strip().toLowerCase(Locale.ROOT);
            try {
                if (t.endsWith("ms")) {
                    return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
                }
                long n = Long.parseLong(t.substring(0, t.length() - 1));
                return switch (t.charAt(t.length() - 1)) {
                    case 's' -> Duration.ofSeconds(n);
                    case 'm' -> Duration.ofMinutes(n);
                    case 'h' -> Duration.ofHours(n);
                    default -> throw new NumberFormatException();
                };
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(option + " must be a number of seconds, minutes or hours (90s, 2m), got " + s);
            }
        }
    }

    // ---- the data ----

    /**
     * Writes every set under {@code sets}: seg-K/f-NNNNN for K in 0..jobs-1, {@code files} files
     * of {@code fileBytes} each, by {@link #readers} threads. Each block of a file starts with its
     * file's number and the block's, which the readers check.
     */
    private void write(List<Path> sets, int files, long fileBytes, PrintStream log) throws Exception {
        ConcurrentLinkedQueue<Path> todo = new ConcurrentLinkedQueue<>();
        for (Path set : sets) {
            for (int s = 0; s < jobs; s++) {
                Path seg = Files.createDirectories(set.resolve("seg-" + s));
                for (int i = 0; i < files; i++) {
                    todo.add(seg.resolve(String.format(Locale.ROOT, "f-%05d", i)));
                }
            }
        }
        long total = (long) todo.size() * fileBytes;
        byte[] pattern = new byte[(int) Math.min(BLOCK, fileBytes)];
        new Random(42).nextBytes(pattern);
        AtomicLong written = new AtomicLong();
        log.printf("%swriting %d files, %s, with %d writers%n", TAG, todo.size(), DataSize.human(total), readers);
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(readers);
        try (ProgressTicker t = new ProgressTicker(log, TAG, "writing", () -> ", " + DataSize.human(written.get()) + " of " + DataSize.human(total))) {
            List<Future<?>> fs = new ArrayList<>();
            for (int w = 0; w < readers; w++) {
                fs.add(pool.submit(() -> {
                    ByteBuffer buf = ByteBuffer.allocate(pattern.length);
                    for (Path p; (p = todo.poll()) != null; ) {
                        long id = fileId(p);
                        try (FileChannel c = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                            for (long off = 0, b = 0; off < fileBytes; off += pattern.length, b++) {
                                buf.clear();
                                buf.put(pattern);
                                buf.putLong(0, id).putLong(8, b);
                                buf.flip();
                                while (buf.hasRemaining()) {
                                    c.write(buf);
                                }
                                written.addAndGet(pattern.length);
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        double s = (System.nanoTime() - t0) / 1e9;
        log.printf("%swrote %s in %.1f s (%.0f MB/s)%n", TAG, DataSize.human(total), s, total / 1e6 / s);
    }

    /** A file's number: which set, segment and file (from its path: SET/seg-K/f-NNNNN). */
    private static long fileId(Path p) {
        long set = p.getParent().getParent().getFileName().toString().equals("cold") ? 1 : 2;
        long seg = Long.parseLong(p.getParent().getFileName().toString().substring(4));
        long file = Long.parseLong(p.getFileName().toString().substring(2));
        return set << 40 | seg << 20 | file;
    }

    /**
     * Job {@code job}'s epoch over {@code set}: its two segments' files in a shuffled order, read
     * whole and in order by {@link #readers} threads, after the mount's L1 and the page cache were
     * emptied; counts what the storage nodes, the L2 agents (the mount's cached hits) and the L1 served meanwhile.
     */
    private Epoch epoch(String what, int job, Path set, int files, long fileBytes, Path mnt, Path data, PrintStream log) throws Exception {
        List<Path> list = new ArrayList<>();
        for (int seg : List.of(job, (job + 1) % jobs)) {
            for (int i = 0; i < files; i++) {
                list.add(set.resolve("seg-" + seg).resolve(String.format(Locale.ROOT, "f-%05d", i)));
            }
        }
        Collections.shuffle(list, new Random(job));
        ConcurrentLinkedQueue<Path> todo = new ConcurrentLinkedQueue<>(list);
        long total = list.size() * fileBytes;
        BenchL2Command.run(log, List.of("sync")); // no dirty page left to be written back during the reads
        dropCaches(data, log);
        long l3 = l3ReadBytes(data);
        long hits = mountCounter(data, "strata_l2_client_cached_hit_total");
        long l1 = BenchCkptCommand.l1Hits(mnt, data);
        Map<String, Long> cpu0 = DaemonCpu.read(data, CPU_KINDS);
        AtomicLong read = new AtomicLong();
        AtomicLong bad = new AtomicLong();
        log.printf("%s%s, job-%d: %d readers read %d files, %s, of %s (L1 and page cache emptied first)%n", TAG, what, job, readers,
                list.size(), DataSize.human(total), set);
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(readers);
        try (ProgressTicker t = new ProgressTicker(log, TAG, what + ", job-" + job, () -> ", " + DataSize.human(read.get()) + " of " + DataSize.human(total))) {
            List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < readers; r++) {
                fs.add(pool.submit(() -> {
                    int block = (int) Math.min(BLOCK, fileBytes);
                    ByteBuffer buf = ByteBuffer.allocate(block);
                    for (Path p; (p = todo.poll()) != null; ) {
                        long id = fileId(p);
                        long n = 0;
                        try (FileChannel c = FileChannel.open(p, StandardOpenOption.READ)) {
                            for (long b = 0; ; b++) {
                                buf.clear();
                                while (buf.hasRemaining() && c.read(buf) > 0) {
                                    // fill the block
                                }
                                if (buf.position() == 0) {
                                    break;
                                }
                                if (buf.position() < 16 || buf.getLong(0) != id || buf.getLong(8) != b) {
                                    bad.incrementAndGet();
                                }
                                n += buf.position();
                                read.addAndGet(buf.position());
                            }
                        }
                        if (n != fileBytes) {
                            log.printf("%s%s: read %d bytes, not %d%n", TAG, p, n, fileBytes);
                            bad.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        double s = (System.nanoTime() - t0) / 1e9;
        Epoch e = new Epoch(s, read.get(), delta(l3, l3ReadBytes(data)), delta(hits, mountCounter(data, "strata_l2_client_cached_hit_total")),
                delta(l1, BenchCkptCommand.l1Hits(mnt, data)), bad.get(), DaemonCpu.used(CPU_KINDS, cpu0, DaemonCpu.read(data, CPU_KINDS)));
        log.printf("%s%s, job-%d: %.2f s, %.0f MB/s; storage nodes served %s, L2 agents %d reads, L1 %d blocks%s; CPU s meanwhile: %s%n",
                TAG, what, job, e.seconds(), e.mbps(), human(e.l3Bytes()), e.l2Hits(), e.l1Hits(),
                e.bad() == 0 ? "" : "; " + e.bad() + " blocks NOT as written", e.cpu());
        return e;
    }

    // ---- the hints ----

    /** Polls every hint every 250 ms until each settled (at most 10 minutes past the last deadline), with a progress line every 5 s. */
    /**
     * Stages a set of {@code jobs} segments of {@code files} files that no measured epoch reads, waits until it is ready and
     * ends its job: the agents' fetch path, the storage nodes' reads and the hooks server have then run before the measured
     * hints, whose estimates would otherwise follow the daemons' warm-up (their rate grew about twofold over a fresh
     * cluster's first seconds of staging).
     */
    private void warmUp(Path mnt, Path data, int files, long fileBytes, PrintStream log) throws Exception {
        Path set = mnt.resolve(ROOT.substring(1)).resolve("warmup");
        write(List.of(set), files, fileBytes, log);
        BenchL2Command.run(log, List.of("sync"));
        dropCaches(data, log);
        ObjectNode b = JSON.createObjectNode().put("job", WARMUP_JOB);
        b.putArray("paths").add(ROOT + "/warmup");
        long t0 = System.currentTimeMillis();
        b.put("deadline", Instant.ofEpochMilli(t0).plus(Duration.ofMinutes(10)).toString());
        NODES.forEach(b.putArray("nodes")::add);
        JsonNode h = call("POST", "/v1/hints", b);
        Followed f = new Followed(-1, WARMUP_JOB, h.path("id").asText());
        see(f, h);
        log.printf("%swarm-up: a hint on %s (%s), not measured%n", TAG, ROOT + "/warmup", DataSize.human((long) jobs * files * fileBytes));
        try {
            follow(List.of(f), t0, log);
        } finally {
            int code = send("POST", "/v1/jobs/" + WARMUP_JOB + "/end", null).statusCode();
            log.printf("%swarm-up: %s in %.1f s; job ended (HTTP %d)%n", TAG, f.state, (System.currentTimeMillis() - t0) / 1000.0, code);
        }
    }

    private void follow(List<Followed> hints, long submitted, PrintStream log) throws Exception {
        long last = hints.stream().mapToLong(f -> f.deadline).max().orElse(submitted);
        long said = System.nanoTime();
        while (hints.stream().anyMatch(f -> !f.settled())) {
            if (System.currentTimeMillis() > last + TimeUnit.MINUTES.toMillis(10)) {
                throw new IllegalStateException("hints not settled 10 minutes after the last deadline: " + progress(hints, submitted));
            }
            for (Followed f : hints) {
                if (!f.settled()) {
                    see(f, call("GET", "/v1/hints/" + f.id, null));
                }
            }
            if (System.nanoTime() - said >= TimeUnit.SECONDS.toNanos(5)) {
                log.printf("%sstaging, %.0f s: %s%n", TAG, (System.currentTimeMillis() - submitted) / 1000.0, progress(hints, submitted));
                said = System.nanoTime();
            }
            Thread.sleep(250);
        }
        log.printf("%ssettled, %.1f s: %s%n", TAG, (System.currentTimeMillis() - submitted) / 1000.0, progress(hints, submitted));
        for (Followed f : hints) {
            f.pickEta();
            StringBuilder sb = new StringBuilder();
            for (long[] e : f.estimates) {
                sb.append(String.format(Locale.ROOT, " %.1f:%.0f%%:%.1f", (e[0] - submitted) / 1000.0, e[1] / 1e4, (e[2] - submitted) / 1000.0));
            }
            log.printf("%s%s estimates (s after the submission: progress: ETA):%s; ready at %.1f s%n", TAG, f.name, sb,
                    (f.readyAt - submitted) / 1000.0);
            if (!f.state.equals("ready")) {
                log.printf("%shint %s of %s is %s: %s%n", TAG, f.id, f.name, f.state, f.message);
            }
        }
    }

    /** Takes in one answer of the API about {@code f}: its state, and the first ETA reported at 25-50% progress. */
    private static void see(Followed f, JsonNode h) {
        f.state = h.path("state").asText();
        f.message = h.path("message").asText();
        f.states.add(f.state);
        f.deadline = millis(h.path("deadline"));
        f.bytesTotal = h.path("bytes_total").asLong();
        f.readyAt = millis(h.path("ready_at"));
        double p = h.path("progress").asDouble();
        long eta = millis(h.path("eta"));
        long updated = millis(h.path("updated"));
        if (!f.settled() && eta > 0 && p > 0 && p < 1 && (f.estimates.isEmpty() || f.estimates.getLast()[0] != updated)) {
            f.estimates.add(new long[] {updated, Math.round(p * 1e6), eta});
        }
    }

    private static long millis(JsonNode n) {
        return n.isTextual() ? Instant.parse(n.asText()).toEpochMilli() : 0;
    }

    private static String progress(List<Followed> hints, long submitted) {
        StringBuilder sb = new StringBuilder();
        for (Followed f : hints) {
            sb.append(sb.isEmpty() ? "" : ", ").append(f.name).append(' ').append(f.state);
            if (f.readyAt > 0) {
                sb.append(String.format(Locale.ROOT, " at %.1f s", (f.readyAt - submitted) / 1000.0));
            }
        }
        return sb.toString();
    }

    private static String deadlines(List<Followed> hints, long submitted) {
        StringBuilder sb = new StringBuilder();
        for (Followed f : hints) {
            sb.append(sb.isEmpty() ? "" : ", ").append(f.name).append(String.format(Locale.ROOT, " %.0f s", (f.deadline - submitted) / 1000.0));
        }
        return sb + " after the submission";
    }

    /**
     * Submits a hint on the whole cold set (never hinted, so every chunk is an L3 read); once it is
     * staging with at least 10% done, times DELETE until it answers cancelled, then samples the
     * agents' fetched bytes every 20 ms for 3 s to see when they stopped growing.
     */
    private Cancel cancelTest(Path data, PrintStream log) throws Exception {
        BenchL2Command.run(log, List.of("sync"));
        dropCaches(data, log);
        ObjectNode b = JSON.createObjectNode().put("job", EXTRA_JOB);
        b.putArray("paths").add(ROOT + "/cold");
        NODES.forEach(b.putArray("nodes")::add);
        JsonNode h = call("POST", "/v1/hints", b);
        String id = h.path("id").asText();
        log.printf("%scancel: hint %s on %s/cold (%d files); waiting until it is staging with 10%% done%n", TAG, id, ROOT,
                h.path("files").asLong());
        long t0 = System.nanoTime();
        while (true) {
            h = call("GET", "/v1/hints/" + id, null);
            String st = h.path("state").asText();
            if (st.equals("ready") || st.equals("failed") || st.equals("cancelled")) {
                return new Cancel(Double.NaN, st, -1, h.path("progress").asDouble(), -1, Double.NaN, false, Double.NaN, Double.NaN,
                        "the extra hint was " + st + " before it could be cancelled");
            }
            if ((st.equals("staging") || st.equals("at-risk")) && h.path("progress").asDouble() >= 0.1) {
                break;
            }
            if (System.nanoTime() - t0 > TimeUnit.MINUTES.toNanos(5)) {
                throw new IllegalStateException("hint " + id + " did not get to 10% in 5 minutes: " + h);
            }
            Thread.sleep(20);
        }
        double progressAt = h.path("progress").asDouble();
        // the agents' fetched bytes every 20 ms, from 0.5 s before the DELETE until 3 s after its answer
        List<long[]> samples = Collections.synchronizedList(new ArrayList<>());
        AtomicLong stopAt = new AtomicLong(Long.MAX_VALUE);
        Thread sampler = new Thread(() -> {
            try {
                while (System.nanoTime() < stopAt.get()) {
                    long a = System.nanoTime();
                    long v = agentsSum(data, "strata_l2_prefetch_bytes");
                    samples.add(new long[] {(a + System.nanoTime()) / 2, v}); // when the two pages were read, give or take half the time it took
                    Thread.sleep(20);
                }
            } catch (InterruptedException | RuntimeException e) {
                // the test is over
            }
        }, "bench-prefetch-cancel-sampler");
        sampler.setDaemon(true);
        sampler.start();
        Thread.sleep(500);
        long c0 = System.nanoTime();
        JsonNode r = call("DELETE", "/v1/hints/" + id, null);
        long c1 = System.nanoTime();
        String answered = r.path("state").asText();
        stopAt.set(c1 + TimeUnit.SECONDS.toNanos(3));
        sampler.join();
        log.printf("%scancel: DELETE /v1/hints/%s at %.0f%% answered %s in %.1f ms%n", TAG, id, progressAt * 100, answered, (c1 - c0) / 1e6);
        List<long[]> ss = List.copyOf(samples);
        long atRequest = -1;
        long atRequestT = 0;
        long atAnswer = -1;
        long at1s = -1;
        long lastGrowth = c0;
        for (int i = 0; i < ss.size(); i++) {
            long t = ss.get(i)[0];
            long v = ss.get(i)[1];
            if (t <= c0) {
                atRequest = v;
                atRequestT = t;
            }
            if (t <= c1) {
                atAnswer = v;
            }
            if (t <= c1 + TimeUnit.SECONDS.toNanos(1)) {
                at1s = v;
            }
            if (i > 0 && v != ss.get(i - 1)[1] && t > c0) {
                lastGrowth = t;
            }
        }
        long last = ss.isEmpty() ? -1 : ss.getLast()[1];
        StringBuilder series = new StringBuilder();
        for (int i = 0; i < ss.size(); i++) {
            if (i == 0 || ss.get(i)[1] != ss.get(i - 1)[1] || i == ss.size() - 1) {
                series.append(String.format(Locale.ROOT, " %+.0f:%.0fMiB", (ss.get(i)[0] - c0) / 1e6, ss.get(i)[1] / 1048576.0));
            }
        }
        log.printf("%scancel: the agents' fetched bytes (ms after the request: bytes, at each change):%s%n", TAG, series);
        // the rate from the first sample (about 0.5 s before the request) to the last one before it
        double rateBefore = ss.isEmpty() || atRequest < 0 || atRequestT <= ss.getFirst()[0] ? Double.NaN
                : (atRequest - ss.getFirst()[1]) / 1e6 / ((atRequestT - ss.getFirst()[0]) / 1e9);
        double stopMs = (lastGrowth - c0) / 1e6;
        boolean within = at1s == last && lastGrowth <= c1 + TimeUnit.SECONDS.toNanos(1);
        double sampleMs = ss.size() < 2 ? Double.NaN : (ss.getLast()[0] - ss.getFirst()[0]) / 1e6 / (ss.size() - 1);
        double lastBeforeMs = (atRequestT - c0) / 1e6;
        String rate = Double.isNaN(rateBefore) ? "an unknown rate (one sample before the request)"
                : String.format(Locale.ROOT, "%.0f MB/s", rateBefore);
        log.printf("%scancel: the agents fetched %s before the request; %s from the last sample before it (%.0f ms) to the answer, "
                + "%s after the answer; growth last seen %.0f ms after the request (%d samples, one every %.0f ms); %s%n", TAG, rate,
                human(delta(atRequest, atAnswer)), lastBeforeMs, human(delta(atAnswer, last)), stopMs, ss.size(), sampleMs,
                within ? "no growth from 1 s to 3 s after the answer" : "STILL growing after 1 s");
        JsonNode after = call("GET", "/v1/hints/" + id, null);
        return new Cancel((c1 - c0) / 1e6, answered, delta(atRequest, atAnswer), progressAt, delta(atAnswer, last), stopMs, within,
                sampleMs, lastBeforeMs, "fetching " + rate + " before the request; the hint is "
                        + after.path("state").asText() + " with " + DataSize.human(after.path("bytes_done").asLong()) + " of "
                        + DataSize.human(after.path("bytes_total").asLong()) + " done");
    }

    // ---- the hooks API ----

    /** The token the hooks server is sent ({@code Authorization: Bearer}); none when the cluster runs without auth. */
    private Optional<String> bearer = Optional.empty();

    private HttpResponse<String> send(String method, String path, JsonNode body) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(hooks + path)).timeout(Duration.ofMinutes(2))
                .header("Content-Type", "application/json");
        bearer.ifPresent(t -> b.header("Authorization", "Bearer " + t));
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.toString()));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A request to the hooks server; an answer of 400 or more is an error with its message. */
    private JsonNode call(String method, String path, JsonNode body) throws IOException, InterruptedException {
        HttpResponse<String> r = send(method, path, body);
        if (r.statusCode() >= 400) {
            throw new IllegalStateException(method + " " + path + " answered " + r.statusCode() + ": " + r.body());
        }
        return JSON.readTree(r.body());
    }

    // ---- the daemons' figures ----

    /** Sums metric {@code name} (any labels) over the L2 agents' metrics pages. */
    private static long agentsSum(Path data, String name) {
        long sum = 0;
        for (String agent : NODES) {
            sum += scrape(data.resolve(agent), name, null);
        }
        return sum;
    }

    /** Counter {@code name} of the mount daemon. */
    private static long mountCounter(Path data, String name) {
        return scrape(data.resolve("mount"), name, null);
    }

    /** Chunk bytes the storage nodes (L3) served to readers so far ({@code strata_storage_bytes_total{op="read"}}). */
    private static long l3ReadBytes(Path data) {
        long sum = 0;
        try (var dirs = Files.list(data)) {
            for (Path d : dirs.filter(p -> p.getFileName().toString().startsWith("storage-")).sorted().toList()) {
                sum += scrape(d, "strata_storage_bytes_total", "op=\"read\"");
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list " + data + ": " + e.getMessage(), e);
        }
        return sum;
    }

    /**
     * The sum of the samples of metric {@code name} (with a label {@code label}, when not null) on
     * the metrics page of the daemon whose ready file is in {@code daemonDir}.
     */
    private static long scrape(Path daemonDir, String name, String label) {
        return (long) scrapeSum(daemonDir, name, label);
    }

    /** As {@link #scrape}, unrounded. */
    static double scrapeSum(Path daemonDir, String name, String label) {
        Properties p = new Properties();
        try (Reader in = Files.newBufferedReader(daemonDir.resolve(DaemonRuntime.READY_FILE))) {
            p.load(in);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + daemonDir.resolve(DaemonRuntime.READY_FILE) + ": " + e.getMessage(), e);
        }
        String m = p.getProperty("metrics");
        if (m == null) {
            throw new IllegalStateException(daemonDir.getFileName() + " has no metrics endpoint");
        }
        String text;
        try {
            HttpResponse<String> r = METRICS_HTTP.send(HttpRequest.newBuilder(BenchFsRunCommand.metricsUri(m))
                    .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
            text = r.body();
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the metrics of " + daemonDir.getFileName() + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
        double sum = 0;
        for (String line : text.split("\n")) {
            if (line.startsWith("#") || !line.startsWith(name)) {
                continue;
            }
            int brace = line.indexOf('{');
            int end = brace >= 0 ? brace : line.indexOf(' ');
            if (end < 0 || !line.substring(0, end).equals(name)) {
                continue;
            }
            if (label != null && (brace < 0 || !line.substring(brace, line.lastIndexOf('}')).contains(label))) {
                continue;
            }
            String[] parts = line.substring(brace >= 0 ? line.lastIndexOf('}') + 1 : end).strip().split("\\s+");
            sum += Double.parseDouble(parts[0]);
        }
        return sum;
    }


    private static long delta(long before, long after) {
        return before < 0 || after < 0 ? -1 : after - before;
    }

    private static String human(long bytes) {
        return bytes < 0 ? "unknown" : DataSize.human(bytes);
    }

    // ---- the report ----

    private void print(Map<Integer, Epoch> cold, Map<Integer, Epoch> warm, List<Followed> hints, long submitted, long unionBytes,
                       long datasetBytes, long fileBytes, long egress, long fetches, long l3DuringStaging, long pinned,
                       double stagingSeconds, String stagingCpu, Cancel cancel, long bad) {
        PrintStream out = System.out;
        out.printf("strata bench prefetch: %d jobs x %s in files of %s; job i reads segments i and i+1 (mod %d) of %s each: "
                + "union %s, %s hinted in all; %d readers per epoch, 1 MiB reads, shuffled file order%n", jobs,
                DataSize.human(datasetBytes), DataSize.human(fileBytes), jobs, DataSize.human(datasetBytes / 2), DataSize.human(unionBytes),
                DataSize.human(jobs * datasetBytes), readers);
        out.println("hints: submitted together, nodes l2-1 and l2-2; ETA = the first one a hint reported at 25-50% progress (else the "
                + "nearest to 37.5% within 10-90%) at least " + JUDGED_AHEAD_MS + " ms before it was ready (n/a: none), error = |eta - ready_at| "
                + "/ (ready_at - when it was computed)");
        Table h = new Table("job", "segments", "bytes", "deadline (s)", "ready at (s)", "before deadline", "states seen", "ETA at",
                "ETA said (s)", "ETA error");
        for (Followed f : hints) {
            double err = f.etaError();
            h.row(f.name, f.job + "," + (f.job + 1) % jobs, DataSize.human(f.bytesTotal), sec(f.deadline - submitted),
                    f.readyAt > 0 ? sec(f.readyAt - submitted) : f.state, readyInTime(f) ? "yes" : "NO", String.join(">", f.states),
                    f.etaProgress < 0 ? "-" : String.format(Locale.ROOT, "%.0f%% at %s s", f.etaProgress * 100, sec(f.etaAt - submitted)),
                    f.etaProgress < 0 ? "-" : sec(f.etaPredicted - submitted), Double.isNaN(err) ? "n/a" : fmt(err));
        }
        h.print(out);
        out.printf("staging: every hint settled %s s after the submission; the agents fetched %s from L3 (%d chunks) for a union of %s "
                + "(%s MB/s); the storage nodes served %s meanwhile; %d chunks pinned after; CPU s meanwhile: %s%n", fmt(stagingSeconds),
                human(egress), fetches, DataSize.human(unionBytes), fmt(egress / 1e6 / stagingSeconds), human(l3DuringStaging), pinned,
                stagingCpu);
        out.println("epochs: each job's dataset read once, the mount's L1 and the page cache emptied before each; cold = a second set "
                + "of the same shape, never hinted (no prefetch record: read from L3)");
        Table e = new Table("job", "cold (s)", "cold MB/s", "cold: from L3", "first epoch (s)", "first epoch MB/s", "from L3",
                "L2 reads", "L1 blocks", "CPU s (first epoch)");
        for (Map.Entry<Integer, Epoch> c : cold.entrySet()) {
            Epoch w = warm.get(c.getKey());
            Epoch k = c.getValue();
            e.row("job-" + c.getKey(), fmt(k.seconds()), mbps(k), human(k.l3Bytes()), w == null ? "-" : fmt(w.seconds()),
                    w == null ? "-" : mbps(w), w == null ? "-" : human(w.l3Bytes()), w == null ? "-" : w.l2Hits(),
                    w == null ? "-" : w.l1Hits(), w == null ? "-" : w.cpu());
        }
        Epoch coldAll = sum(cold);
        Epoch warmAll = sum(warm);
        e.row("all", fmt(coldAll.seconds()), mbps(coldAll), human(coldAll.l3Bytes()), fmt(warmAll.seconds()), mbps(warmAll),
                human(warmAll.l3Bytes()), warmAll.l2Hits(), warmAll.l1Hits(), "-");
        e.print(out);
        out.printf("cold epochs: L2 reads %d, L1 blocks %d; CPU s of the cold epochs: %s%n", coldAll.l2Hits(), coldAll.l1Hits(),
                cold.values().stream().map(Epoch::cpu).toList());
        if (cancel != null && !Double.isNaN(cancel.cancelMs())) {
            out.printf("cancel: DELETE of a hint on the cold set at %.0f%% answered %s in %.1f ms; the agents' fetched bytes (sampled every "
                    + "%.0f ms) grew %s from the last sample before the request (%.0f ms) to the answer and %s after the answer; growth last "
                    + "seen %.0f ms after the request, %s; %s%n", cancel.progressAtCancel() * 100, cancel.answered(), cancel.cancelMs(),
                    cancel.sampleMs(), DataSize.human(cancel.bytesAtCancel()), cancel.lastBeforeMs(), DataSize.human(cancel.growthAfter()),
                    cancel.stopMs(), cancel.stoppedWithin1s() ? "none from 1 s to 3 s after the answer" : "STILL growing 1 s after the answer",
                    cancel.note());
        } else if (cancel != null) {
            out.println("cancel: " + cancel.note());
        }
        if (bad > 0) {
            out.println("READ ERRORS: " + bad + " blocks or files were not what was written");
        }

        double egressRatio = egress < 0 ? Double.NaN : egress / (double) unionBytes;
        long inTime = hints.stream().filter(BenchPrefetchCommand::readyInTime).count();
        double readyFraction = hints.isEmpty() ? Double.NaN : inTime / (double) hints.size();
        double etaWorst = hints.stream().mapToDouble(Followed::etaError).filter(d -> !Double.isNaN(d)).max().orElse(Double.NaN);
        double epochRatio = warm.isEmpty() || cold.isEmpty() ? Double.NaN : warmAll.mbps() / coldAll.mbps();
        boolean cancelled = cancel != null && !Double.isNaN(cancel.cancelMs()) && cancel.answered().equals("cancelled");
        out.printf("floor: L3 bytes fetched / union <= 1.05 (l3_egress_vs_unique): %s: %s%n", num(egressRatio),
                egressRatio <= 1.05 ? "met" : "NOT met");
        out.printf("floor: hints ready before their deadline (ready_before_deadline): %d of %d%n", inTime, hints.size());
        double etaAny = hints.stream().mapToDouble(Followed::etaErrorUnjudged).filter(d -> !Double.isNaN(d)).max().orElse(Double.NaN);
        out.printf("floor: worst ETA error at 25-50%% <= 0.10 (eta_error): %s: %s (with estimates made under %d ms before ready too: %s)%n",
                num(etaWorst), etaWorst <= 0.10 ? "met" : "NOT met", JUDGED_AHEAD_MS, num(etaAny));
        out.printf("floor: first epoch >= 3x cold (first_epoch_vs_cold): %s: %s%n", num(epochRatio), epochRatio >= 3 ? "met" : "NOT met");
        out.printf("floor: cancel answered and fetching stopped within 1 s (cancel_ms, cancel_stop_ms): %s%n", !cancelled ? "n/a: NOT met"
                : fmt(cancel.cancelMs()) + " ms, fetching stopped " + String.format(Locale.ROOT, "%.0f", cancel.stopMs()) + " ms after the request: "
                        + (cancel.cancelMs() <= 1000 && cancel.stoppedWithin1s() && cancel.stopMs() <= 1000 ? "met" : "NOT met"));
        StringBuilder r = new StringBuilder("result:");
        r.append(" l3_egress_vs_unique=").append(num(egressRatio));
        r.append(" ready_before_deadline=").append(num(readyFraction));
        r.append(" eta_error=").append(num(etaWorst));
        r.append(" first_epoch_vs_cold=").append(num(epochRatio));
        r.append(" cancel_ms=").append(cancelled ? String.format(Locale.ROOT, "%.0f", cancel.cancelMs()) : "n/a");
        r.append(" cancel_stop_ms=").append(cancelled ? String.format(Locale.ROOT, "%.0f", cancel.stopMs()) : "n/a");
        r.append(" cancel_bytes_after=").append(cancelled ? Long.toString(cancel.growthAfter()) : "n/a");
        r.append(" staging_s=").append(fmt(stagingSeconds));
        r.append(" cold_mbps=").append(mbps(coldAll));
        r.append(" first_epoch_mbps=").append(mbps(warmAll));
        r.append(" first_epoch_l3_bytes=").append(warmAll.l3Bytes());
        r.append(" l2_reads=").append(warmAll.l2Hits());
        r.append(" bad=").append(bad);
        r.append(" eta_error_any=").append(num(etaAny));
        out.println(r);
        out.flush();
    }

    private static boolean readyInTime(Followed f) {
        return f.readyAt > 0 && f.deadline > 0 && f.readyAt <= f.deadline;
    }

    private static Epoch sum(Map<Integer, Epoch> m) {
        double s = 0;
        long bytes = 0;
        long l3 = 0;
        long hits = 0;
        long l1 = 0;
        long bad = 0;
        for (Epoch e : m.values()) {
            s += e.seconds();
            bytes += e.bytes();
            l3 = l3 < 0 || e.l3Bytes() < 0 ? -1 : l3 + e.l3Bytes();
            hits = hits < 0 || e.l2Hits() < 0 ? -1 : hits + e.l2Hits();
            l1 = l1 < 0 || e.l1Hits() < 0 ? -1 : l1 + e.l1Hits();
            bad += e.bad();
        }
        return new Epoch(s, bytes, l3, hits, l1, bad, "-");
    }

    private static String sec(long millis) {
        return String.format(Locale.ROOT, "%.1f", millis / 1000.0);
    }

    private static String mbps(Epoch e) {
        return e.seconds() > 0 ? String.format(Locale.ROOT, "%.0f", e.mbps()) : "n/a";
    }

    private static String num(double d) {
        return Double.isNaN(d) ? "n/a" : fmt(d);
    }
}
