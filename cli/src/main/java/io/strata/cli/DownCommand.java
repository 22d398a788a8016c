package io.strata.cli;

import io.strata.fuse.FuseMount;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata down}: stops what {@code strata up} started on a data directory, newest first
 * (the mount first: it unmounts on SIGTERM), and unmounts a mount point left behind by a mount
 * daemon that was killed.
 */
@Command(name = "down", mixinStandardHelpOptions = true,
        description = {"Stop the local cluster started by `strata up`.", "",
                "Newest process first (the mount unmounts itself); also unmounts a mount point left behind by a mount "
                        + "process that was killed. The data stays: `strata up` brings the cluster back with its files."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata down", "  strata down --data /scratch/strata"})
final class DownCommand implements Callable<Integer> {
    @Option(names = "--data", paramLabel = "DIR", description = "Data directory (default: $" + ClusterDir.ENV + ", else as for `strata up`).")
    Path data;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        ClusterDir dir = ClusterDir.resolve(data);
        PrintWriter out = spec.commandLine().getOut();
        try (AutoCloseable lock = dir.lock()) {
            if (dir.members().isEmpty()) {
                out.println("nothing is running on " + dir.root);
                unmountLeftover(dir, out);
                return 0;
            }
            stopAll(dir, out);
        }
        return 0;
    }

    /** SIGTERM to each daemon in reverse start order; SIGKILL after 15 s. */
    static void stopAll(ClusterDir dir, PrintWriter out) {
        try {
            List<ClusterDir.Member> members = dir.members();
            for (int i = members.size() - 1; i >= 0; i--) {
                ClusterDir.Member m = members.get(i);
                if (!ClusterDir.alive(m.pid())) {
                    out.println("  " + m.name() + " (pid " + m.pid() + ") was not running");
                    continue;
                }
                Optional<ProcessHandle> h = ProcessHandle.of(m.pid());
                h.ifPresent(ProcessHandle::destroy);
                boolean exited = h.map(p -> {
                    try {
                        p.onExit().get(15, TimeUnit.SECONDS);
                        return true;
                    } catch (Exception e) {
                        p.destroyForcibly();
                        return false;
                    }
                }).orElse(true);
                out.println("  stopped " + m.name() + " (pid " + m.pid() + ")" + (exited ? "" : " with SIGKILL after 15 s"));
            }
            dir.clearMembers();
            unmountLeftover(dir, out);
        } catch (IOException e) {
            out.println("strata: cannot read " + dir.root + ": " + e.getMessage());
        }
    }

    /** A mount whose daemon died (kill -9) stays in the kernel's table: takes it down. */
    static void unmountLeftover(ClusterDir dir, PrintWriter out) {
        UpLayout.find(dir.root).map(UpLayout::mountDir).filter(FuseMount::isMounted).ifPresent(d -> {
            FuseMount.unmount(d, true);
            out.println("  unmounted " + d + " (left behind by a mount process that was killed)");
        });
    }
}
