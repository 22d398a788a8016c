package io.strata.cli;

import io.strata.bench.Table;
import io.strata.client.Checkpoints;
import io.strata.client.StrataFileSystem;
import io.strata.config.Durations;
import io.strata.core.DataSize;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.Checkpoint.Generation;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata ckpt ...}: checkpoint generations (docs/checkpoints.md) on the cluster
 * {@link ClientSource} finds, as the calling user. A root is a directory with
 * {@code profile=checkpoint}; a generation is a directory in it.
 */
@Command(name = "ckpt", mixinStandardHelpOptions = true,
        description = {"Checkpoint generations: commit, status, list, latest, wait, verify, stage, pin, retain.", "",
                "A checkpoint root is a directory whose policy sets profile=checkpoint; each directory in it is a generation, "
                        + "written by many ranks and then committed as a whole. Readers and `latest` see committed generations only; "
                        + "a committed generation is read-only; retention removes old ones once a newer one is durable in L3."},
        subcommands = {CkptCommand.Commit.class, CkptCommand.StatusCmd.class, CkptCommand.ListCmd.class, CkptCommand.Latest.class,
                CkptCommand.Wait.class, CkptCommand.Verify.class, CkptCommand.Stage.class, CkptCommand.Pin.class,
                CkptCommand.Unpin.class, CkptCommand.Retain.class},
        footerHeading = "%nExamples:%n",
        footer = {"  strata policy set /ckpt/run1 profile=checkpoint",
                "  strata ckpt commit /ckpt/run1/step-1000 --level l2",
                "  strata ckpt wait /ckpt/run1/step-1000 --level l3",
                "  strata ckpt latest /ckpt/run1",
                "  strata ckpt retain /ckpt/run1 --keep-last 3 --keep-every 10"})
final class CkptCommand {
    private CkptCommand() {
    }

    abstract static class Base implements Callable<Integer> {
        @Mixin
        ClientSource source;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        PrintWriter out() {
            return spec.commandLine().getOut();
        }

        @Override
        public Integer call() throws Exception {
            try (ClientSource.Session s = source.connect()) {
                return run(s.fs(), s.fs().checkpoints());
            } finally {
                out().flush();
            }
        }

        abstract int run(StrataFileSystem fs, Checkpoints c) throws Exception;
    }

    static Checkpoint.Level level(String s) {
        try {
            return Checkpoint.Level.parse(s);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(new CommandLine(new Object()), e.getMessage());
        }
    }

    static Duration duration(String s, String what) {
        try {
            return Durations.parse(s);
        } catch (IllegalArgumentException e) {
            throw new StrataException(Status.INVALID_ARGUMENT, what + ": " + e.getMessage());
        }
    }

    /** One line per durability change, with the time since {@code t0}. */
    static java.util.function.Consumer<Generation> progress(PrintWriter o, long t0) {
        return g -> {
            o.printf("  %6.1f s  %s: %s%n", (System.nanoTime() - t0) / 1e9, g.name(), g.durability().text());
            o.flush();
        };
    }

    @Command(name = "commit", mixinStandardHelpOptions = true,
            description = {"Commit a generation: check every file, publish its manifest, wait for the level.", "",
                    "Refused (nothing changes) while a file is open for writing (after waiting --busy-wait for writers to "
                            + "close), when a file of --expect is missing or of another size. Prints the generation's status once "
                            + "the level is reached: l2 = both L2 copies of every staged file, l3 = durable in L3."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata ckpt commit /ckpt/run1/step-1000",
                    "  strata ckpt commit /ckpt/run1/step-1 --level l3 --expect files.tsv"})
    static final class Commit extends Base {
        @Parameters(index = "0", paramLabel = "GENERATION", description = "The generation directory.")
        String gen;

        @Option(names = "--level", defaultValue = "l2", description = "l2 or l3 (default: ${DEFAULT-VALUE}).")
        String level;

        @Option(names = "--expect", paramLabel = "FILE", description = "Local file listing the files that must be there: path<TAB>size per line.")
        Path expect;

        @Option(names = "--busy-wait", defaultValue = "10s", description = "How long to wait for files open for writing (default: ${DEFAULT-VALUE}).")
        String busyWait;

