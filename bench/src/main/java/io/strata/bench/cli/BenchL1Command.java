package io.strata.bench.cli;

import io.strata.bench.L1Bench;
import io.strata.config.Durations;
import io.strata.core.DataSize;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code strata bench l1}: see {@link L1Bench}. */
@Command(name = "l1", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench l1 --working-set 128MiB --rounds 2"},
        description = "L1 cache (memory, NVMe) over L3: hot re-reads vs tmpfs and disk, first reads, a Zipf sample job, small-file writes with and without write-back.")
public final class BenchL1Command implements Callable<Integer> {
    @Option(names = "--working-set", defaultValue = "256MiB", description = "Bytes re-read hot (default ${DEFAULT-VALUE}).")
    String workingSet;

    @Option(names = "--block-size", defaultValue = "1MiB", description = "L1 block size (default ${DEFAULT-VALUE}).")
    String blockSize;

    @Option(names = "--read-sizes", defaultValue = "1MiB,128KiB", split = ",", description = "Application read sizes (default ${DEFAULT-VALUE}).")
    List<String> readSizes;

    @Option(names = "--threads", defaultValue = "2", description = "Reader threads (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--round", defaultValue = "2s", description = "Length of one round (default ${DEFAULT-VALUE}).")
    String round;

    @Option(names = "--rounds", defaultValue = "3", description = "Alternating rounds per case (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where L3 targets, the NVMe tier and the disk baseline go (default: the temp directory).")
    Path dir;

    @Option(names = "--tmpfs", defaultValue = "/dev/shm", paramLabel = "DIR", description = "A tmpfs directory for the baseline (default ${DEFAULT-VALUE}).")
    Path tmpfs;

    @Option(names = "--samples", defaultValue = "2048", description = "Samples of the Zipf job (default ${DEFAULT-VALUE}).")
    int samples;

    @Option(names = "--sample-size", defaultValue = "128KiB", description = "Size of one sample (default ${DEFAULT-VALUE}).")
    String sampleSize;

    @Option(names = "--zipf-s", defaultValue = "1.0", description = "Zipf exponent (default ${DEFAULT-VALUE}).")
    double zipfS;

    @Option(names = "--zipf-reads", defaultValue = "20000", description = "Sample reads of the Zipf job (default ${DEFAULT-VALUE}).")
    int zipfReads;

    @Option(names = "--small-files", defaultValue = "200", description = "Files of the small-file write test (default ${DEFAULT-VALUE}).")
    int smallFiles;

    @Option(names = "--small-file-size", defaultValue = "16KiB", description = "Size of one small file (default ${DEFAULT-VALUE}).")
    String smallFileSize;

    @Option(names = "--small-write", defaultValue = "4KiB", description = "Size of one write into a small file (default ${DEFAULT-VALUE}).")
    String smallWrite;

    @Override
    public Integer call() throws Exception {
        L1Bench.Options d = L1Bench.Options.defaults();
        DataSize ws = DataSize.parse(workingSet);
        DataSize block = DataSize.parse(blockSize);
        if (!block.isPowerOfTwo() || block.bytes() < 4096 || block.bytes() > 16L << 20) {
            throw new IllegalArgumentException("--block-size must be a power of two in [4KiB, 16MiB], got " + blockSize);
        }
        DataSize chunk = d.chunkSize();
        if (ws.bytes() < chunk.bytes() || ws.bytes() % chunk.bytes() != 0) {
            throw new IllegalArgumentException("--working-set must be a multiple of " + chunk + ", got " + workingSet);
        }
        List<DataSize> rs = new ArrayList<>();
        for (String x : readSizes) {
            DataSize s = DataSize.parse(x);
            if (!s.isPowerOfTwo() || s.bytes() > chunk.bytes()) {
                throw new IllegalArgumentException("--read-sizes: powers of two up to " + chunk + ", got " + x);
            }
            rs.add(s);
        }
        if (threads < 1 || threads > 64 || rounds < 1 || samples < 1 || zipfReads < 1 || smallFiles < 1) {
            throw new IllegalArgumentException("--threads (1..64), --rounds, --samples, --zipf-reads and --small-files must be positive");
        }
        DataSize sample = DataSize.parse(sampleSize);
        DataSize small = DataSize.parse(smallFileSize);
        if (sample.bytes() < 1 || sample.bytes() > 64L << 20 || small.bytes() < 1 || small.bytes() > 64L << 20) {
            throw new IllegalArgumentException("--sample-size and --small-file-size must be between 1B and 64MiB");
        }
        L1Bench.run(new L1Bench.Options(ws, block, chunk, rs, threads, Durations.parse(round), rounds, dir == null ? d.dir() : dir,
                tmpfs, samples, sample, zipfS, zipfReads, smallFiles, small, DataSize.parse(smallWrite)), BenchArgs.stdout());
        return 0;
    }
}
