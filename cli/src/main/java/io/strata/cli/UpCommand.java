package io.strata.cli;

import io.strata.core.util.JavaProcess;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata up}: starts the local cluster, each daemon its own OS process, and returns once
 * every one is ready (or stays attached with {@code --foreground}). What it starts grows with
 * the project; today it is one RPC node.
 */
@Command(name = "up", description = "Start a local Strata cluster on this machine (each daemon its own process).")
final class UpCommand implements Callable<Integer> {
    @Option(names = "--data", paramLabel = "DIR", description = "Data directory (default: $STRATA_DATA, else data/ in the Strata checkout).")
    Path data;

    @Option(names = "--listen", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:0",
            description = "RPC address of the node (default ${DEFAULT-VALUE}: any free port).")
    String listen;

    @Option(names = "--foreground", description = "Stay attached; Ctrl-C stops the cluster.")
    boolean foreground;

    @Option(names = "--ready-timeout", defaultValue = "60s", description = "How long to wait for the daemons (default ${DEFAULT-VALUE}).")
    String readyTimeout;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** One daemon to start: its name, the strata subcommand and its config file's text. */
    record DaemonSpec(String name, String command, String toml) {
    }

    @Override
    public Integer call() throws Exception {
        ClusterDir dir = ClusterDir.resolve(data);
        PrintWriter out = spec.commandLine().getOut();
        List<ClusterDir.Member> started = new ArrayList<>();
        try (AutoCloseable lock = dir.lock()) {
            List<ClusterDir.Member> running = dir.members().stream().filter(m -> ClusterDir.alive(m.pid())).toList();
            if (!running.isEmpty()) {
                throw new IllegalStateException("a cluster is already running on " + dir.root + " (pids "
                        + running.stream().map(m -> String.valueOf(m.pid())).toList()
                        + "); stop it with: strata down --data " + dir.root);
            }
            Duration timeout = io.strata.config.Durations.parse(readyTimeout);
            List<JavaProcess> processes = new ArrayList<>();
            try {
                for (DaemonSpec d : daemons(dir)) {
                    processes.add(start(dir, d, timeout, started));
                }
                dir.writeMembers(started);
            } catch (RuntimeException | IOException e) {
                processes.forEach(p -> p.stop(Duration.ofSeconds(5)));
                dir.clearMembers();
                throw e;
            }
        }
        out.println("Strata is up (data in " + dir.root + "):");
        for (ClusterDir.Member m : started) {
            out.printf("  %-10s pid %-8d rpc %-22s log %s%n", m.name(), m.pid(), m.rpc(), m.log());
        }
        ClusterDir.Member first = started.get(0);
        out.println("Try:  strata ping " + first.rpc());
        out.println("Stop: strata down --data " + dir.root);
        if (foreground) {
            CountDownLatch forever = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> DownCommand.stopAll(dir, out)));
            forever.await();
        }
        return 0;
    }

    /** The daemons of the local cluster, in start order. */
    List<DaemonSpec> daemons(ClusterDir dir) {
        String node = """
                [node]
                name = "node-1"
                listen = "%s"
                data = "%s"
                metrics = "127.0.0.1:0"
                """.formatted(listen, dir.daemonDir("node-1"));
        return List.of(new DaemonSpec("node-1", "node", node));
    }

    private static JavaProcess start(ClusterDir dir, DaemonSpec d, Duration timeout, List<ClusterDir.Member> started) throws IOException {
        Path home = dir.daemonDir(d.name());
        Files.createDirectories(home);
        Path config = home.resolve(d.name() + ".toml");
        Files.writeString(config, d.toml());
        Path ready = home.resolve(DaemonRuntime.READY_FILE);
        Files.deleteIfExists(ready);
        Path log = dir.logs().resolve(d.name() + ".log");
        JavaProcess p = JavaProcess.start(d.name(), StrataMain.class.getName(), List.of(d.command(), "--config", config.toString()),
                List.of("-Xmx512m", "-XX:+ExitOnOutOfMemoryError"), Map.of(), log);
        p.awaitReady(() -> Files.exists(ready), timeout);
        Properties props = new Properties();
        try (Reader r = Files.newBufferedReader(ready)) {
            props.load(r);
        }
        started.add(new ClusterDir.Member(d.name(), p.pid(), props.getProperty("rpc", ""), log));
        return p;
    }
}
