package io.strata.cli;

import io.strata.bench.fs.FsBench;
import io.strata.config.Durations;
import io.strata.core.DataSize;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** The job sizes shared by {@code strata bench run} and {@code strata bench fs} (a picocli mixin). */
final class BenchFsOptions {
    @Option(names = {"-t", "--threads"}, defaultValue = "2", description = "Threads: one big file each (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--file-size", defaultValue = "128MiB", description = "Size of each big file (default ${DEFAULT-VALUE}).")
    String fileSize;

    @Option(names = "--io-size", defaultValue = "1MiB", description = "Size of one big-file write and read (default ${DEFAULT-VALUE}).")
    String ioSize;

    @Option(names = "--random-sizes", defaultValue = "4KiB,128KiB", split = ",", description = "Random read sizes (default ${DEFAULT-VALUE}).")
    List<String> randomSizes;

    @Option(names = "--random-time", defaultValue = "2s", description = "How long each random read job runs (default ${DEFAULT-VALUE}).")
    String randomTime;

    @Option(names = "--small-files", defaultValue = "100", description = "Small files written, stat'ed and read (0: skip; default ${DEFAULT-VALUE}).")
    int smallFiles;

    @Option(names = "--small-file-size", defaultValue = "128KiB", description = "Size of one small file (default ${DEFAULT-VALUE}).")
    String smallFileSize;

    @Option(names = "--json", description = "Print one JSON document instead of the table (no progress lines).")
    boolean json;

    @Option(names = "--no-progress", description = "No progress lines on stderr.")
    boolean noProgress;

    FsBench.Options options(int rounds) {
        List<DataSize> rs = new ArrayList<>();
        for (String s : randomSizes) {
            rs.add(DataSize.parse(s));
        }
        return new FsBench.Options(threads, DataSize.parse(fileSize), DataSize.parse(ioSize), smallFiles, DataSize.parse(smallFileSize),
                rs, Durations.parse(randomTime), rounds);
    }

    /** The engine, with progress lines on stderr unless --json or --no-progress (redrawn in place on a terminal). */
    FsBench engine(FsBench.Options o) {
        boolean quiet = json || noProgress;
        return new FsBench(o, quiet ? null : System.err, terminal());
    }

    /** Whether this process talks to a terminal (JDK 22+ has a Console even when redirected: ask it). */
    static boolean terminal() {
        java.io.Console c = System.console();
        if (c == null) {
            return false;
        }
        try {
            return (Boolean) java.io.Console.class.getMethod("isTerminal").invoke(c);
        } catch (ReflectiveOperationException e) {
            return true;
        }
    }

    /** The 1-minute load average (Linux), or "?" (printed with the figures: a busy machine shows in them). */
    static String loadAverage() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ")[0];
        } catch (java.io.IOException | RuntimeException e) {
            return "?";
        }
    }
}
