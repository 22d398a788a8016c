package io.strata.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code strata help [COMMAND [SUBCOMMAND...]]}: the usage of that command exactly as
 * {@code strata COMMAND... --help} prints it. picocli's own {@code HelpCommand} looks one level
 * down only ({@code strata help policy set} would print the usage of {@code policy}).
 */
@Command(name = "help", helpCommand = true, mixinStandardHelpOptions = true,
        description = {"Print the usage of a command or subcommand (as COMMAND --help does).", "",
                "What it does, its options and parameters, and examples. Without a COMMAND, the list of all commands."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata help", "  strata help up", "  strata help policy set"})
final class HelpCommand implements CommandLine.IHelpCommandInitializable2, Callable<Integer> {
    @Parameters(paramLabel = "COMMAND", arity = "0..*", description = "A command, then its subcommands.")
    List<String> names = new ArrayList<>();

    private CommandLine self;
    private CommandLine.Help.ColorScheme colors;
    private PrintWriter out;

    @Override
    public void init(CommandLine helpCommandLine, CommandLine.Help.ColorScheme colorScheme, PrintWriter outWriter, PrintWriter errWriter) {
        self = helpCommandLine;
        colors = colorScheme;
        out = outWriter;
    }

    @Override
    public Integer call() {
        CommandLine c = self.getParent();
        for (String name : names) {
            CommandLine sub = c.getSubcommands().get(name);
            if (sub == null) {
                // a usage mistake of the command that has no such subcommand (a group then lists its own)
                throw new CommandLine.ParameterException(c, "unknown command '" + c.getCommandSpec().qualifiedName() + " " + name + "'");
            }
            c = sub;
        }
        c.usage(out, colors);
        return 0;
    }
}
