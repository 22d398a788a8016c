package io.strata.bench.cli;

import io.strata.bench.MetaBench;
import io.strata.config.Durations;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code strata bench meta}: metadata ops/s through the meta service next to the same ops on LMDB in process. */
@Command(name = "meta", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench meta --threads 1,16 --entries 10000"},
        description = "Metadata ops/s through the meta service vs the same ops directly on LMDB (and raw LMDB).")
public final class BenchMetaCommand implements Callable<Integer> {
    @Option(names = "--threads", defaultValue = "1,16", split = ",", description = "Client threads (default ${DEFAULT-VALUE}).")
    List<Integer> threads;

    @Option(names = "--round", defaultValue = "2s", description = "Length of a timed phase (default ${DEFAULT-VALUE}).")
    String round;

    @Option(names = "--rounds", defaultValue = "2", description = "Alternating rounds per case (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--entries", defaultValue = "100000", description = "Entries of the directory readdir lists (default ${DEFAULT-VALUE}).")
    int entries;

    @Option(names = "--sync", description = "fsync every LMDB group commit (default: off, to measure our overhead rather than the disk).")
    boolean sync;

    @Option(names = "--dir", description = "Where the LMDB files go (default: a temporary directory, removed afterwards).")
    Path dir;

    @Override
    public Integer call() throws Exception {
        BenchArgs.eachBetween("--threads", threads, 1, 256);
        if (rounds < 1 || entries < 1 || entries > 10_000_000) {
            throw new IllegalArgumentException("--rounds must be >= 1 and --entries 1..10000000");
        }
        MetaBench.run(new MetaBench.Options(threads, Durations.parse(round), rounds, entries, sync, dir), BenchArgs.stdout());
        return 0;
    }
}
