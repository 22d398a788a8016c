package io.strata.core.util;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Starts a main class in a new JVM with this JVM's java binary, class path and flags (the
 * add-opens and native-access flags Strata needs), its output appended to a log file. Used by
 * {@code strata up} to run each daemon as its own OS process, and by tests that kill -9 a
 * process and restart it.
 */
public final class JavaProcess implements AutoCloseable {
    private final Process process;
    private final Path log;
    private final String name;

    private JavaProcess(String name, Process process, Path log) {
        this.name = name;
        this.process = process;
        this.log = log;
    }

    /**
     * Starts {@code mainClass args} in a child JVM. {@code extraJvmArgs} come after this JVM's own
     * flags (e.g. {@code -Xmx512m}); {@code env} adds environment variables.
     */
    public static JavaProcess start(String name, String mainClass, List<String> args, List<String> extraJvmArgs,
                                    Map<String, String> env, Path log) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            // keep module/native flags and system properties, drop debugger/agent and heap settings
            if (a.startsWith("--add-opens") || a.startsWith("--add-exports") || a.startsWith("--enable-native-access")
                    || a.startsWith("--sun-misc-unsafe-memory-access") || a.startsWith("-Dio.netty.") || a.startsWith("-Dstrata.")) {
                cmd.add(a);
            }
        }
        cmd.addAll(extraJvmArgs);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        Files.createDirectories(log.toAbsolutePath().getParent());
        ProcessBuilder pb = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        pb.environment().putAll(env);
        return new JavaProcess(name, pb.start(), log);
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public Path log() {
        return log;
    }

    /** Waits until {@code ready} holds; fails with the log's tail if the process dies or time runs out. */
    public void awaitReady(BooleanSupplier ready, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!ready.getAsBoolean()) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with status " + process.exitValue()
                        + " before it was ready; last lines of " + log + ":\n" + tail(30));
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(name + " not ready after " + timeout.toSeconds() + " s; last lines of "
                        + log + ":\n" + tail(30));
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + name);
            }
        }
    }

    /** The last {@code lines} lines of the log. */
    public String tail(int lines) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e.getMessage() + ")";
        }
    }

    /** SIGKILL, as a crash would: no shutdown hook runs. Waits for the process to be gone. */
    public void kill() {
        process.destroyForcibly();
        waitFor(Duration.ofSeconds(10));
    }

    /** SIGTERM, then SIGKILL if it has not exited within {@code grace}. */
    public void stop(Duration grace) {
        process.destroy();
        if (!waitFor(grace)) {
            kill();
        }
    }

    public boolean waitFor(Duration d) {
        try {
            return process.waitFor(d.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    public int exitValue() {
        return process.exitValue();
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        }
    }

    @Override
    public String toString() {
        return name + "(pid " + pid() + ")";
    }
}
