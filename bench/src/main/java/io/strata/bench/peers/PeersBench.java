package io.strata.bench.peers;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

/**
 * {@code strata bench peers}: the fio suite of {@code bench/fio/} on a Strata cluster and on
 * MooseFS side by side, with a plain local directory and tmpfs as the physical limits.
 *
 * <p>Design: everything runs on this machine. MooseFS 3.0 (Debian's packages, installed with
 * apt-get when missing) is started by {@code bench/peers/moosefs.sh} in a private network
 * namespace (master, 3 chunkservers, goal 3, chunk files fsynced before close, a client mount
 * visible here); Strata by {@code strata up} in a fresh data directory (cluster manager, meta
 * service, 3 storage nodes with 3-replica chains, a FUSE mount), each daemon its own process.
 * Both are stopped by PID ({@code moosefs.sh down}, {@code strata down}) in a finally block and
 * in a shutdown hook, so an interrupted run leaves no mount, process or namespace behind.
 *
 * <p>The workloads run round-robin: each workload runs on every system before the next one
 * starts (the order of systems rotates from workload to workload and from round to round), so
 * that background noise on this shared machine hits all systems alike. With {@code --rounds N}
 * the whole sequence runs N times on the same clusters and the table gives each figure's median;
 * the first round is also the one where Strata's JVMs compile their hot paths. Before the
 * cold-read workloads the page cache is dropped ({@code sync; echo 3 > /proc/sys/vm/drop_caches}).
 *
 * <p>Run {@code strata bench peers [--quick] [--no-l1] [--only W,...] [--rounds N] [--dir DIR]};
 * the last line is {@code result: <figure>_vs_moosefs=<ratio> ...}.
 */
public final class PeersBench {
    /**
     * @param home      the Strata checkout (bench/fio and bench/peers are read from it)
     * @param launcher  the {@code strata} launcher used to start and stop the cluster
     * @param dir       where the work directory goes (MooseFS and Strata data, the local-disk system)
     * @param tmpfs     where the tmpfs system's directory goes ({@code /dev/shm})
     * @param sizes     fio sizes: FIO_WRITERS, FIO_SHARD, FIO_DATASET, FIO_RUNTIME, FIO_FILES
     * @param workloads what to run, in order
     * @param l1        mount Strata with its L1 cache (memory + local disk), as {@code strata up} does by default
     * @param fioTimeout a fio run taking longer is killed and recorded as failed
     * @param keep      keep the work directory's logs and fio JSON reports (the data is removed)
     * @param moosefsNice nice level of MooseFS's daemons and mount (MooseFS's own default is -19; 0 is
     *                  the level Strata's processes run at)
     * @param rounds    how many times every workload runs on every system; with more than one the
     *                  table and the result line give each figure's median over the rounds
     */
    public record Options(Path home, Path launcher, Path dir, Path tmpfs, Map<String, String> sizes, List<Workload> workloads,
                          boolean l1, Duration fioTimeout, boolean keep, int moosefsNice, int rounds) {
        public static Map<String, String> defaultSizes(boolean quick) {
            Map<String, String> m = new LinkedHashMap<>();
            m.put("FIO_WRITERS", "4");
            m.put("FIO_SHARD", quick ? "64M" : "256M");
            m.put("FIO_DATASET", quick ? "128M" : "512M");
            m.put("FIO_RUNTIME", quick ? "5" : "15");
            m.put("FIO_FILES", quick ? "200" : "500");
            return m;
        }
    }

    private final Options o;
    private final PrintStream out;
    private final Path work;
    private final Path tmpfsDir;
    private final AtomicBoolean tornDown = new AtomicBoolean();
    private volatile Process current;
    private boolean mfsUp;
    private boolean strataUp;

    private PeersBench(Options o, PrintStream out) throws IOException {
        this.o = o;
        this.out = out;
        Files.createDirectories(o.dir());
        this.work = Files.createTempDirectory(o.dir(), "strata-peers-");
        this.tmpfsDir = Files.createTempDirectory(o.tmpfs(), "strata-peers-");
    }

    public static PeersReport run(Options o, PrintStream out) throws Exception {
        return new PeersBench(o, out).run();
    }

