package io.strata.cli;

import static io.strata.cli.BenchL2Command.dropCaches;
import static io.strata.cli.BenchL2Command.fmt;
import static io.strata.cli.BenchL2Command.ratio;
import static io.strata.cli.BenchL2Command.readShards;
import static io.strata.cli.BenchL2Command.run;
import static io.strata.cli.BenchL2Command.strata;
import static io.strata.cli.BenchL2Command.which;
import static io.strata.cli.BenchL2Command.writeShards;

import io.strata.bench.Table;
import io.strata.bench.fs.Counters;
import io.strata.cli.BenchL2Command.Run;
import io.strata.core.DataSize;
import io.strata.fuse.PathXattrs;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata bench ckpt}: what a trainer waits for when it saves a checkpoint generation, and
 * how fast it comes back. Starts the embedded cluster ({@code strata up}: two L2 agents, three
 * storage nodes, the FUSE mount) and has {@code --writers} processes, like trainer ranks, each
 * save a shard (1 MiB writes, fsync, close: {@code dd bs=1M conv=fsync}) into a generation of a
 * checkpoint root ({@code profile=checkpoint}: staged in L2, durability l2), which is then
 * committed through the mount ({@code setxattr user.strata.ckpt.commit}) at {@code l2}; then the
 * same into a generation of a second root that never stages in L2 ({@code profile=checkpoint
 * tiers.l2=off durability=l3}, committed at l3: the plain L3 path, with the same stripes and
 * QoS); then on MooseFS (when installed) with the write-fsync-rename convention. An untimed
 * generation goes through each path first (of the measured size into the staged root). The stall
 * is from the first writer's start until the commit returned; time to L3 until the generation's
 * status says {@code durability=l3}. Restores: {@code strata ckpt stage} of the staged root's
 * latest generation, then {@code --writers} readers read it from the L2 agents' copies; cold: the
 * same from the root that never staged, whose bytes are only in L3. The L1 cache and the page
 * cache are emptied before each restore, and the L1 blocks served during it are counted. The CPU
 * time the mount, the L2 agents, the storage nodes and the meta service used during each stall
 * and each restore is reported, to show which of them a phase was waiting on.
 * Last line: {@code result: stall_l2_vs_moosefs=... stall_l2_vs_l3=... time_to_l3_s=...
 * restore_staged_vs_cold=... stall_l2_s=... stall_l3_s=... stall_moosefs_s=... restore_staged_mbps=...
 * restore_cold_mbps=... l1_hits=...}.
 */
@Command(name = "ckpt", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench ckpt", "  strata bench ckpt --writers 4 --shard 128MiB --no-moosefs"},
        description = {"Checkpoint generations: the trainer's stall committing at l2 vs straight to L3 vs MooseFS (write, fsync, "
                + "rename), time to durable in L3, restore after `strata ckpt stage` vs cold from L3.", "",
                "Floors: the stall at l2 at most 1/3 of MooseFS's; a restore after staging at least 2x a cold restore."})
final class BenchCkptCommand implements Callable<Integer> {
    private static final String TAG = "strata bench ckpt: ";
    private static final String COMMIT = "user.strata.ckpt.commit";
    private static final String STATUS = "user.strata.ckpt.status";
    private static final String LATEST = "user.strata.ckpt.latest";
    /** The staged root (profile=checkpoint: tiers.l2=stage durability=l2) and the root that never stages. */
    private static final String STAGED_ROOT = "ckpt";
    private static final String COLD_ROOT = "ckpt-l3only";
    /** How often a long phase prints where it is. */
    private static final long PROGRESS_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** The daemons whose CPU time is reported, by kind (the L2 agents l2-1 and l2-2 are "l2"). */
    private static final List<String> CPU_KINDS = List.of("mount", "l2", "storage", "meta");

    @Option(names = "--writers", defaultValue = "8", description = "Writer (and reader) processes, 1..64 (default ${DEFAULT-VALUE}).")
    int writers;

