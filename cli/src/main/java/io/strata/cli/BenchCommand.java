package io.strata.cli;

import io.strata.bench.cli.BenchJmhCommand;
import io.strata.bench.cli.BenchL1Command;
import io.strata.bench.cli.BenchL3Command;
import io.strata.bench.cli.BenchMetaCommand;
import io.strata.bench.cli.BenchPeersCommand;
import io.strata.bench.cli.BenchRecoveryCommand;
import io.strata.bench.cli.BenchRpcCommand;
import picocli.CommandLine.Command;

/**
 * {@code strata bench SUITE}: benchmark suites; each prints a table and a last {@code result:}
 * line. The suites' commands live with the benchmarks (module bench, {@code io.strata.bench.cli});
 * {@code fs} and {@code run} stay here because they drive the embedded cluster {@code strata up}
 * starts and find clusters the way every client command does.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Run a benchmark suite; each prints a table, then a `result:` line.",
        footerHeading = "%nExamples:%n", footer = {"  strata bench fs", "  strata bench rpc --sizes 1MiB --streams 8"},
        subcommands = {BenchRpcCommand.class, BenchMetaCommand.class, BenchL3Command.class, BenchL1Command.class, BenchRecoveryCommand.class,
                BenchJmhCommand.class, BenchPeersCommand.class, BenchFsRunCommand.class, BenchFsCommand.class, BenchL2Command.class,
                BenchCkptCommand.class, BenchPrefetchCommand.class, BenchQosCommand.class})
final class BenchCommand {
}
