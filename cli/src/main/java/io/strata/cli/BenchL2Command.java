package io.strata.cli;

import io.strata.bench.Table;
import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.meta.Staging;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata bench l2}: what a trainer saving a checkpoint waits for. Starts the embedded
 * cluster ({@code strata up}: two L2 agents, three storage nodes, the FUSE mount) and has
 * {@code --writers} processes, like trainer ranks, each write a shard with 1 MiB writes, fsync
 * and close ({@code dd conv=fsync}) into a directory staged in L2 ({@code tiers.l2=stage
 * durability=l2}), into a directory written straight to L3, into a local directory on the same
 * disk, and on MooseFS (3 copies, chunk files fsynced) when it is installed, in rotating order.
 * It reports the time until every writer's close returned (the trainer's stall), for L2 the time
 * until the meta service says every shard is durable in L3 and the drain's throughput, then
 * reads every shard back with the L1 cache and the page cache dropped: from L2 (the staged
 * shards, still held by the agents), from L3 (the direct ones) and from MooseFS. With
 * {@code --kill-agent} one agent is killed (SIGKILL) while the staged shards are written; every
 * shard is then read back and checked ({@code lost} counts shards that are not what was written).
 * Last line: {@code result: l2_save_vs_l3=... l2_save_vs_moosefs=... l2_save_vs_local=...
 * drain_mbps=... l2_restore_vs_moosefs=... l2_restore_vs_l3=... lost=...}.
 */
@Command(name = "l2", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench l2", "  strata bench l2 --writers 8 --shard 512MiB --kill-agent"},
        description = "Checkpoint save into the L2 pool vs straight to L3, a local disk and MooseFS; drain and restore.")
final class BenchL2Command implements Callable<Integer> {
    @Option(names = "--writers", defaultValue = "4", description = "Writer processes (default ${DEFAULT-VALUE}).")
    int writers;

    @Option(names = "--shard", defaultValue = "256MiB", description = "Bytes each writer writes (default ${DEFAULT-VALUE}).")
    String shard;

    @Option(names = "--kill-agent", description = "Kill one L2 agent (SIGKILL) while the staged shards are written, then check every shard.")
    boolean killAgent;

    @Option(names = "--no-moosefs", description = "Leave MooseFS out even when it is installed.")
    boolean noMoosefs;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where the temporary data and local directories go (default: the temp directory).")
    Path dir;

