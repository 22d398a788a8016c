package io.strata.cli;

import io.strata.core.StrataException;
import io.strata.core.buffer.LeakTracker;
import java.io.PrintStream;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code strata} command. User mistakes and operational errors print one line on stderr
 * and exit non-zero (1 for errors, 2 for bad usage); {@code --verbose} adds the stack trace.
 */
@Command(name = "strata", mixinStandardHelpOptions = true, versionProvider = VersionCommand.Provider.class,
        description = "Strata: tiered storage for AI clusters (L1 local cache, L2 pooled NVMe, L3 CRAQ chains).",
        subcommands = {
                VersionCommand.class,
                UpCommand.class,
                DownCommand.class,
                PingCommand.class,
                NodeCommand.class,
                StorageCommand.class,
                BenchCommand.class,
                MgmtdDaemonCommand.class,
                AdminCommand.class,
                MetaCommand.class,
                PolicyCommand.class,
                CacheCommand.class,
                MountCommand.class,
                MountCommand.Umount.class,
                FsCommands.Ls.class,
                FsCommands.Stat.class,
                FsCommands.Cat.class,
                FsCommands.Put.class,
                FsCommands.Cp.class,
                FsCommands.Rm.class,
                FsCommands.Mkdir.class,
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
        LeakTracker.install();
        // daemon commands return only once they were asked to stop
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command line with the given streams; returns the exit code. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        StrataMain root = new StrataMain();
        CommandLine cl = new CommandLine(root);
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        cl.setParameterExceptionHandler((ex, a) -> {
            CommandLine c = ex.getCommandLine();
            c.getErr().println("strata: " + ex.getMessage());
            c.getErr().println("Try '" + c.getCommandSpec().qualifiedName() + " --help' for usage.");
            return 2;
        });
        cl.setExecutionExceptionHandler((ex, c, parsed) -> {
            Throwable t = StrataException.unwrapCompletion(ex);
            c.getErr().println("strata: " + message(t));
            if (root.verbose) {
                t.printStackTrace(c.getErr());
            }
            return 1;
        });
        return cl.execute(args);
    }

    private static String message(Throwable t) {
        if (t instanceof StrataException se) {
            return se.getMessage();
        }
        if (t instanceof IllegalArgumentException || t instanceof IllegalStateException || t instanceof java.io.IOException) {
            return t.getMessage() == null ? t.toString() : t.getMessage();
        }
        return t.toString();
    }
}