    @Option(names = "--shard", defaultValue = "256MiB", description = "Bytes each writer saves, a whole number of MiB (default ${DEFAULT-VALUE}).")
    String shard;

    @Option(names = "--no-moosefs", description = "Leave MooseFS out even when it is installed.")
    boolean noMoosefs;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where the temporary data directory goes (default: the temp directory).")
    Path dir;

    /** One save: writes and closes, then the commit (or MooseFS's rename); time to durable in L3; all from the first writer's start. */
    record Save(String name, String what, String level, double writeSeconds, double stallSeconds, double l3Seconds, long bytes,
                String cpu) {
        double commitSeconds() {
            return stallSeconds - writeSeconds;
        }

        Run stall() {
            return new Run(stallSeconds, bytes);
        }
    }

    /**
     * One restore: the readers' run, the bytes the storage nodes served meanwhile, the blocks the
     * mount's L1 served (-1: unknown), the CPU time Strata's daemons used meanwhile.
     */
    record Restore(Run run, long l3Bytes, long l1Hits, String cpu) {
    }

    @Override
    public Integer call() throws Exception {
        if (writers < 1 || writers > 64) {
            throw new IllegalArgumentException("--writers must be between 1 and 64, got " + writers);
        }
        long shardBytes;
        try {
            shardBytes = DataSize.parse(shard).bytes();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--shard: " + e.getMessage());
        }
        if (shardBytes < (1 << 20) || shardBytes % (1 << 20) != 0) {
            throw new IllegalArgumentException("--shard must be a whole number of MiB, at least 1MiB, got " + shard);
        }
        int mib = (int) (shardBytes >> 20);
        long total = writers * shardBytes;
        Path home = Path.of(System.getProperty("strata.home", ".")).toAbsolutePath();
        Path parent = (dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"))).toAbsolutePath().normalize();
        Files.createDirectories(parent);
        Path work = Files.createTempDirectory(parent, "strata-bench-ckpt-");
        PrintStream log = System.err;
        Map<String, Save> saves = new LinkedHashMap<>();
        Map<String, Restore> restores = new LinkedHashMap<>();
        Optional<Path> mfs = Optional.empty();
        Thread mfsDown = null;
        String noMfsWhy = null;
        String l1 = "?";
        String stageReport = "";
        double stageSeconds = Double.NaN;
        String latest = "?";
        try (BenchFsCluster cluster = BenchFsCluster.up(work.resolve("data"), log)) {
            Path mnt = cluster.mount.orElseThrow(() -> new IllegalStateException("strata bench ckpt needs the FUSE mount: "
                    + cluster.noMount.orElse("no mount")));
            Path data = cluster.data;
            String d = data.toString();
            Path staged = Files.createDirectories(mnt.resolve(STAGED_ROOT));
            Path cold = Files.createDirectories(mnt.resolve(COLD_ROOT));
            strata(log, "policy", "set", "--data", d, "/" + STAGED_ROOT, "profile=checkpoint");
            strata(log, "policy", "set", "--data", d, "/" + COLD_ROOT, "profile=checkpoint", "tiers.l2=off", "durability=l3");
            String stagedPolicy = effective(strata(log, "policy", "get", "--data", d, "/" + STAGED_ROOT));
            String coldPolicy = effective(strata(log, "policy", "get", "--data", d, "/" + COLD_ROOT));
            log.println(TAG + "/" + STAGED_ROOT + ": " + stagedPolicy);
            log.println(TAG + "/" + COLD_ROOT + ": " + coldPolicy);
            if (!coldPolicy.contains("tiers.l2=off") || !coldPolicy.contains("durability=l3")) {
                throw new IllegalStateException("/" + COLD_ROOT + " does not have tiers.l2=off durability=l3 under profile=checkpoint: "
                        + coldPolicy);
            }
            l1 = l1Size(mnt, data);
            if (!noMoosefs && which("mfsmaster")) {
                Path m = work.resolve("mfs-mnt");
                // stopped by the finally below, or by this hook when the bench is interrupted (moosefs.sh down stops what its up
                // recorded, by PID, and removes the network namespace, also after an up that failed half-way)
                mfsDown = new Thread(() -> stopMoosefs(home, work, log), "bench-ckpt-moosefs-down");
                Runtime.getRuntime().addShutdownHook(mfsDown);
                // at nice 0, the level Strata's processes run at (MooseFS raises itself to -19 by default), as bench peers does
                run(log, List.of("env", "MFS_NICE=0", "bash", home.resolve("bench/peers/moosefs.sh").toString(), "up",
                        work.resolve("mfs").toString(), m.toString()));
                mfs = Optional.of(m);
            } else {
                noMfsWhy = noMoosefs ? "left out (--no-moosefs)" : "not installed";
                log.println(TAG + "MooseFS is " + noMfsWhy + (noMoosefs ? ""
                        : " (apt-get install moosefs-master moosefs-chunkserver moosefs-client moosefs-cli)"));
            }

            log.printf("%s%d writers x %s = %s per generation; the mount's L1: %s (emptied before each restore)%n", TAG, writers,
                    DataSize.human(shardBytes), DataSize.human(total), l1);
            // Untimed warm-up, so that no measured save pays for a fresh cluster's first writes (JIT, new chunk files, the first
            // drain). The staged root gets a generation of the measured size, drained to L3 and kept: the L2 agents then hold a
            // drained generation, as they would in a training run, and evict it if the measured one needs the room. The other
            // roots get a small one.
            int warmMib = Math.min(mib, 16);
            log.printf("%swarm-up (not measured): %d writers x %s into /%s, %d MiB each into the others%n", TAG, writers,
                    DataSize.human(shardBytes), STAGED_ROOT, warmMib);
            save(staged.resolve("warmup"), "warm-up", "l2", "/" + STAGED_ROOT + "/warmup", mib, shardBytes, data, log);
            save(cold.resolve("warmup"), "warm-up", "l3", "/" + COLD_ROOT + "/warmup", warmMib, (long) warmMib << 20, data, log);
            if (mfs.isPresent()) {
                saveRenamed(mfs.get(), "warmup", warmMib, (long) warmMib << 20, log);
            }

            saves.put("l2", save(staged.resolve("step-1"), "l2", "l2", "/" + STAGED_ROOT + "/step-1 (staged in L2)", mib, shardBytes,
                    data, log));
            saves.put("l3", save(cold.resolve("step-1"), "l3", "l3", "/" + COLD_ROOT + "/step-1 (tiers.l2=off: L3 only)", mib,
                    shardBytes, data, log));
            if (mfs.isPresent()) {
                saves.put("moosefs", saveRenamed(mfs.get(), "step-1", mib, shardBytes, log));
            }

            latest = new String(PathXattrs.get(staged, LATEST), StandardCharsets.UTF_8).strip();
            log.printf("%sstaging the latest generation of /%s (%s): strata ckpt stage%n", TAG, STAGED_ROOT, latest);
            long s0 = System.nanoTime();
            stageReport = strata(log, "ckpt", "stage", "--data", d, "/" + STAGED_ROOT).lines()
                    .filter(l -> !l.startsWith("  ")).reduce("", (a, b) -> b).strip();
            stageSeconds = (System.nanoTime() - s0) / 1e9;
            log.println(TAG + stageReport);

            restores.put("staged", restore("staged", staged.resolve(latest), mnt, data, shardBytes, log));
            restores.put("cold", restore("cold", cold.resolve("step-1"), mnt, data, shardBytes, log));
            if (mfs.isPresent()) {
                restores.put("moosefs", restore("moosefs", mfs.get().resolve("step-1"), null, data, shardBytes, log));
            }
        } finally {
            if (mfsDown != null) {
                try {
                    Runtime.getRuntime().removeShutdownHook(mfsDown);
                    stopMoosefs(home, work, log);
                } catch (IllegalStateException e) {
                    // shutting down: the hook stops it
                }
            }
            BenchFsCluster.deleteTree(work, log);
        }
        print(saves, restores, shardBytes, l1, noMfsWhy, latest, stageReport, stageSeconds);
        return 0;
    }

    private static void stopMoosefs(Path home, Path work, PrintStream log) {
        try {
            run(log, List.of("bash", home.resolve("bench/peers/moosefs.sh").toString(), "down", work.resolve("mfs").toString()));
        } catch (Exception e) {
            log.println(TAG + "stopping MooseFS: " + e.getMessage());
        }
    }

    /**
     * Writes generation {@code gen} ({@code writers} dd processes), commits it through the mount at
     * {@code level} (setxattr blocks until the level is reached), then polls its status until it
     * says durability=l3. Every time is from the first writer's start.
     */
    private Save save(Path gen, String name, String level, String what, int mib, long shardBytes, Path data, PrintStream log)
            throws Exception {
        Files.createDirectories(gen);
        StringBuilder commit = new StringBuilder(level).append('\n');
        for (int i = 0; i < writers; i++) {
            commit.append("shard-").append(i).append('\t').append(shardBytes).append('\n'); // the commit checks each is there, this size
        }
        log.printf("%s%s: %d writers save into %s, then commit at %s%n", TAG, name, writers, what, level);
        Map<String, Long> cpu0 = DaemonCpu.read(data, CPU_KINDS);
        long t0 = System.nanoTime();
        Run w;
        try (ProgressTicker t = new ProgressTicker(log, TAG, name + ": writing", () -> written(gen, writers * shardBytes))) {
            w = writeShards(writers, gen, mib, shardBytes);
        }
        try (ProgressTicker t = new ProgressTicker(log, TAG, name + ": commit at " + level, () -> "")) {
            PathXattrs.set(gen, COMMIT, commit.toString());
        }
        double stall = (System.nanoTime() - t0) / 1e9;
        String cpu = DaemonCpu.used(CPU_KINDS, cpu0, DaemonCpu.read(data, CPU_KINDS));
        log.printf("%s%s: writes + close %.2f s, commit at %s returned at %.2f s (CPU s meanwhile: %s); waiting for durability=l3%n",
                TAG, name, w.seconds(), level, stall, cpu);
        Map<String, String> st;
        long said = System.nanoTime();
        while (true) {
            st = status(gen);
            String dur = st.getOrDefault("durability", "?");
            if (dur.equals("l3")) {
                break;
            }
            if (dur.equals("lost")) {
                throw new IllegalStateException(gen + ": a file's L2 copies were lost before it reached L3");
            }
            long now = System.nanoTime();
            if (now - t0 > TimeUnit.MINUTES.toNanos(30)) {
                throw new IllegalStateException(gen + " is " + dur + ", not durable in L3, after 30 minutes");
            }
            if (now - said >= PROGRESS_NANOS) {
                log.printf("%s%s: %.0f s, durability=%s (draining since %s)%n", TAG, name, (now - t0) / 1e9, dur,
                        st.getOrDefault("draining", "-"));
                said = now;
            }
            Thread.sleep(100);
        }
        double l3 = (System.nanoTime() - t0) / 1e9;
        log.printf("%s%s: durable in L3 at %.2f s (status: started=%s committed=%s l2=%s draining=%s l3=%s)%n", TAG, name, l3,
                st.get("started"), st.get("committed"), st.get("l2"), st.get("draining"), st.get("l3"));
        return new Save(name, what, level, w.seconds(), stall, l3, writers * shardBytes, cpu);
    }

    /**
     * The POSIX convention on MooseFS: each writer writes and fsyncs its shard into
     * {@code step-1.incomplete/}, then the directory is renamed to {@code step-1} and its parent
     * fsynced. MooseFS (goal 3, chunk files fsynced before close) is durable once that returns.
     */
    private Save saveRenamed(Path mnt, String name, int mib, long shardBytes, PrintStream log) throws Exception {
        Path inc = Files.createDirectories(mnt.resolve(name + ".incomplete"));
        Path gen = mnt.resolve(name);
        log.printf("%smoosefs: %d writers save into %s, then rename it to %s and fsync %s%n", TAG, writers, inc, gen.getFileName(), mnt);
        long t0 = System.nanoTime();
        Run w;
        try (ProgressTicker t = new ProgressTicker(log, TAG, "moosefs: writing", () -> written(inc, writers * shardBytes))) {
            w = writeShards(writers, inc, mib, shardBytes);
        }
        Files.move(inc, gen, StandardCopyOption.ATOMIC_MOVE);
        try (FileChannel c = FileChannel.open(mnt, StandardOpenOption.READ)) {
            c.force(true);
        }
        double stall = (System.nanoTime() - t0) / 1e9;
        log.printf("%smoosefs: writes + close %.2f s, rename + fsync returned at %.2f s%n", TAG, w.seconds(), stall);
        return new Save("moosefs", "write, fsync, rename, fsync dir", "-", w.seconds(), stall, stall, writers * shardBytes, "-");
    }

    /**
     * {@code writers} readers read generation {@code gen} after the mount's L1 cache and the page
     * cache were emptied; counts what the storage nodes served and, on the Strata mount
     * {@code mnt} (null for MooseFS), what the L1 served meanwhile.
     */
    private Restore restore(String name, Path gen, Path mnt, Path data, long shardBytes, PrintStream log) throws Exception {
        log.printf("%srestore %s: %d readers read %s (L1 and page cache emptied first)%n", TAG, name, writers, gen);
        dropCaches(data, log);
        long l3Before = mnt == null ? -1 : l3ReadBytes(data);
        long l1Before = mnt == null ? -1 : l1Hits(mnt, data);
        Map<String, Long> cpu0 = mnt == null ? null : DaemonCpu.read(data, CPU_KINDS);
        Run r;
        try (ProgressTicker t = new ProgressTicker(log, TAG, "restore " + name, () -> "")) {
            r = readShards(writers, gen, shardBytes);
        }
        long l3 = mnt == null ? -1 : delta(l3Before, l3ReadBytes(data));
        long l1 = mnt == null ? -1 : delta(l1Before, l1Hits(mnt, data));
        String cpu = mnt == null ? "-" : DaemonCpu.used(CPU_KINDS, cpu0, DaemonCpu.read(data, CPU_KINDS));
        log.printf("%srestore %s: %.2f s, %.0f MB/s%s%n", TAG, name, r.seconds(), r.mbps(), mnt == null ? ""
                : ", storage nodes served " + l3(l3) + ", L1 served " + (l1 < 0 ? "unknown" : l1) + " blocks; CPU s meanwhile: " + cpu);
        return new Restore(r, l3, l1, cpu);
    }

    /** ", X of Y written": the sizes of the shards so far, as the mount reports them. */
    private String written(Path gen, long total) {
        long sum = 0;
        for (int i = 0; i < writers; i++) {
            try {
                sum += Files.size(gen.resolve("shard-" + i));
            } catch (IOException e) {
                // not created yet
            }
        }
        return ", " + DataSize.human(sum) + " of " + DataSize.human(total) + " written";
    }

    private static Map<String, String> status(Path gen) throws IOException {
        Map<String, String> m = new LinkedHashMap<>();
        for (String line : new String(PathXattrs.get(gen, STATUS), StandardCharsets.UTF_8).split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                m.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        return m;
    }

    /** The fields that decide where a generation's bytes go, from {@code strata policy get}'s table, as key=value. */
    private static String effective(String policyGet) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String line : policyGet.lines().toList()) {
            String[] cells = line.split("\\|");
            if (cells.length >= 2) {
                fields.put(cells[0].strip(), cells[1].strip());
            }
        }
        StringBuilder sb = new StringBuilder();
        for (String key : List.of("profile", "tiers.l2", "durability", "stripe.width", "qos")) {
            if (fields.containsKey(key)) {
                sb.append(sb.isEmpty() ? "" : " ").append(key).append('=').append(fields.get(key));
            }
        }
        return sb.isEmpty() ? policyGet.strip().replace('\n', ' ') : sb.toString();
    }

