package io.strata.cli;

import io.strata.fuse.FuseMount;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

/**
 * The embedded cluster of {@code strata bench fs}: {@code strata up --data DIR} run in this
 * process exactly as a user would run it (so every daemon is its own OS process: cluster
 * manager, meta service, three storage nodes, the FUSE mount), and {@code strata down} on
 * close, also from a shutdown hook when the bench is interrupted. Close then removes the data
 * directory, unless something is still mounted in it.
 */
final class BenchFsCluster implements AutoCloseable {
    final Path data;
    final Optional<Path> mount;
    /** Why there is no mount, when there is none. */
    final Optional<String> noMount;
    private final PrintStream log;
    private final AtomicBoolean down = new AtomicBoolean();
    private final Thread hook;

    private final AtomicBoolean stopped;

    private BenchFsCluster(Path data, Optional<Path> mount, Optional<String> noMount, PrintStream log, Thread hook, AtomicBoolean stopped) {
        this.data = data;
        this.mount = mount;
        this.noMount = noMount;
        this.log = log;
        this.hook = hook;
        this.stopped = stopped;
    }

    /** Starts the cluster in {@code data} (which must not hold one yet); {@code log} gets up's and down's output. */
    static BenchFsCluster up(Path data, PrintStream log) {
        return up(data, log, List.of());
    }

    /** As {@link #up(Path, PrintStream)}, with more options for {@code strata up}. */
    static BenchFsCluster up(Path data, PrintStream log, List<String> upOptions) {
        Optional<String> why = FuseMount.unavailable();
        List<String> args = new ArrayList<>(List.of("up", "--data", data.toString()));
        args.addAll(upOptions);
        if (why.isPresent()) {
            args.add("--no-mount");
        }
        AtomicBoolean stopped = new AtomicBoolean();
        Thread hook = new Thread(() -> {
            if (stopped.compareAndSet(false, true)) {
                DownCommand.stopAll(new ClusterDir(data), new PrintWriter(System.err, true));
            }
        }, "bench-fs-down");
        Runtime.getRuntime().addShutdownHook(hook);
        Optional<Path> mnt = why.isPresent() ? Optional.empty() : Optional.of(data.resolve("mnt").toAbsolutePath().normalize());
        BenchFsCluster c = new BenchFsCluster(data, mnt, why, log, hook, stopped);
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = StrataMain.run(args.toArray(String[]::new), log, new PrintStream(err, true, StandardCharsets.UTF_8));
        if (rc != 0) {
            c.close();
            throw new IllegalStateException("strata up --data " + data + " failed: " + err.toString(StandardCharsets.UTF_8).strip());
        }
        if (mnt.isPresent() && !FuseMount.isMounted(mnt.get())) {
            c.close();
            throw new IllegalStateException("strata up reported a mount, but " + mnt.get() + " is not mounted");
        }
        return c;
    }

    /** The mount daemon's metrics endpoint (from its ready file). */
    Optional<java.net.URI> mountMetrics() throws IOException {
        return mount.isEmpty() ? Optional.empty() : BenchFsRunCommand.upMountMetrics(data, mount.get());
    }

    @Override
    public void close() {
        if (!down.compareAndSet(false, true)) {
            return;
        }
        if (stopped.compareAndSet(false, true)) {
            StrataMain.run(new String[] {"down", "--data", data.toString()}, log, log);
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // shutting down: the hook runs (and finds the cluster already stopped)
        }
        if (mount.isPresent() && FuseMount.isMounted(mount.get())) {
            log.println("strata bench: " + mount.get() + " is still mounted; leaving " + data + " in place");
            return;
        }
        deleteTree(data, log);
    }

    /**
     * Removes {@code top} and everything in it (no symlinks followed). JDK classes and lambdas
     * only: it runs last, when a jar rebuilt meanwhile would fail to load a class not loaded yet.
     */
    static void deleteTree(Path top, PrintStream log) {
        if (!Files.exists(top)) {
            return;
        }
        try (Stream<Path> all = Files.walk(top)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | UncheckedIOException e) {
            log.println("strata bench: could not remove " + top + ": " + e.getMessage());
        }
    }
}
