package io.strata.cli;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.strata.bench.cli.BenchArgs;
import io.strata.bench.fs.Counters;
import io.strata.bench.fs.DirTarget;
import io.strata.bench.fs.FsBench;
import io.strata.bench.fs.FsReport;
import io.strata.bench.fs.FsTarget;
import io.strata.client.ClientConfig;
import io.strata.client.StrataFileSystem;
import io.strata.config.ConfigNode;
import io.strata.core.NodeContext;
import io.strata.fuse.FuseMount;
import io.strata.l1.L1Config;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code strata bench fs}: self-contained. Starts an embedded cluster in a temporary data
 * directory exactly as {@code strata up} does (each daemon its own process, three storage
 * nodes, chains of three replicas, the FUSE mount with its L1 cache), then runs the jobs of
 * {@link FsBench} through the mount ({@code fuse}), through the Java API in this process
 * ({@code api}, configured like the mount: same client settings and L1 sizes, its own cache
 * directory), on a plain local directory next to the data directory ({@code local}) and on
 * tmpfs ({@code tmpfs}, when {@code /dev/shm} exists), each job on every target in rotating
 * order, for {@code --rounds} rounds. Prints one table, each target's counters, and
 * {@code result: fuse_vs_api_read=... api_read_vs_local=... ...}. The cluster is always torn
 * down (also from a shutdown hook) and the temporary directories removed.
 */
@Command(name = "fs", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench fs", "  strata bench fs --json --rounds 3"},
        description = "Start an embedded cluster and benchmark it through the FUSE mount and the Java API, next to a local directory and tmpfs.")
final class BenchFsCommand implements Callable<Integer> {
    @Mixin
    BenchFsOptions jobs;

    @Option(names = "--rounds", defaultValue = "2", description = "Alternating rounds (default ${DEFAULT-VALUE}); figures are the median.")
    int rounds;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where the temporary data and local directories go (default: the temp directory).")
    Path dir;

    @Option(names = "--tmpfs", defaultValue = "/dev/shm", paramLabel = "DIR", description = "A tmpfs directory for the tmpfs column (default ${DEFAULT-VALUE}; 'none' to skip).")
    String tmpfs;

