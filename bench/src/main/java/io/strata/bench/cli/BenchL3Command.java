package io.strata.bench.cli;

import io.strata.bench.L3Bench;
import io.strata.config.Durations;
import io.strata.core.DataSize;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code strata bench l3}: see {@link L3Bench}. */
@Command(name = "l3", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench l3 --sizes 4MiB --streams 8"},
        description = "Chunk write/read through the storage client on a 3-replica chain vs raw disk and loopback TCP.")
public final class BenchL3Command implements Callable<Integer> {
    @Option(names = "--sizes", defaultValue = "1MiB,4MiB", split = ",", description = "Chunk sizes (default ${DEFAULT-VALUE}).")
    List<String> sizes;

    @Option(names = "--streams", defaultValue = "1,8", split = ",", description = "Concurrent streams (default ${DEFAULT-VALUE}).")
    List<Integer> streams;

    @Option(names = "--round", defaultValue = "3s", description = "Length of one round (default ${DEFAULT-VALUE}).")
    String round;

    @Option(names = "--rounds", defaultValue = "3", description = "Alternating rounds per case (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where the targets and raw files go (default: the temp directory).")
    Path dir;

    @Option(names = "--no-iperf", description = "Use raw Netty instead of iperf3 for the loopback TCP baseline.")
    boolean noIperf;

    @Option(names = "--sendfile-reads", description = "Replicas send chunk files with sendfile (verify-reads = false); the client checks CRCs.")
    boolean sendfile;

    @Option(names = "--no-pipeline", description = "Replicas store an update before they forward it (pipeline = false), "
            + "the baseline of pipelined chain writes.")
    boolean noPipeline;

    @Override
    public Integer call() throws Exception {
        List<DataSize> s = new ArrayList<>();
        for (String x : sizes) {
            DataSize d = DataSize.parse(x);
            if (d.bytes() < 64 * 1024 || d.bytes() > 64L * 1024 * 1024 || !d.isPowerOfTwo()) {
                throw new IllegalArgumentException("--sizes: chunk sizes are powers of two in [64KiB, 64MiB], got " + x);
            }
            s.add(d);
        }
        BenchArgs.eachBetween("--streams", streams, 1, 256);
        if (rounds < 1) {
            throw new IllegalArgumentException("--rounds must be at least 1");
        }
        L3Bench.Options d = L3Bench.Options.defaults();
        L3Bench.run(new L3Bench.Options(s, streams, Durations.parse(round), rounds, dir == null ? d.dir() : dir, !noIperf, !sendfile,
                        !noPipeline),
                BenchArgs.stdout());
        return 0;
    }
}