    private PeersReport run() throws Exception {
        Thread hook = new Thread(this::teardown, "bench-peers-teardown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            ensureTools();
            out.println("strata bench peers: " + Machine.describe(work));
            out.println("fio sizes: " + o.sizes() + "; work directory " + work + ", tmpfs " + tmpfsDir);
            Path mfsMount = work.resolve("moosefs-mnt");
            Path strataData = work.resolve("strata");
            out.println("starting MooseFS (master + 3 chunkservers in netns, goal 3, HDD_FSYNC_BEFORE_CLOSE=1, nice "
                    + o.moosefsNice() + ")...");
            mfsUp = true;
            execEnv(Map.of("MFS_NICE", String.valueOf(o.moosefsNice())),
                    List.of("bash", o.home().resolve("bench/peers/moosefs.sh").toString(), "up", work.resolve("moosefs").toString(),
                    mfsMount.toString()), work.resolve("moosefs-up.log"), Duration.ofMinutes(2));
            out.println("starting Strata (strata up: cluster manager, meta, 3 storage nodes, 3-replica chains, FUSE mount"
                    + (o.l1() ? " with L1" : " without L1") + ")...");
            strataUp = true;
            List<String> up = new ArrayList<>(List.of(o.launcher().toString(), "up", "--data", strataData.toString()));
            if (!o.l1()) {
                up.add("--no-l1");
            }
            exec(up, work.resolve("strata-up.log"), Duration.ofMinutes(4));

            Map<String, Path> systems = new LinkedHashMap<>();
            systems.put(PeersReport.MOOSEFS, mfsMount.resolve("bench"));
            systems.put(PeersReport.STRATA, strataData.resolve("mnt").resolve("bench"));
            systems.put("local", work.resolve("local").resolve("bench"));
            systems.put("tmpfs", tmpfsDir.resolve("bench"));
            for (Path p : systems.values()) {
                for (int i = 0; i < 4; i++) {
                    Files.createDirectories(p.resolve("sf" + i));
                }
            }
            List<String> names = new ArrayList<>(systems.keySet());
            List<PeersReport> rounds = new ArrayList<>();
            for (int round = 0; round < o.rounds(); round++) {
                if (o.rounds() > 1) {
                    out.println("round " + (round + 1) + " of " + o.rounds() + ":");
                }
                PeersReport r = new PeersReport(names);
                for (int wi = 0; wi < o.workloads().size(); wi++) {
                    Workload w = o.workloads().get(wi);
                    for (int k = 0; k < names.size(); k++) {
                        String sys = names.get((round + wi + k) % names.size());
                        runOne(r, w, sys, systems.get(sys), round);
                    }
                }
                rounds.add(r);
            }
            PeersReport report = PeersReport.median(rounds);
            out.println();
            if (o.rounds() > 1) {
                for (int i = 0; i < rounds.size(); i++) {
                    out.println("round " + (i + 1) + " " + rounds.get(i).resultLine());
                }
                out.println("median of the " + o.rounds() + " rounds, per system:");
            }
            report.printTable(out);
            out.println("strata/moosefs > 1 means Strata is faster. MooseFS ran at nice " + o.moosefsNice()
                    + " (its own default is -19), Strata at 0; local = this disk's file system, tmpfs = /dev/shm.");
            out.println(report.resultLine());
            return report;
        } finally {
            teardown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // shutting down: the hook runs (and finds the work done)
            }
        }
    }

    private void runOne(PeersReport report, Workload w, String sys, Path dir, int round) throws Exception {
        if (w.cold) {
            dropCaches();
        }
        String name = "fio-" + w.file + "-" + sys + (o.rounds() > 1 ? "-r" + (round + 1) : "");
        Path json = work.resolve(name + ".json");
        Path log = work.resolve(name + ".log");
        List<String> cmd = w.script == null
                ? List.of("fio", "--output-format=json", "--output=" + json, o.home().resolve("bench/fio/" + w.file + ".fio").toString())
                : List.of("python3", o.home().resolve(w.script).toString(), dir.toString(), o.sizes().get("FIO_FILES"), json.toString());
        Map<String, String> env = new LinkedHashMap<>(o.sizes());
        env.put("FIO_DIR", dir.toString());
        long t0 = System.nanoTime();
        int rc = run(cmd, env, log, o.fioTimeout());
        double secs = (System.nanoTime() - t0) / 1e9;
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-18s %-8s %5.1f s ", w.file, sys, secs));
        if (rc != 0 || !Files.exists(json)) {
            report.failed(sys, w);
            line.append("FAILED (exit ").append(rc).append(", see ").append(log).append(')');
        } else {
            if (w.script == null) {
                report.add(sys, w, FioJson.parse(Files.readString(json)));
            } else {
                report.addValues(sys, w, OneWorkerJson.parse(Files.readString(json)));
            }
            for (Workload.Figure f : w.figures) {
                line.append(' ').append(f.job()).append('=').append(PeersReport.format(report.value(f, sys))).append(' ').append(f.unit().label);
            }
        }
        out.println(line);
    }

    private void ensureTools() throws Exception {
        List<String> missing = new ArrayList<>();
        if (!onPath("fio")) {
            missing.add("fio");
        }
        if (!onPath("mfsmaster") || !onPath("mfschunkserver") || !onPath("mfsmount") || !onPath("mfscli")) {
            missing.addAll(List.of("moosefs-master", "moosefs-chunkserver", "moosefs-client", "moosefs-cli"));
        }
        if (missing.isEmpty()) {
            return;
        }
        out.println("installing " + missing + " from Debian's packages (apt-get)...");
        List<String> cmd = new ArrayList<>(List.of("apt-get", "install", "-y", "--no-install-recommends"));
        cmd.addAll(missing);
        Map<String, String> env = Map.of("DEBIAN_FRONTEND", "noninteractive");
        if (run(cmd, env, work.resolve("apt.log"), Duration.ofMinutes(10)) != 0) {
            throw new IllegalStateException("apt-get install " + missing + " failed; see " + work.resolve("apt.log"));
        }
    }

    private static boolean onPath(String bin) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(d, bin))) {
                return true;
            }
        }
        return Files.isExecutable(Path.of("/usr/sbin", bin)) || Files.isExecutable(Path.of("/sbin", bin));
    }

    private void dropCaches() throws Exception {
        run(List.of("sync"), Map.of(), work.resolve("sync.log"), Duration.ofMinutes(2));
        Path p = Path.of("/proc/sys/vm/drop_caches");
        if (Files.isWritable(p)) {
            Files.writeString(p, "3");
        }
    }

    private void exec(List<String> cmd, Path log, Duration timeout) throws Exception {
        execEnv(Map.of(), cmd, log, timeout);
    }

    private void execEnv(Map<String, String> extraEnv, List<String> cmd, Path log, Duration timeout) throws Exception {
        Map<String, String> env = new LinkedHashMap<>(extraEnv);
        env.put("STRATA_NO_BUILD", "1");
        int rc = run(cmd, env, log, timeout);
        if (rc != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed (exit " + rc + "):\n" + tail(log));
        }
    }

    /** Runs a child process with its output in {@code log}; kills it after {@code timeout} (exit code -1). */
    private int run(List<String> cmd, Map<String, String> env, Path log, Duration timeout) throws Exception {
        return run(cmd, env, log, timeout, false);
    }

    /**
     * As above; once the teardown has begun only the teardown's own commands start ({@code
     * teardown} true), so that the main thread cannot start a fio after the shutdown hook
     * killed the last one.
     */
    private int run(List<String> cmd, Map<String, String> env, Path log, Duration timeout, boolean teardown) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        Process p;
        synchronized (this) {
            if (tornDown.get() && !teardown) {
                throw new IllegalStateException("bench peers is stopping");
            }
            p = pb.start();
            if (!teardown) {
                current = p;
            }
        }
        try {
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly().waitFor();
                return -1;
            }
            return p.exitValue();
        } finally {
            if (!teardown) {
                current = null;
            }
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** Stops fio, Strata and MooseFS by PID, then removes the data; runs once (finally or shutdown hook). */
    private void teardown() {
        Process p;
        synchronized (this) {
            if (!tornDown.compareAndSet(false, true)) {
                return;
            }
            p = current;
        }
        if (p != null) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        List<String> problems = new ArrayList<>();
        if (strataUp) {
            problems.addAll(stop(List.of(o.launcher().toString(), "down", "--data", work.resolve("strata").toString()), "strata-down.log"));
        }
        if (mfsUp) {
            problems.addAll(stop(List.of("bash", o.home().resolve("bench/peers/moosefs.sh").toString(), "down", work.resolve("moosefs").toString()),
                    "moosefs-down.log"));
        }
        List<String> mounted = Machine.mountsUnder(work);
        for (String m : mounted) {
            // a mount whose daemon was killed before it could be stopped (an interrupted start)
            problems.addAll(stop(List.of("umount", "-l", m), "umount.log"));
        }
        mounted = Machine.mountsUnder(work);
        if (!mounted.isEmpty()) {
            out.println("bench peers: still mounted, left in place: " + mounted + " (work directory " + work + " kept)");
        } else if (problems.isEmpty() && !o.keep()) {
            delete(work);
        } else if (problems.isEmpty()) {
            for (String d : List.of("moosefs", "strata", "local")) {
                delete(work.resolve(d));
            }
            out.println("bench peers: logs and fio reports kept in " + work);
        } else {
            out.println("bench peers: " + String.join("; ", problems) + " (work directory " + work + " kept)");
        }
        delete(tmpfsDir);
    }

    private List<String> stop(List<String> cmd, String logName) {
        try {
            int rc = run(cmd, Map.of("STRATA_NO_BUILD", "1"), work.resolve(logName), Duration.ofMinutes(2), true);
            return rc == 0 ? List.of() : List.of(String.join(" ", cmd) + " exited " + rc + ", see " + work.resolve(logName));
        } catch (Exception e) {
            return List.of(String.join(" ", cmd) + ": " + e);
        }
    }

    private static void delete(Path root) {
        try (Stream<Path> s = Files.walk(root)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // best effort: a temp directory
        }
    }
}