    /** One save or restore: seconds until every process ended, and the bytes moved. */
    record Run(double seconds, long bytes) {
        double mbps() {
            return bytes / 1e6 / seconds;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (writers < 1 || writers > 64) {
            throw new IllegalArgumentException("--writers must be between 1 and 64, got " + writers);
        }
        long shardBytes = DataSize.parse(shard).bytes();
        if (shardBytes < (1 << 20) || shardBytes % (1 << 20) != 0) {
            throw new IllegalArgumentException("--shard must be a whole number of MiB, at least 1MiB, got " + shard);
        }
        int mib = (int) (shardBytes >> 20);
        Path home = Path.of(System.getProperty("strata.home", ".")).toAbsolutePath();
        Path parent = (dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"))).toAbsolutePath().normalize();
        Files.createDirectories(parent);
        Path work = Files.createTempDirectory(parent, "strata-bench-l2-");
        PrintStream log = System.err;
        Map<String, Run> saves = new LinkedHashMap<>();
        Map<String, Run> restores = new LinkedHashMap<>();
        Optional<Path> mfs = Optional.empty();
        double drainSeconds = Double.NaN;
        int lost = 0;
        try (BenchFsCluster cluster = BenchFsCluster.up(work.resolve("data"), log)) {
            Path mnt = cluster.mount.orElseThrow(() -> new IllegalStateException("strata bench l2 needs the FUSE mount: "
                    + cluster.noMount.orElse("no mount")));
            Path data = cluster.data;
            Files.createDirectories(mnt.resolve("stage"));
            Files.createDirectories(mnt.resolve("direct"));
            strata(log, "policy", "set", "--data", data.toString(), "/stage", "tiers.l2=stage", "durability=l2");
            Path local = Files.createDirectories(work.resolve("local"));
            if (!noMoosefs && which("mfsmaster")) {
                Path m = work.resolve("mfs-mnt");
                run(log, List.of("bash", home.resolve("bench/peers/moosefs.sh").toString(), "up", work.resolve("mfs").toString(), m.toString()));
                mfs = Optional.of(m);
            } else {
                log.println("strata bench l2: MooseFS is " + (noMoosefs ? "left out (--no-moosefs)"
                        : "not installed (apt-get install moosefs-master moosefs-chunkserver moosefs-client moosefs-cli)"));
            }
            Map<String, Path> targets = new LinkedHashMap<>();
            targets.put("l2", mnt.resolve("stage"));
            targets.put("l3", mnt.resolve("direct"));
            targets.put("local", local);
            mfs.ifPresent(m -> targets.put("moosefs", m));

            for (Map.Entry<String, Path> t : targets.entrySet()) {
                log.printf("strata bench l2: %d writers x %s into %s (%s)%n", writers, shard, t.getKey(), t.getValue());
                Thread killer = null;
                if (killAgent && t.getKey().equals("l2")) {
                    killer = killAgentSoon(data, log);
                }
                saves.put(t.getKey(), writeShards(writers, t.getValue(), mib, shardBytes));
                if (killer != null) {
                    killer.join();
                }
                if (t.getKey().equals("l2")) {
                    drainSeconds = awaitDurable(data, log); // the drain of a shard starts at its close
                }
            }
            for (String name : targets.keySet()) {
                if (name.equals("local")) {
                    continue; // the page cache would answer; its drop is not ours to compare
                }
                dropCaches(data, log);
                restores.put(name, readShards(writers, targets.get(name), shardBytes));
            }
            lost = verify(targets.get("l2"), shardBytes) + verify(targets.get("l3"), shardBytes);
        } finally {
            if (mfs.isPresent()) {
                try {
                    run(log, List.of("bash", home.resolve("bench/peers/moosefs.sh").toString(), "down", work.resolve("mfs").toString()));
                } catch (IOException | RuntimeException e) {
                    log.println("strata bench l2: stopping MooseFS: " + e.getMessage());
                }
            }
            BenchFsCluster.deleteTree(work, log);
        }
        print(saves, restores, drainSeconds, lost, shardBytes);
        return lost == 0 ? 0 : 1;
    }

    private void print(Map<String, Run> saves, Map<String, Run> restores, double drainSeconds, int lost, long shardBytes) {
        PrintStream out = System.out;
        Table t = new Table("target", "save: close returned (s)", "save MB/s", "restore (s)", "restore MB/s");
        for (Map.Entry<String, Run> e : saves.entrySet()) {
            Run r = restores.get(e.getKey());
            t.row(e.getKey(), fmt(e.getValue().seconds()), fmt(e.getValue().mbps()), r == null ? "-" : fmt(r.seconds()), r == null ? "-" : fmt(r.mbps()));
        }
        out.printf("strata bench l2: %d writers x %s, 1 MiB writes + fsync + close%s%n", writers, DataSize.human(shardBytes),
                killAgent ? ", one L2 agent killed during the staged save" : "");
        t.print(out);
        long total = writers * shardBytes;
        double drainMbps = total / 1e6 / drainSeconds;
        out.printf("L2: every shard durable in L3 %.1f s after the last close (%.1f s after the save began); drain %.0f MB/s%n",
                drainSeconds, drainSeconds + saves.get("l2").seconds(), drainMbps);
        Run l2 = saves.get("l2");
        StringBuilder r = new StringBuilder("result:");
        r.append(" l2_save_vs_l3=").append(ratio(saves.get("l3"), l2));
        r.append(" l2_save_vs_moosefs=").append(ratio(saves.get("moosefs"), l2));
        r.append(" l2_save_vs_local=").append(ratio(saves.get("local"), l2));
        r.append(" time_to_l3_s=").append(fmt(drainSeconds + l2.seconds()));
        r.append(" drain_mbps=").append(String.format(Locale.ROOT, "%.0f", drainMbps));
        r.append(" l2_restore_vs_moosefs=").append(ratio(restores.get("moosefs"), restores.get("l2")));
        r.append(" l2_restore_vs_l3=").append(ratio(restores.get("l3"), restores.get("l2")));
        r.append(" lost=").append(lost);
        out.println(r);
        out.flush();
    }

    /** How many times faster {@code fast} was than {@code base} (seconds for the same bytes); n/a when either is missing. */
    static String ratio(Run base, Run fast) {
        return base == null || fast == null ? "n/a" : String.format(Locale.ROOT, "%.2f", base.seconds() / fast.seconds());
    }

    static String fmt(double d) {
        return String.format(Locale.ROOT, "%.2f", d);
    }

    /** {@code writers} processes each write {@code mib} MiB to DIR/shard-N with 1 MiB writes, fsync and close ({@code dd conv=fsync}). */
    static Run writeShards(int writers, Path dir, int mib, long shardBytes) throws Exception {
        return writeShards(writers, dir, mib, shardBytes, "shard-");
    }

    /** As {@link #writeShards(int, Path, int, long)}, into DIR/PREFIX-N. */
    static Run writeShards(int writers, Path dir, int mib, long shardBytes, String prefix) throws Exception {
        List<Process> ps = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int i = 0; i < writers; i++) {
            ps.add(new ProcessBuilder("dd", "if=/dev/zero", "of=" + dir.resolve(prefix + i), "bs=1M", "count=" + mib, "conv=fsync",
                    "status=none").redirectErrorStream(true).start());
        }
        awaitAll(ps, "dd into " + dir);
        return new Run((System.nanoTime() - t0) / 1e9, writers * shardBytes);
    }

