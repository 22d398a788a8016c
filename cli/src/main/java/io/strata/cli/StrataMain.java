package io.strata.cli;

import io.strata.core.StrataException;
import io.strata.core.buffer.LeakTracker;
import io.strata.core.buffer.NettyDefaults;
import java.io.PrintStream;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code strata} command. Every command and subcommand answers {@code -h}/{@code --help}
 * (and {@code strata help COMMAND...}) with its usage, a description and examples, even when
 * its required parameters are missing. Operational errors print one line on stderr (in the
 * user's words, see {@link UserErrors}) and exit 1; {@code --verbose} adds the stack trace.
 * Usage mistakes exit 2: one line and a pointer to {@code --help}, or, for a group of
 * subcommands ({@code admin}, {@code policy}, {@code cache}, {@code bench}) run without a valid
 * subcommand, the group's usage, as git does.
 */
@Command(name = "strata", mixinStandardHelpOptions = true, versionProvider = VersionCommand.Provider.class,
        description = {"Strata: tiered storage for AI clusters (L1 local cache, L2 pooled NVMe, L3 CRAQ chains).", "",
                "`strata up` starts a whole cluster on this machine; the client commands (ls, stat, cat, put, cp, rm, "
                        + "mkdir, policy, admin) then reach it with no flag. For another cluster give --mgmtd HOST:PORT (or "
                        + "set STRATA_MGMTD), --data DIR for a `strata up` cluster elsewhere (or set STRATA_DATA), or "
                        + "--config FILE; a flag beats the variable. `strata help COMMAND` tells more about each command."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata up                          start a local cluster, mounted at data/mnt",
                "  strata ls -l /                     list its top directory",
                "  strata put model.bin /ckpt/        copy a local file in",
                "  strata help policy set             the usage of one subcommand",
                "  strata down                        stop the local cluster"},
        subcommands = {
                VersionCommand.class,
                UpCommand.class,
                DownCommand.class,
                PingCommand.class,
                NodeCommand.class,
                StorageCommand.class,
                L2Command.class,
                HooksCommand.class,
                BenchCommand.class,
                MgmtdDaemonCommand.class,
                AdminCommand.class,
                MetaCommand.class,
                PolicyCommand.class,
                CkptCommand.class,
                PrefetchCommand.class,
                CacheCommand.class,
                StatsCommand.class,
                MountCommand.class,
                MountCommand.Umount.class,
                FsCommands.Ls.class,
                FsCommands.Stat.class,
                FsCommands.Cat.class,
                FsCommands.Put.class,
                FsCommands.Cp.class,
                FsCommands.Rm.class,
                FsCommands.Mkdir.class,
                HelpCommand.class,
        })
public final class StrataMain implements Runnable {
    @Option(names = {"-v", "--verbose"}, scope = CommandLine.ScopeType.INHERIT,
            description = "Print stack traces with errors.")
    boolean verbose;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    public static void main(String[] args) {
        NettyDefaults.apply();
        LeakTracker.install();
        // daemon commands return only once they were asked to stop
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command line with the given streams; returns the exit code. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        StrataMain root = new StrataMain();
        CommandLine cl = new CommandLine(root);
        versionEverywhere(cl, cl.getCommandSpec().versionProvider());
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        cl.setParameterExceptionHandler((ex, a) -> {
            CommandLine c = ex.getCommandLine();
            PrintWriter e = c.getErr();
            e.println("strata: " + ex.getMessage());
            CommandLine.UnmatchedArgumentException.printSuggestions(ex, e);
            if (c.getParent() != null && !c.getSubcommands().isEmpty()) {
                c.usage(e); // a group without (or with an unknown) subcommand lists its subcommands, as git does
            } else {
                e.println("Try '" + c.getCommandSpec().qualifiedName() + " --help' for usage.");
            }
            return 2;
        });
        cl.setExecutionExceptionHandler((ex, c, parsed) -> {
            Throwable t = StrataException.unwrapCompletion(ex);
            c.getErr().println("strata: " + UserErrors.message(t));
            if (root.verbose) {
                t.printStackTrace(c.getErr());
            }
            return 1;
        });
        return cl.execute(args);
    }

    /** {@code -V} of every subcommand (from the standard help options) prints what {@code strata --version} does. */
    private static void versionEverywhere(CommandLine c, CommandLine.IVersionProvider version) {
        c.getCommandSpec().versionProvider(version);
        c.getSubcommands().values().forEach(sub -> versionEverywhere(sub, version));
    }
}
