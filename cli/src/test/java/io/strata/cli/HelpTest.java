package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import picocli.CommandLine;

/**
 * The help of every command and subcommand, found in the picocli model (a command added later is
 * covered without touching this test): {@code strata PATH... --help}, {@code -h} and
 * {@code strata help PATH...} exit 0 and print the same text, with the usage line, a description
 * and at least one example of that very command, even though the command's required parameters
 * are missing. Examples are lines a user copies: each fits the 80 columns of the usage.
 *
 * <p>The choice for a group of subcommands ({@code admin}, {@code policy}, {@code cache},
 * {@code bench}) run bare is git's: it is a usage mistake, so the group's usage goes to stderr
 * after "Missing required subcommand" and the exit code is 2. {@code strata} alone is not a
 * mistake: it prints the list of commands on stdout and exits 0.
 */
class HelpTest {
    /** Every command's path below {@code strata} (the root's is empty), parents before their subcommands. */
    static List<List<String>> commandPaths() {
        List<List<String>> out = new ArrayList<>();
        walk(new CommandLine(new StrataMain()), List.of(), out, new IdentityHashMap<>());
        return out;
    }

    private static void walk(CommandLine c, List<String> path, List<List<String>> out, Map<CommandLine, Boolean> seen) {
        if (seen.put(c, true) != null) {
            return; // an alias of a command already walked
        }
        out.add(path);
        c.getSubcommands().forEach((name, sub) -> {
            List<String> p = new ArrayList<>(path);
            p.add(name);
            walk(sub, p, out, seen);
        });
    }

    private static CommandLine command(List<String> path) {
        CommandLine c = new CommandLine(new StrataMain());
        for (String name : path) {
            c = c.getSubcommands().get(name);
        }
        return c;
    }

    /** The text without blanks and line breaks (usage help wraps lines at 80 columns, where it likes). */
    private static String noBlanks(String s) {
        return s.replaceAll("\\s+", "");
    }

    private static String[] args(List<String> path, String... more) {
        return Stream.concat(path.stream(), Arrays.stream(more)).toArray(String[]::new);
    }

    @Test
    void theModelHoldsEveryCommandIncludingNestedOnes() {
        List<String> names = commandPaths().stream().map(p -> String.join(" ", p)).toList();
        assertThat(names).contains("", "help", "up", "ls", "policy set", "admin nodes", "cache drop", "bench fs", "umount")
                .hasSizeGreaterThan(35);
    }

    @TestFactory
    Stream<DynamicTest> everyCommandAnswersHelpWithUsageDescriptionAndAnExample() {
        return commandPaths().stream().map(path -> DynamicTest.dynamicTest("strata " + String.join(" ", path) + " --help", () -> {
            String name = String.join(" ", Stream.concat(Stream.of("strata"), path.stream()).toList());
            CliTest.Run help = CliTest.strata(args(path, "--help"));
            assertThat(help.code()).as(help.err()).isZero();
            assertThat(help.err()).isEmpty();
            assertThat(help.out()).startsWith("Usage: " + name + " ");

            String[] description = command(path).getCommandSpec().usageMessage().description();
            assertThat(description).as("description").isNotEmpty();
            assertThat(description[0]).as("description").isNotBlank();
            assertThat(noBlanks(help.out())).contains(noBlanks(description[0]));

            assertThat(help.out()).contains("\nExamples:\n");
            String examples = help.out().substring(help.out().indexOf("\nExamples:\n"));
            assertThat(examples.lines()).as("an example of " + name).anyMatch(l -> l.startsWith("  " + name + " ") || l.equals("  " + name));
            for (String line : command(path).getCommandSpec().usageMessage().footer()) {
                assertThat(line.length()).as("example line fits 80 columns: " + line).isLessThanOrEqualTo(80);
            }

            assertThat(CliTest.strata(args(path, "-h")).out()).isEqualTo(help.out());
            CliTest.Run viaHelp = CliTest.strata(args(List.of("help"), path.toArray(String[]::new)));
            assertThat(viaHelp.code()).as(viaHelp.err()).isZero();
            assertThat(viaHelp.out()).isEqualTo(help.out());
        }));
    }

    @Test
    void aGroupWithoutASubcommandIsAUsageMistakeThatShowsTheGroupsUsage() {
        List<List<String>> groups = commandPaths().stream().filter(p -> !p.isEmpty() && !command(p).getSubcommands().isEmpty()).toList();
        assertThat(groups).extracting(p -> String.join(" ", p)).contains("admin", "policy", "cache", "bench");
        for (List<String> group : groups) {
            CliTest.Run r = CliTest.strata(args(group));
            assertThat(r.code()).as(group.toString()).isEqualTo(2);
            assertThat(r.out()).isEmpty();
            assertThat(r.err()).startsWith("strata: Missing required subcommand\n").contains("Usage: strata " + String.join(" ", group))
                    .contains("Commands:");
        }
        CliTest.Run typo = CliTest.strata("admin", "nodez");
        assertThat(typo.code()).isEqualTo(2);
        assertThat(typo.err()).contains("nodez").contains("nodes").contains("Usage: strata admin");
    }

    @Test
    void strataAloneListsTheCommands() {
        CliTest.Run r = CliTest.strata();
        assertThat(r.code()).isZero();
        assertThat(r.out()).startsWith("Usage: strata ").contains("Commands:").contains("policy").contains("help");
        assertThat(CliTest.strata("help").out()).isEqualTo(r.out());
    }

    @Test
    void helpForAnUnknownCommandIsAUsageMistake() {
        CliTest.Run top = CliTest.strata("help", "frobnicate");
        assertThat(top.code()).isEqualTo(2);
        assertThat(top.err()).startsWith("strata: unknown command 'strata frobnicate'").contains("Try 'strata --help'");
        CliTest.Run sub = CliTest.strata("help", "policy", "frob");
        assertThat(sub.code()).isEqualTo(2);
        assertThat(sub.err()).startsWith("strata: unknown command 'strata policy frob'").contains("Usage: strata policy");
    }

    @Test
    void everySubcommandPrintsTheVersion() {
        String version = CliTest.strata("--version").out();
        assertThat(version).startsWith("strata ");
        assertThat(CliTest.strata("up", "-V").out()).isEqualTo(version);
        assertThat(CliTest.strata("policy", "set", "--version").out()).isEqualTo(version);
    }
}