    @Override
    public Integer call() throws Exception {
        FsBench.Options o = jobs.options(rounds);
        Path parent = (dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"))).toAbsolutePath().normalize();
        Files.createDirectories(parent);
        Path work = Files.createTempDirectory(parent, "strata-bench-fs-");
        Path shm = null;
        if (!tmpfs.equals("none") && Files.isDirectory(Path.of(tmpfs)) && Files.isWritable(Path.of(tmpfs))) {
            shm = Files.createTempDirectory(Path.of(tmpfs), "strata-bench-fs-");
        }
        PrintStream log = System.err;
        BenchFsCluster cluster = null;
        NodeContext ctx = null;
        StrataFileSystem fs = null;
        Map<String, String> notes = new LinkedHashMap<>();
        try {
            Path data = work.resolve("data");
            log.println("strata bench fs: starting an embedded cluster: strata up --data " + data);
            long t0 = System.nanoTime();
            cluster = BenchFsCluster.up(data, log);
            double upSeconds = (System.nanoTime() - t0) / 1e9;
            log.printf("strata bench fs: cluster up in %.1f s%n", upSeconds);
            List<FsTarget> targets = new ArrayList<>();
            if (cluster.mount.isPresent()) {
                Optional<URI> m = cluster.mountMetrics();
                targets.add(new DirTarget("fuse", cluster.mount.get(), m.isPresent()
                        ? Counters.prometheus(m.get(), "mount daemon metrics")
                        : Counters.none("the mount daemon announced no metrics endpoint")));
            } else {
                notes.put("fuse", "no mount column: " + cluster.noMount.orElse("FUSE is not available"));
            }
            ClientConfig cfg = apiConfig(data);
            SimpleMeterRegistry reg = new SimpleMeterRegistry();
            ctx = NodeContext.builder("bench-api").meters(reg)
                    .credentials(ClientSource.credentials(data.resolve(ClientSource.CLIENT_TOML)).orElse(null))
                    .tls(ClientSource.tls(data.resolve(ClientSource.CLIENT_TOML)).orElse(null)).build();
            fs = StrataFileSystem.connect(ctx, cfg);
            targets.add(new BenchFsApi("api", fs, "/", Counters.of(reg, "client meters of this process"),
                    cfg.l1().map(l -> "configured like the mount (L1 " + l.memory() + " memory"
                            + l.nvme().map(n -> " + " + n.capacity() + " NVMe").orElse("") + ")").orElse("no L1")));
            Path local = work.resolve("local");
            Files.createDirectories(local);
            targets.add(DirTarget.plain("local", local));
            if (shm != null) {
                targets.add(DirTarget.plain("tmpfs", shm));
            }
            notes.put("page cache", "local, tmpfs and fuse reads may be served by the kernel page cache (files are read right after "
                    + "they are written; caches are not dropped); api and fuse reads may hit their L1");
            String load0 = BenchFsOptions.loadAverage();
            FsBench.Report r = jobs.engine(o).run(targets);
            notes.put("machine", Runtime.getRuntime().availableProcessors() + " cores, 1-min load average " + load0 + " at the start of the jobs, "
                    + BenchFsOptions.loadAverage() + " at the end (cluster up in " + String.format(java.util.Locale.ROOT, "%.0f", upSeconds) + " s)");
            Map<String, String> result = result(r);
            if (jobs.json) {
                BenchArgs.stdout().println(FsReport.json(r, "local", result, notes));
            } else {
                FsReport.print(r, "local", result, notes, BenchArgs.stdout());
            }
            return 0;
        } finally {
            closeQuietly(fs);
            closeQuietly(ctx);
            if (cluster != null) {
                log.println("strata bench fs: stopping the cluster");
                cluster.close();
            }
            boolean mounted = cluster != null && cluster.mount.isPresent() && FuseMount.isMounted(cluster.mount.get());
            if (!mounted) {
                BenchFsCluster.deleteTree(work, log);
            }
            if (shm != null) {
                BenchFsCluster.deleteTree(shm, log);
            }
        }
    }

    /** The mount's client settings (its [client] and [l1]), named bench-api, with an L1 cache directory of its own. */
    static ClientConfig apiConfig(Path data) {
        Path mountToml = data.resolve("mount").resolve("mount.toml");
        ClientConfig cfg = Files.exists(mountToml) ? ClientConfig.read(ConfigNode.load(mountToml))
                : ClientConfig.read(ConfigNode.load(data.resolve(ClientSource.CLIENT_TOML)));
        cfg = cfg.withName("bench-api");
        if (cfg.l1().isPresent()) {
            L1Config l = cfg.l1().get().withName("bench-api-l1");
            if (l.nvme().isPresent()) {
                L1Config.Nvme n = l.nvme().get();
                l = l.withNvme(new L1Config.Nvme(data.resolve("bench-api").resolve("l1-cache"), n.capacity(), n.minFree(), n.fsync(),
                        n.maxQueued(), n.indexMapSize(), n.readOnCaller()));
            }
            cfg = cfg.withL1(l);
        }
        return cfg;
    }

    /** The headline ratios and figures. */
    static Map<String, String> result(FsBench.Report r) {
        Map<String, String> out = new LinkedHashMap<>();
        boolean fuse = r.results().containsKey("fuse");
        for (FsBench.Item item : r.items()) {
            String k = switch (item.kind()) {
                case SEQ_WRITE -> "write";
                case SEQ_READ -> "read";
                case RANDOM_READ -> item.key().replace("_", "");
                default -> item.key();
            };
            boolean big = item.kind() == FsBench.Item.Kind.SEQ_WRITE || item.kind() == FsBench.Item.Kind.SEQ_READ;
            if (fuse) {
                out.put(big ? "fuse_vs_api_" + k : k + "_fuse_vs_api", FsReport.ratio(r, item.key(), "fuse", "api"));
            }
            out.put(big ? "api_" + k + "_vs_local" : k + "_api_vs_local", FsReport.ratio(r, item.key(), "api", "local"));
            if (fuse) {
                out.put(big ? "fuse_" + k + "_vs_local" : k + "_fuse_vs_local", FsReport.ratio(r, item.key(), "fuse", "local"));
            }
        }
        for (String t : r.results().keySet()) {
            FsReport.figures(r, t).forEach((k, v) -> {
                if (k.endsWith("_mbps") && (k.startsWith("seq_") || k.startsWith("rand_")) || k.endsWith("_iops") || k.endsWith("_files_s")) {
                    out.put(t + "_" + k, v);
                }
            });
        }
        return out;
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            System.err.println("strata bench fs: closing " + c + ": " + e.getMessage());
        }
    }
}