    /** The mount's L1 cache capacities, from its statistics. */
    private static String l1Size(Path mnt, Path data) {
        try {
            Map<String, String> s = CacheCommand.Target.resolve(mnt, data).stats();
            if ("off".equals(s.get("l1"))) {
                return "off";
            }
            return DataSize.human(Long.parseLong(s.getOrDefault("memory.capacity", "0"))) + " memory + "
                    + DataSize.human(Long.parseLong(s.getOrDefault("nvme.capacity", "0"))) + " NVMe";
        } catch (RuntimeException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }

    /** Blocks the mount's L1 has served from memory and NVMe so far (0 when it has no L1), or -1 when its statistics cannot be read. */
    static long l1Hits(Path mnt, Path data) {
        try {
            Map<String, String> s = CacheCommand.Target.resolve(mnt, data).stats();
            if ("off".equals(s.get("l1"))) {
                return 0;
            }
            return Long.parseLong(s.getOrDefault("hits.memory", "0")) + Long.parseLong(s.getOrDefault("hits.nvme", "0"));
        } catch (RuntimeException e) {
            return -1;
        }
    }

    private void print(Map<String, Save> saves, Map<String, Restore> restores, long shardBytes, String l1, String noMfsWhy, String latest,
                       String stageReport, double stageSeconds) {
        PrintStream out = System.out;
        long total = writers * shardBytes;
        out.printf("strata bench ckpt: %d writers x %s = %s per generation, 1 MiB writes + fsync + close (dd conv=fsync), "
                + "then the commit%n", writers, DataSize.human(shardBytes), DataSize.human(total));
        out.println("stall = first writer's start until the commit returned (MooseFS: until rename + fsync of the directory returned); "
                + "durable in L3 = until the generation's status said durability=l3");
        Table t = new Table("case", "generation", "commit", "writes+close (s)", "commit (s)", "stall (s)", "stall MB/s", "durable in L3 (s)",
                "CPU s during the stall");
        for (Save s : saves.values()) {
            t.row(s.name(), s.what(), s.level(), fmt(s.writeSeconds()), fmt(s.commitSeconds()), fmt(s.stallSeconds()),
                    String.format(Locale.ROOT, "%.0f", s.stall().mbps()), fmt(s.l3Seconds()), s.cpu());
        }
        if (noMfsWhy != null) {
            t.row("moosefs", "n/a: MooseFS " + noMfsWhy, "-", "-", "-", "-", "-", "-", "-");
        }
        t.print(out);
        if (noMfsWhy == null) {
            out.println("moosefs: 3 copies (goal 3), chunk files fsynced before close, daemons and mount at nice 0 like Strata's");
        }
        out.printf("restore = %d readers (dd bs=1M of=/dev/null), each its shard, after emptying the mount's L1 cache (%s) and the page "
                + "cache%n", writers, l1);
        Table r = new Table("restore", "what is read", "time (s)", "MB/s", "read from L3", "L1 blocks served", "CPU s of Strata's daemons");
        Restore st = restores.get("staged");
        Restore co = restores.get("cold");
        r.row("staged", "/" + STAGED_ROOT + "/" + latest + " after `strata ckpt stage` (" + fmt(stageSeconds)
                + " s): from the L2 agents' copies", st == null ? "-" : fmt(st.run().seconds()), st == null ? "-" : fmtMbps(st.run()),
                st == null ? "-" : l3(st.l3Bytes()), st == null ? "-" : hits(st.l1Hits()), st == null ? "-" : st.cpu());
        r.row("cold", "/" + COLD_ROOT + "/step-1, never staged: only in L3", co == null ? "-" : fmt(co.run().seconds()),
                co == null ? "-" : fmtMbps(co.run()), co == null ? "-" : l3(co.l3Bytes()), co == null ? "-" : hits(co.l1Hits()),
                co == null ? "-" : co.cpu());
        Restore mr = restores.get("moosefs");
        if (mr != null) {
            r.row("moosefs", "step-1 on MooseFS", fmt(mr.run().seconds()), fmtMbps(mr.run()), "-", "-", "-");
        }
        r.print(out);
        if (!stageReport.isEmpty()) {
            out.println("stage: " + stageReport);
        }

        Save l2 = saves.get("l2");
        Save l3 = saves.get("l3");
        Save mfs = saves.get("moosefs");
        Run stRun = st == null ? null : st.run();
        Run coRun = co == null ? null : co.run();
        String vsMfs = ratio(mfs == null ? null : mfs.stall(), l2.stall());
        String restoreRatio = ratio(coRun, stRun);
        out.printf("floor: stall at l2 <= 1/3 of MooseFS's (stall_l2_vs_moosefs >= 3): %s%n",
                mfs == null ? "n/a (MooseFS " + noMfsWhy + ")" : vsMfs + (mfs.stallSeconds() / l2.stallSeconds() >= 3 ? ": met" : ": NOT met"));
        out.printf("floor: restore after staging >= 2x cold restore (restore_staged_vs_cold >= 2): %s%s%n", restoreRatio,
                stRun == null || coRun == null ? "" : coRun.seconds() / stRun.seconds() >= 2 ? ": met" : ": NOT met");
        long l1Hits = st == null || co == null ? -1 : st.l1Hits() < 0 || co.l1Hits() < 0 ? -1 : st.l1Hits() + co.l1Hits();
        StringBuilder res = new StringBuilder("result:");
        res.append(" stall_l2_vs_moosefs=").append(vsMfs);
        res.append(" stall_l2_vs_l3=").append(ratio(l3.stall(), l2.stall()));
        res.append(" time_to_l3_s=").append(fmt(l2.l3Seconds()));
        res.append(" restore_staged_vs_cold=").append(restoreRatio);
        res.append(" stall_l2_s=").append(fmt(l2.stallSeconds()));
        res.append(" stall_l3_s=").append(fmt(l3.stallSeconds()));
        res.append(" stall_moosefs_s=").append(mfs == null ? "n/a" : fmt(mfs.stallSeconds()));
        res.append(" restore_staged_mbps=").append(stRun == null ? "n/a" : fmtMbps(stRun));
        res.append(" restore_cold_mbps=").append(coRun == null ? "n/a" : fmtMbps(coRun));
        res.append(" l1_hits=").append(l1Hits < 0 ? "n/a" : Long.toString(l1Hits));
        out.println(res);
        out.flush();
    }

    private static long delta(long before, long after) {
        return before < 0 || after < 0 ? -1 : after - before;
    }

    private static String l3(long bytes) {
        return bytes < 0 ? "unknown" : DataSize.human(bytes);
    }

    private static String hits(long blocks) {
        return blocks < 0 ? "unknown" : Long.toString(blocks);
    }

    /**
     * Chunk bytes the storage nodes (L3) have served to readers so far ({@code strata.storage.bytes{op=read}}
     * from each node's metrics endpoint), or -1 when a node's cannot be read: shows which tier a restore read.
     */
    private static long l3ReadBytes(Path data) {
        long sum = 0;
        int nodes = 0;
        try (var dirs = Files.list(data)) {
            for (Path d : dirs.filter(p -> p.getFileName().toString().startsWith("storage-")).toList()) {
                Path ready = d.resolve(DaemonRuntime.READY_FILE);
                Properties p = new Properties();
                try (var in = Files.newBufferedReader(ready)) {
                    p.load(in);
                }
                String m = p.getProperty("metrics");
                if (m == null) {
                    return -1;
                }
                for (Map.Entry<String, Double> e : Counters.prometheus(BenchFsRunCommand.metricsUri(m), d.getFileName().toString())
                        .snapshot().entrySet()) {
                    if (e.getKey().startsWith("strata.storage.bytes{") && e.getKey().contains("op=read")) {
                        sum += e.getValue().longValue();
                    }
                }
                nodes++;
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return nodes == 0 ? -1 : sum;
    }

    private static String fmtMbps(Run r) {
        return String.format(Locale.ROOT, "%.0f", r.mbps());
    }
}