        @Option(names = "--timeout", defaultValue = "1h", description = "Give up waiting for the level after this long (default: ${DEFAULT-VALUE}).")
        String timeout;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) throws Exception {
            List<Checkpoint.Expected> expected = new ArrayList<>();
            if (expect != null) {
                for (String l : Files.readAllLines(expect)) {
                    if (!l.isBlank()) {
                        int tab = l.lastIndexOf('\t');
                        try {
                            expected.add(new Checkpoint.Expected(tab < 0 ? l.strip() : l.substring(0, tab),
                                    tab < 0 ? -1 : Long.parseLong(l.substring(tab + 1).strip())));
                        } catch (IllegalArgumentException e) {
                            throw new StrataException(Status.INVALID_ARGUMENT, expect + ": bad line \"" + l + "\": " + e.getMessage());
                        }
                    }
                }
            }
            long t0 = System.nanoTime();
            Generation g = c.commit(gen, level(level), expected, duration(busyWait, "--busy-wait"), duration(timeout, "--timeout"),
                    progress(out(), t0));
            out().printf("committed %s as generation %d at %s in %.2f s%n", gen, g.seq(), level, (System.nanoTime() - t0) / 1e9);
            out().print(g.statusText(parent(gen)));
            return 0;
        }
    }

    @Command(name = "status", mixinStandardHelpOptions = true,
            description = {"A generation's state, durability and times (key=value lines)."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt status /ckpt/run1/step-1000"})
    static final class StatusCmd extends Base {
        @Parameters(index = "0", paramLabel = "GENERATION")
        String gen;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            out().print(c.status(gen).statusText(parent(gen)));
            return 0;
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true,
            description = {"The generations of a root: committed ones in commit order, then those being written or removed."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt list /ckpt/run1"})
    static final class ListCmd extends Base {
        @Parameters(index = "0", paramLabel = "ROOT")
        String root;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            Table t = new Table("seq", "generation", "state", "durability", "files", "size", "committed", "durable in L3", "pinned");
            for (Generation g : c.list(root)) {
                t.row(g.seq() == 0 ? "-" : String.valueOf(g.seq()), g.name(), g.state().text(), g.durability().text(),
                        String.valueOf(g.files()), DataSize.human(g.bytes()), Generation.time(g.committedMillis()),
                        Generation.time(g.l3Millis()), g.pinned() ? "yes" : "");
            }
            out().print(t.render());
            return 0;
        }
    }

    @Command(name = "latest", mixinStandardHelpOptions = true,
            description = {"The path of a root's newest committed generation (exit status 1 when there is none)."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt latest /ckpt/run1"})
    static final class Latest extends Base {
        @Parameters(index = "0", paramLabel = "ROOT")
        String root;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            var g = c.latest(root);
            if (g.isEmpty()) {
                spec.commandLine().getErr().println("strata: " + root + ": no committed generation");
                return 1;
            }
            out().println(Checkpoints.pathOf(root, g.get()));
            return 0;
        }
    }

    @Command(name = "wait", mixinStandardHelpOptions = true,
            description = {"Wait until a committed generation is at a level (l3: durable in L3), showing its progress."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt wait /ckpt/run1/step-1000 --level l3"})
    static final class Wait extends Base {
        @Parameters(index = "0", paramLabel = "GENERATION")
        String gen;

        @Option(names = "--level", defaultValue = "l3", description = "l2 or l3 (default: ${DEFAULT-VALUE}).")
        String level;

        @Option(names = "--timeout", defaultValue = "1h", description = "Give up after this long (default: ${DEFAULT-VALUE}).")
        String timeout;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            long t0 = System.nanoTime();
            Generation g = c.await(gen, level(level), duration(timeout, "--timeout"), progress(out(), t0));
            out().printf("%s is %s (%.1f s)%n", gen, g.durability().text(), (System.nanoTime() - t0) / 1e9);
            return 0;
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = {"Read every file of a committed generation and check it against the manifest (size, CRC32C).",
                    "", "Exit status 1 when a file differs."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt verify /ckpt/run1/step-1000"})
    static final class Verify extends Base {
        @Parameters(index = "0", paramLabel = "GENERATION")
        String gen;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            long t0 = System.nanoTime();
            int[] n = {0};
            Checkpoints.Verified v = c.verify(gen, p -> {
                if (++n[0] % 100 == 0) {
                    out().printf("  %d files checked%n", n[0]);
                    out().flush();
                }
            });
            double s = (System.nanoTime() - t0) / 1e9;
            for (String p : v.problems()) {
                out().println("  BAD " + p);
            }
            out().printf("%s: %d files, %s read in %.1f s: %s%s%n", gen, v.files(), DataSize.human(v.bytes()), s,
                    v.ok() ? "every file matches its manifest" : v.problems().size() + " differ",
                    v.withoutCrc() > 0 ? " (" + v.withoutCrc() + " without a checksum: size checked only)" : "");
            return v.ok() ? 0 : 1;
        }
    }

    @Command(name = "pin", mixinStandardHelpOptions = true,
            description = {"Pin a committed generation: retention never removes it, nor can its files be removed."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt pin /ckpt/run1/step-1000"})
    static final class Pin extends Base {
        @Parameters(index = "0", paramLabel = "GENERATION")
        String gen;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            c.pin(gen, true);
            out().println(gen + ": pinned");
            return 0;
        }
    }

    @Command(name = "unpin", mixinStandardHelpOptions = true, description = {"Unpin a generation: retention applies to it again."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt unpin /ckpt/run1/step-1000"})
    static final class Unpin extends Base {
        @Parameters(index = "0", paramLabel = "GENERATION")
        String gen;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            c.pin(gen, false);
            out().println(gen + ": unpinned");
            return 0;
        }
    }

    @Command(name = "retain", mixinStandardHelpOptions = true,
            description = {"Set a root's retention (policy fields checkpoint.keep-last, .keep-every, .grace) and print it.", "",
                    "Once a generation is durable in L3, older committed generations are removed unless among the newest "
                            + "--keep-last, every --keep-every-th (by commit order), pinned, or being read. A generation never "
                            + "committed is removed --grace after it began, once no writer has a file of it open."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt retain /ckpt/run1 --keep-last 3 --keep-every 10 --grace 2h",
                    "  strata ckpt retain /ckpt/run1          print it"})
    static final class Retain extends Base {
        @Parameters(index = "0", paramLabel = "ROOT")
        String root;

        @Option(names = "--keep-last", paramLabel = "N")
        Integer keepLast;

        @Option(names = "--keep-every", paramLabel = "K", description = "0 turns it off.")
        Integer keepEvery;

        @Option(names = "--grace", paramLabel = "DURATION")
        String grace;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            List<String> set = new ArrayList<>();
            if (keepLast != null) {
                set.add("checkpoint.keep-last=" + keepLast);
            }
            if (keepEvery != null) {
                set.add("checkpoint.keep-every=" + keepEvery);
            }
            if (grace != null) {
                set.add("checkpoint.grace=" + grace);
            }
            c.list(root); // refuses a directory that is not a root
            var p = set.isEmpty() ? fs.policy(root) : fs.setPolicy(root, set.toArray(String[]::new));
            for (var f : p.effective()) {
                if (f.key().startsWith("checkpoint.")) {
                    out().println(f.key() + "=" + f.value() + "   (from " + f.from() + ")");
                }
            }
            return 0;
        }
    }

    @Command(name = "stage", mixinStandardHelpOptions = true,
            description = {"Warm a committed generation in the L2 pool before a restore reads it.", "",
                    "Every chunk of the generation's staged files is made present again on the L2 agents that hold it (an "
                            + "agent that evicted its copy fetches it back from L3), so that a restore reads from L2."},
            footerHeading = "%nExamples:%n", footer = {"  strata ckpt stage /ckpt/run1                 the latest generation",
                    "  strata ckpt stage /ckpt/run1 --generation step-1000"})
    static final class Stage extends Base {
        @Parameters(index = "0", paramLabel = "ROOT")
        String root;

        @Option(names = "--generation", defaultValue = "latest", description = "A generation's name, or latest (default).")
        String generation;

        @Override
        int run(StrataFileSystem fs, Checkpoints c) {
            String gen = generation.equals("latest")
                    ? Checkpoints.pathOf(root, c.latest(root).orElseThrow(() -> new StrataException(Status.NOT_FOUND,
                            root + ": no committed generation to stage")))
                    : (root.endsWith("/") ? root : root + "/") + generation;
            long t0 = System.nanoTime();
            Checkpoints.Staged s = c.stage(gen, p -> {
                out().printf("  %s%n", p);
                out().flush();
            });
            out().printf("%s: %d of %d files staged in L2 (%s fetched back from L3, %d chunks already there) in %.1f s%s%n", gen,
                    s.stagedFiles(), s.files(), DataSize.human(s.fetchedBytes()), s.presentChunks(), (System.nanoTime() - t0) / 1e9,
                    s.l3Only() > 0 ? "; " + s.l3Only() + " files were never staged and are read from L3" : "");
            return 0;
        }
    }

    private static String parent(String path) {
        String p = path.endsWith("/") && path.length() > 1 ? path.substring(0, path.length() - 1) : path;
        int i = p.lastIndexOf('/');
        return i <= 0 ? "/" : p.substring(0, i);
    }
}
