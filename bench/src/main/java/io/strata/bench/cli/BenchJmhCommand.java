package io.strata.bench.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Unmatched;

/**
 * {@code strata bench jmh [PATTERN] [JMH OPTIONS]}: the JMH microbenchmarks of the hot paths
 * (frame codec, CRC32C, chunk index lookup, L1 memory hit, chain selection), each next to its
 * raw baseline in the same run. Any JMH option passes through (e.g. {@code -f 1 -wi 2 -i 3}).
 */
@Command(name = "jmh", mixinStandardHelpOptions = true,
        footerHeading = "%nExamples:%n", footer = {"  strata bench jmh Crc32c -f 1 -wi 2 -i 3"},
        description = "JMH microbenchmarks of the hot paths, each with a raw baseline (JMH options pass through).")
public final class BenchJmhCommand implements Callable<Integer> {
    @Parameters(arity = "0..1", paramLabel = "PATTERN", description = "Regex of benchmarks to run (default: all).")
    String pattern;

    @Unmatched
    List<String> jmhArgs = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        List<String> args = new ArrayList<>(jmhArgs);
        if (pattern != null) {
            args.add(pattern);
        }
        new Runner(new CommandLineOptions(args.toArray(String[]::new))).run();
        return 0;
    }
}