    /** {@code writers} processes each read DIR/shard-N with 1 MiB reads ({@code dd of=/dev/null}). */
    static Run readShards(int writers, Path dir, long shardBytes) throws Exception {
        List<Process> ps = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int i = 0; i < writers; i++) {
            ps.add(new ProcessBuilder("dd", "if=" + dir.resolve("shard-" + i), "of=/dev/null", "bs=1M", "status=none")
                    .redirectErrorStream(true).start());
        }
        awaitAll(ps, "dd from " + dir);
        return new Run((System.nanoTime() - t0) / 1e9, writers * shardBytes);
    }

    static void awaitAll(List<Process> ps, String what) throws Exception {
        for (Process p : ps) {
            if (!p.waitFor(30, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                throw new IllegalStateException(what + " did not finish in 30 minutes");
            }
            if (p.exitValue() != 0) {
                String err = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                throw new IllegalStateException(what + " failed (exit " + p.exitValue() + "): " + err);
            }
        }
    }

    /** Shards that are not {@code shardBytes} zero bytes. */
    private int verify(Path dir, long shardBytes) throws IOException {
        int bad = 0;
        byte[] buf = new byte[1 << 20];
        for (int i = 0; i < writers; i++) {
            Path f = dir.resolve("shard-" + i);
            long n = 0;
            boolean zeros = true;
            try (InputStream in = Files.newInputStream(f)) {
                for (int r; (r = in.read(buf)) > 0; ) {
                    for (int k = 0; k < r && zeros; k++) {
                        zeros = buf[k] == 0;
                    }
                    n += r;
                }
            } catch (IOException e) {
                System.err.println("strata bench l2: reading " + f + " failed: " + e.getMessage());
                zeros = false;
            }
            if (n != shardBytes || !zeros) {
                System.err.println("strata bench l2: " + f + " is not what was written (" + n + " bytes)");
                bad++;
            }
        }
        return bad;
    }

    /** Kills the first L2 agent with SIGKILL a second into the staged save. */
    private static Thread killAgentSoon(Path data, PrintStream log) throws IOException {
        ClusterDir.Member m = new ClusterDir(data).members().stream().filter(x -> x.name().equals("l2-1")).findFirst()
                .orElseThrow(() -> new IllegalStateException("no L2 agent l2-1 in " + data));
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                return;
            }
            ProcessHandle.of(m.pid()).ifPresent(ProcessHandle::destroyForcibly);
            log.println("strata bench l2: killed L2 agent l2-1 (pid " + m.pid() + ")");
        }, "bench-l2-kill");
        t.start();
        return t;
    }

    /** Seconds from now until the meta service lists no staged file that is not durable in L3. */
    private static double awaitDurable(Path data, PrintStream log) throws Exception {
        long t0 = System.nanoTime();
        try (NodeContext ctx = ClientSource.context("bench-l2", ClientSource.credentials(data.resolve(ClientSource.CLIENT_TOML)),
                ClientSource.tls(data.resolve(ClientSource.CLIENT_TOML)));
             RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            String meta = UpLayout.find(data).orElseThrow().metaAddress();
            MetaClient mc = new MetaClient(ctx, rpc, io.strata.protocol.mgmtd.MgmtdClient.parse(meta));
            while (true) {
                List<Staging> pending = Futures.join(mc.listStagingAsync(Caller.ROOT, true, 0, 1000), Duration.ofSeconds(30));
                for (Staging s : pending) {
                    if (s.state() == Staging.State.LOST) {
                        throw new IllegalStateException(s.inode() + " was lost: " + s.lost());
                    }
                }
                if (pending.isEmpty()) {
                    return (System.nanoTime() - t0) / 1e9;
                }
                if (System.nanoTime() - t0 > TimeUnit.MINUTES.toNanos(30)) {
                    throw new IllegalStateException(pending.size() + " staged files not durable in L3 after 30 minutes");
                }
                Thread.sleep(100);
            }
        }
    }

    /** Empties the mount's L1 cache and, as root, the kernel's page cache. */
    static void dropCaches(Path data, PrintStream log) {
        strata(log, "cache", "drop", "--data", data.toString());
        try {
            Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
        } catch (IOException e) {
            log.println("strata bench l2: cannot drop the page cache (" + e.getMessage() + "); reads may be warm");
        }
    }

    /** Runs a strata command in this process; returns what it printed on stdout, throws with its stderr when it fails. */
    static String strata(PrintStream log, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = StrataMain.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        if (rc != 0) {
            throw new IllegalStateException("strata " + String.join(" ", args) + " failed: " + err.toString(StandardCharsets.UTF_8).strip());
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    static boolean which(String cmd) {
        for (String p : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(p, cmd))) {
                return true;
            }
        }
        return Files.isExecutable(Path.of("/usr/sbin", cmd));
    }

    static void run(PrintStream log, List<String> cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out.strip());
        }
    }
}
