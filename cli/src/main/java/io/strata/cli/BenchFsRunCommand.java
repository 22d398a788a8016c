package io.strata.cli;

import io.strata.bench.cli.BenchArgs;
import io.strata.bench.fs.Counters;
import io.strata.bench.fs.DirTarget;
import io.strata.bench.fs.FsBench;
import io.strata.bench.fs.FsReport;
import io.strata.bench.fs.FsTarget;
import io.strata.client.ClientConfig;
import io.strata.client.StrataFileSystem;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.strata.core.NodeContext;
import io.strata.fuse.FuseMount;
import java.io.IOException;
import java.io.Reader;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code strata bench run --dir DIR} (any directory: a Strata mount, a local disk, tmpfs) or
 * {@code strata bench run --api [--data DIR | --mgmtd HOST:PORT | --config FILE]} (the Java
 * API): the jobs of {@link FsBench} (big-file write and read, random reads, small files) with
 * progress lines, a table, the counters that moved and a {@code result:} line, or {@code --json}.
 * {@code --baseline DIR} runs the same jobs on a second directory in alternating turns and adds
 * a ratio column. For a directory under the mount of a local {@code strata up} cluster, the
 * counters are read from the mount daemon's metrics endpoint ({@code --metrics} to name one).
 */
@Command(name = "run", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench run --dir data/mnt/bench --baseline /tmp/bench", "  strata bench run --api --json"},
        description = "File-system benchmark (big files, random reads, small files) on a directory (--dir) or through the Java API (--api).")
final class BenchFsRunCommand implements Callable<Integer> {
    static final class Where {
        @Option(names = "--dir", paramLabel = "DIR", required = true, description = "Directory to run in (a Strata mount, a local disk, tmpfs).")
        Path dir;

        @Option(names = "--api", required = true, description = "Through the Java API (the cluster from --data, --mgmtd or --config).")
        boolean api;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Where where;

    @Mixin
    ClientSource source;

    @Mixin
    BenchFsOptions jobs;

    @Option(names = "--root", defaultValue = "/", paramLabel = "PATH", description = "With --api: Strata directory to run in (default ${DEFAULT-VALUE}).")
    String root;

    @Option(names = "--baseline", paramLabel = "DIR", description = "Also run on this directory, alternating, and print the ratio to it.")
    Path baseline;

    @Option(names = "--metrics", paramLabel = "HOST:PORT|URL", description = "With --dir: the mount daemon's metrics endpoint (default: found for a `strata up` mount).")
    String metrics;

    @Option(names = "--rounds", defaultValue = "1", description = "Rounds (default ${DEFAULT-VALUE}); figures are the median.")
    int rounds;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        FsBench.Options o = jobs.options(rounds);
        List<FsTarget> targets = new ArrayList<>();
        List<AutoCloseable> close = new ArrayList<>();
        try {
            String name;
            if (where.api) {
                ClientConfig cfg = source.load().config();
                SimpleMeterRegistry reg = new SimpleMeterRegistry();
                NodeContext ctx = NodeContext.builder("bench-" + cfg.name()).meters(reg).credentials(source.credentials().orElse(null))
                        .tls(source.tls().orElse(null)).build();
                close.add(0, ctx);
                StrataFileSystem fs = StrataFileSystem.connect(ctx, cfg);
                close.add(0, fs);
                name = "api";
                targets.add(new BenchFsApi(name, fs, root, Counters.of(reg, "client meters of this process"),
                        cfg.l1().isPresent() ? "with L1 " + cfg.l1().get().memory() + " memory" : "no L1"));
            } else {
                Path d = where.dir.toAbsolutePath().normalize();
                if (!Files.isDirectory(d)) {
                    throw new IllegalArgumentException(d + " is not a directory");
                }
                name = "dir";
                targets.add(new DirTarget(name, d, dirCounters(d)));
            }
            if (baseline != null) {
                Path b = baseline.toAbsolutePath().normalize();
                if (!Files.isDirectory(b)) {
                    throw new IllegalArgumentException("--baseline " + b + " is not a directory");
                }
                targets.add(DirTarget.plain("baseline", b));
            }
            FsBench.Report r = jobs.engine(o).run(targets);
            Map<String, String> result = new LinkedHashMap<>(FsReport.figures(r, name));
            if (baseline != null) {
                for (FsBench.Item item : r.items()) {
                    result.put(item.key() + "_vs_baseline", FsReport.ratio(r, item.key(), name, "baseline"));
                }
            }
            if (jobs.json) {
                BenchArgs.stdout().println(FsReport.json(r, baseline == null ? null : "baseline", result, Map.of()));
            } else {
                FsReport.print(r, baseline == null ? null : "baseline", result, Map.of(), BenchArgs.stdout());
            }
            return 0;
        } finally {
            for (AutoCloseable c : close) {
                c.close();
            }
        }
    }

    /** The counters of the mount {@code dir} is in: --metrics, or a local `strata up` mount's endpoint; else none. */
    private Counters.Source dirCounters(Path dir) throws IOException {
        if (metrics != null) {
            return Counters.prometheus(metricsUri(metrics), "mount daemon metrics");
        }
        Optional<URI> found = upMountMetrics(ClusterDir.resolve(source.data).root, dir);
        return found.isPresent() ? Counters.prometheus(found.get(), "the strata up mount daemon's metrics")
                : Counters.none("not available for a plain directory");
    }

    static URI metricsUri(String s) {
        return URI.create(s.startsWith("http://") || s.startsWith("https://") ? s : "http://" + s + "/metrics");
    }

    /**
     * The metrics endpoint of the mount daemon of the {@code strata up} cluster in {@code data},
     * when {@code dir} is in its mount and the daemon announced one ({@code metrics} in its
     * ready file).
     */
    static Optional<URI> upMountMetrics(Path data, Path dir) throws IOException {
        Path layout = data.resolve("cluster.properties");
        Path ready = data.resolve("mount").resolve(DaemonRuntime.READY_FILE);
        if (!Files.exists(layout) || !Files.exists(ready)) {
            return Optional.empty();
        }
        Properties l = load(layout);
        String mnt = l.getProperty("mount.dir");
        if (mnt == null || !dir.startsWith(Path.of(mnt)) || !FuseMount.isMounted(Path.of(mnt))) {
            return Optional.empty();
        }
        String m = load(ready).getProperty("metrics");
        return m == null ? Optional.empty() : Optional.of(metricsUri(m));
    }

    private static Properties load(Path f) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(f)) {
            p.load(r);
        }
        return p;
    }
}
