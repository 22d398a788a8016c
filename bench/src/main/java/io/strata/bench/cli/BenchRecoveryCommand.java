package io.strata.bench.cli;

import io.strata.bench.RecoveryBench;
import io.strata.config.Durations;
import io.strata.core.DataSize;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code strata bench recovery}: see {@link RecoveryBench}. */
@Command(name = "recovery", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench recovery --missed 256MiB"},
        description = "Kill -9 one of 3 storage node processes, write 1 GiB, restart it: resync time, client "
        + "throughput before and during the resync, full verification read.")
public final class BenchRecoveryCommand implements Callable<Integer> {
    @Option(names = "--missed", defaultValue = "1GiB", description = "Bytes written while the node is down (default ${DEFAULT-VALUE}).")
    String missed;

    @Option(names = "--chunk", defaultValue = "4MiB", description = "Chunk size; every write is a whole chunk (default ${DEFAULT-VALUE}).")
    String chunk;

    @Option(names = "--writers", defaultValue = "2", description = "Concurrent writer streams (default ${DEFAULT-VALUE}).")
    int writers;

    @Option(names = "--resync-bandwidth", defaultValue = "256MiB",
            description = "The storage nodes' [storage] resync-bandwidth, per second (default ${DEFAULT-VALUE}).")
    String resyncBandwidth;

    @Option(names = "--lease", defaultValue = "3s", description = "The cluster manager's lease (default ${DEFAULT-VALUE}).")
    String lease;

    @Option(names = "--before", defaultValue = "10s", description = "How long the baseline load runs (default ${DEFAULT-VALUE}).")
    String before;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where the cluster's data goes (default: the temp directory).")
    Path dir;

    @Override
    public Integer call() throws Exception {
        DataSize c = DataSize.parse(chunk);
        if (c.bytes() < 64 * 1024 || c.bytes() > 64L * 1024 * 1024 || !c.isPowerOfTwo()) {
            throw new IllegalArgumentException("--chunk: a power of two in [64KiB, 64MiB], got " + chunk);
        }
        DataSize m = DataSize.parse(missed);
        if (m.bytes() < c.bytes()) {
            throw new IllegalArgumentException("--missed must be at least one chunk, got " + missed);
        }
        BenchArgs.between("--writers", writers, 1, 64);
        RecoveryBench.Options d = RecoveryBench.Options.defaults();
        RecoveryBench.run(new RecoveryBench.Options(dir == null ? d.dir() : dir, c, m, writers, DataSize.parse(resyncBandwidth),
                Durations.parse(lease), Durations.parse(before)), BenchArgs.stdout());
        return 0;
    }
}
