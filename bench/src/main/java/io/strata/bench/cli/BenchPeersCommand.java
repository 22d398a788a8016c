package io.strata.bench.cli;

import io.strata.bench.peers.PeersBench;
import io.strata.bench.peers.Workload;
import io.strata.config.Durations;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code strata bench peers}: see {@link PeersBench}. */
@Command(name = "peers", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench peers --quick"},
        description = "The fio suite (bench/fio) on Strata and MooseFS side by side (3 storage nodes, 3 copies each),"
        + " alternating, with a local directory and tmpfs as the physical limits. Needs root (FUSE, netns, drop_caches).")
public final class BenchPeersCommand implements Callable<Integer> {
    @Option(names = "--quick", description = "Small sizes for a short run (64M shards, 128M data set, 5 s reads, 200 files per job).")
    boolean quick;

    @Option(names = "--only", split = ",", paramLabel = "WORKLOAD",
            description = "Workloads to run: checkpoint-save, checkpoint-restore, sample-read-4k, sample-read-128k, small-files,"
                    + " small-files-1 (the same files with one worker: rate and p50/p99 per operation) (default: all).")
    List<String> only;

    @Option(names = "--writers", description = "Checkpoint writers (default 4).")
    Integer writers;

    @Option(names = "--shard", description = "Checkpoint shard per writer, fio size (default 256M, 64M with --quick).")
    String shard;

    @Option(names = "--dataset", description = "Sample-read data set, fio size (default 512M, 128M with --quick).")
    String dataset;

    @Option(names = "--runtime", description = "Seconds per sample-read run (default 15, 5 with --quick).")
    Integer runtime;

    @Option(names = "--files", description = "Small files per job, 4 jobs; small-files-1's one worker handles as many (default 500, 200 with --quick).")
    Integer files;

    @Option(names = "--no-l1", description = "Mount Strata without its L1 cache (memory + local disk), so that reads go to the storage nodes.")
    boolean noL1;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where MooseFS's and Strata's data and the local-disk system go (default: the temp directory).")
    Path dir;

    @Option(names = "--fio-timeout", defaultValue = "5m", description = "A fio run taking longer is killed and marked failed (default ${DEFAULT-VALUE}).")
    String fioTimeout;

    @Option(names = "--moosefs-nice", defaultValue = "0",
            description = "Nice level of MooseFS's daemons and mount (default ${DEFAULT-VALUE}, as Strata's; MooseFS's own default is -19).")
    int moosefsNice;

    @Option(names = "--keep", description = "Keep the logs and fio JSON reports in the work directory.")
    boolean keep;

    @Option(names = "--rounds", defaultValue = "1",
            description = "Run the whole sequence N times on the same clusters; the table and the result line give each figure's"
                    + " median, and each round's result line is printed too (default ${DEFAULT-VALUE}, at most 10).")
    int rounds;

    @Override
    public Integer call() throws Exception {
        Path home = Path.of(System.getProperty("strata.home", "."));
        String launcherProp = System.getProperty("strata.launcher");
        Path launcher = launcherProp != null ? Path.of(launcherProp) : home.resolve("bin/strata");
        if (!Files.isRegularFile(home.resolve("bench/fio/checkpoint-save.fio")) || !Files.isRegularFile(home.resolve("bench/peers/moosefs.sh"))) {
            throw new IllegalStateException("bench/fio and bench/peers not found under " + home + " (run through bin/strata in the checkout)");
        }
        Map<String, String> sizes = PeersBench.Options.defaultSizes(quick);
        if (writers != null) {
            sizes.put("FIO_WRITERS", String.valueOf(BenchArgs.between("--writers", writers, 1, 64)));
        }
        if (shard != null) {
            sizes.put("FIO_SHARD", fioSize("--shard", shard));
        }
        if (dataset != null) {
            sizes.put("FIO_DATASET", fioSize("--dataset", dataset));
        }
        if (runtime != null) {
            if (runtime < 1 || runtime > 120) {
                throw new IllegalArgumentException("--runtime must be between 1 and 120 seconds, got " + runtime);
            }
            sizes.put("FIO_RUNTIME", String.valueOf(runtime));
        }
        if (files != null) {
            sizes.put("FIO_FILES", String.valueOf(BenchArgs.between("--files", files, 1, 100_000)));
        }
        BenchArgs.between("--moosefs-nice", moosefsNice, -20, 19);
        BenchArgs.between("--rounds", rounds, 1, 10);
        List<Workload> workloads = new ArrayList<>();
        if (only == null || only.isEmpty()) {
            workloads.addAll(List.of(Workload.values()));
        } else {
            for (String w : only) {
                workloads.add(Workload.byName(w.strip()));
            }
        }
        Path base = dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"));
        PeersBench.run(new PeersBench.Options(home, launcher, base, Path.of("/dev/shm"), sizes, workloads, !noL1,
                Durations.parse(fioTimeout), keep, moosefsNice, rounds), BenchArgs.stdout());
        return 0;
    }

    private static String fioSize(String option, String v) {
        if (!v.matches("[1-9][0-9]*[KMG]?")) {
            throw new IllegalArgumentException(option + ": a fio size like 256M or 1G, got " + v);
        }
        return v;
    }
}
