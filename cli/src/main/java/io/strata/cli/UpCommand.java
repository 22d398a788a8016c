package io.strata.cli;

import io.strata.core.NodeContext;
import io.strata.core.TargetId;
import io.strata.core.util.Futures;
import io.strata.core.util.JavaProcess;
import io.strata.fuse.FuseMount;
import io.strata.fuse.MountOptions;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.store.AtomicFiles;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata up}: the embedded cluster on one machine, each daemon its own OS process as in
 * production: a cluster manager (one Ratis peer), a meta service on LMDB, storage nodes that
 * register with the manager (which builds a chain table of {@code --replicas} replicas from
 * them), and a FUSE mount. It returns once all of them are ready, printing what runs where and
 * how to stop it, or stays attached with {@code --foreground}. Without FUSE (or with
 * {@code --no-mount}) the cluster runs without a mount and the native client commands reach it.
 *
 * <p>Authentication is on ({@link UpAuth}): every daemon verifies tokens signed by the cluster
 * key and presents its own, and the client and admin tokens sit in the data directory. So is
 * TLS ({@link UpTls}, off with {@code --no-tls}): every RPC connection between daemons, and from
 * the mount and the native commands, is mutual TLS with certificates of the cluster's own CA, and
 * the scheduler hooks' API is HTTPS with its certificate (callers verify it with the CA).
 *
 * <p>The data directory keeps everything ({@link ClusterDir}, {@link UpLayout}): a later
 * {@code strata up} on it brings back the same cluster with all its files. It is private to the
 * user running {@code strata up} ({@link ClusterDir#claim}); one that other users may write is
 * refused.
 */
@Command(name = "up", mixinStandardHelpOptions = true,
        description = {"Start a local Strata cluster on this machine (each daemon its own process) and mount it.", "",
                "A cluster manager, a meta service, storage nodes whose targets form replicated chains, and a FUSE "
                        + "mount at DATA/mnt with an L1 cache, each its own OS process as in production. Returns once all of it "
                        + "serves, printing what runs where and how to stop it. The data directory keeps everything: `strata "
                        + "up` on it again brings back the same cluster with its files. Without FUSE the cluster runs without a "
                        + "mount; the native commands (ls, put, cat...) reach it either way."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata up                                 in data/, mounted at data/mnt",
                "  strata up --data /scratch/strata --no-mount",
                "  strata up --storage-nodes 4 --replicas 2    (a new data directory)",
                "  strata up --l2-agents 0                     (no L2 pool; a new data directory)",
                "  strata up --no-tls                          (plaintext RPC and hooks API)",
                "  strata up --fuse libfuse3                   (1 MiB FUSE requests, JDK 22+)"})
final class UpCommand implements Callable<Integer> {
    @Option(names = "--data", paramLabel = "DIR", description = "Data directory (default: $" + ClusterDir.ENV + ", else data/ in the Strata checkout).")
    Path data;

    @Option(names = "--mount", paramLabel = "DIR", description = "Mount point (default: DATA/mnt).")
    Path mount;

    @Option(names = "--no-mount", description = "Start the cluster without a FUSE mount (use the native client: strata ls|cat|put|cp|rm).")
    boolean noMount;

    @Option(names = "--fuse", paramLabel = "LIBFUSE", description = "The mount's libfuse: libfuse2 (the default, 128 KiB requests) "
            + "or libfuse3 (1 MiB requests, JDK 22+).")
    String fuse;

    /** {@link #fuse}, parsed. */
    private MountOptions.Libfuse libfuse = MountOptions.Libfuse.LIBFUSE2;

    @Option(names = "--no-l1", description = "Mount without the L1 cache (memory + NVMe under DATA/mount).")
    boolean noL1;

    @Option(names = "--storage-nodes", description = "Storage nodes (default 3; fixed at the first start, later starts reuse it).")
    Integer storageNodes;

    @Option(names = "--replicas", description = "Replicas per chain (default 3; fixed at the first start, later starts reuse it).")
    Integer replicas;

    @Option(names = "--targets", description = "Targets (chains) per storage node (default 4; fixed at the first start, later starts reuse it).")
    Integer targets;

    @Option(names = "--l2-agents", description = "L2 agents, each standing in for a compute node's spare NVMe (default 2; 0: no L2 tier; "
            + "fixed at the first start, later starts reuse it).")
    Integer l2Agents;

    @Option(names = "--no-qos", description = "Storage nodes and L2 agents run every request as it arrives ([storage.qos] and [l2.qos] "
            + "enabled = false) and the mount and commands hold no class to an in-flight budget ([client.in-flight] all 0), for comparisons.")
    boolean noQos;

    @Option(names = "--no-tls", description = "Plaintext RPC and plain HTTP hooks API: no [tls] in the daemons' and the client's configs "
            + "(for comparisons).")
    boolean noTls;

    @Option(names = "--foreground", description = "Stay attached; Ctrl-C stops the cluster.")
    boolean foreground;

    @Option(names = "--ready-timeout", defaultValue = "180s", description = "How long to wait for the daemons (default ${DEFAULT-VALUE}).")
    String readyTimeout;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** One daemon to start: its name, the strata subcommand, its config file's text, extra arguments and heap. */
    record DaemonSpec(String name, String command, String toml, List<String> args, String heap) {
    }

    @Override
    public Integer call() throws Exception {
        ClusterDir dir = ClusterDir.resolve(data);
        PrintWriter out = spec.commandLine().getOut();
        Duration timeout = io.strata.config.Durations.parse(readyTimeout);
        List<ClusterDir.Member> started = new ArrayList<>();
        UpLayout layout;
        Optional<String> noFuse;
        dir.claim();
        try (AutoCloseable lock = dir.lock()) {
            List<ClusterDir.Member> running = dir.members().stream().filter(m -> ClusterDir.alive(m.pid())).toList();
            if (!running.isEmpty()) {
                throw new IllegalStateException("a cluster is already running on " + dir.root + " (pids "
                        + running.stream().map(m -> String.valueOf(m.pid())).toList()
                        + "); stop it with: strata down --data " + dir.root);
            }
            layout = UpLayout.loadOrCreate(dir, storageNodes, replicas, targets, l2Agents, mount);
            UpAuth.init(dir);
            if (!noTls) {
                UpTls.init(dir);
            }
            libfuse = fuse == null ? MountOptions.Libfuse.LIBFUSE2 : MountOptions.Libfuse.parse("--fuse", fuse);
            noFuse = noMount ? Optional.of("--no-mount was given") : FuseMount.unavailable(libfuse);
            List<JavaProcess> processes = new ArrayList<>();
            try {
                out.println("strata: starting the cluster manager, the meta service, " + layout.storageNodes() + " storage nodes and "
                        + layout.l2Rpc().size() + " L2 agents...");
                out.flush();
                processes.add(start(dir, daemon("mgmtd", layout.mgmtdToml(), List.of(), "256m"), timeout, started));
                List<DaemonSpec> next = new ArrayList<>();
                next.add(daemon("meta", layout.metaToml(),
                        List.of("--mgmtd", layout.mgmtdAddress(), "--node-id", String.valueOf(UpLayout.META_NODE_ID)), "512m"));
                for (int i = 1; i <= layout.storageNodes(); i++) {
                    String toml = layout.storageToml(i) + (noQos ? "\n[storage.qos]\nenabled = false\n" : "");
                    next.add(new DaemonSpec("storage-" + i, "storage", toml, List.of(), "512m"));
                }
                processes.addAll(startAll(dir, next, timeout, started));
                awaitChains(dir, layout, timeout);
                List<DaemonSpec> agents = new ArrayList<>();
                for (int i = 1; i <= layout.l2Rpc().size(); i++) {
                    agents.add(new DaemonSpec("l2-" + i, "l2", layout.l2Toml(i) + (noQos ? "\n[l2.qos]\nenabled = false\n" : ""), List.of(),
                            "384m"));
                }
                processes.addAll(startAll(dir, agents, timeout, started));
                if (!layout.l2Rpc().isEmpty()) {
                    processes.add(start(dir, daemon("hooks", layout.hooksToml(), List.of(), "256m"), timeout, started));
                }
                String budgets = noQos ? "\n[client.in-flight]\ncheckpoint = \"0\"\nprefetch = \"0\"\nbackground = \"0\"\n" : "";
                AtomicFiles.plain().write(dir.root.resolve(ClientSource.CLIENT_TOML),
                        layout.clientToml() + budgets + UpAuth.clientToml(dir) + (noTls ? "" : UpTls.clientToml(dir)), false);
                if (noFuse.isEmpty()) {
                    if (FuseMount.isMounted(layout.mountDir())) {
                        // left behind by a mount daemon that was killed (mkdir on it would fail with ENOTCONN)
                        FuseMount.unmount(layout.mountDir(), true);
                    }
                    Files.createDirectories(layout.mountDir());
                    processes.add(start(dir, daemon("mount", layout.mountToml(!noL1, libfuse) + budgets, List.of(), "1g"), timeout, started));
                }
                dir.writeMembers(started);
            } catch (RuntimeException | IOException e) {
                for (int i = processes.size() - 1; i >= 0; i--) {
                    processes.get(i).stop(Duration.ofSeconds(10));
                }
                dir.clearMembers();
                throw e;
            }
        }
        Path prometheus = MetricsTargets.writePrometheusConfig(dir);
        report(out, dir, layout, started, noFuse);
        out.println("Metrics:        strata stats --data " + dir.root + " (one line a second); Prometheus: prometheus --config.file="
                + prometheus);
        out.flush();
        if (foreground) {
            CountDownLatch forever = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> DownCommand.stopAll(dir, out)));
            forever.await();
        }
        return 0;
    }

    private static DaemonSpec daemon(String name, String toml, List<String> args, String heap) {
        return new DaemonSpec(name, name, toml, args, heap);
    }

    private void report(PrintWriter out, ClusterDir dir, UpLayout layout, List<ClusterDir.Member> started, Optional<String> noFuse) {
        out.println("Strata is up (data in " + dir.root + "):");
        for (ClusterDir.Member m : started) {
            String where = m.name().equals("mount") ? "dir " + layout.mountDir() : "rpc " + m.rpc();
            out.printf("  %-10s pid %-8d %-26s log %s%n", m.name(), m.pid(), where, m.log());
        }
        out.println("Chains: table 1 of " + layout.replicas() + " replicas over " + layout.storageNodes() + " storage nodes ("
                + layout.targets() + " targets each); cluster manager " + layout.mgmtdAddress() + ", meta service " + layout.metaAddress() + ".");
        if (!layout.l2Rpc().isEmpty()) {
            out.println("L2 pool: " + layout.l2Rpc().size() + " agents; stage a directory's files in it with: strata policy set /DIR tiers.l2=stage"
                    + " (add durability=l2 to let fsync return once both L2 copies are synced); watch it with: strata admin l2");
            String hooks = HooksEndpoint.url(UpLayout.HOST + ":" + layout.hooksHttp(), !noTls) + "/v1/";
            out.println("Scheduler hooks: " + hooks + (noTls ? "" : " (verify it with the cluster CA: curl --cacert "
                    + dir.root.resolve(UpTls.DIR).resolve(UpTls.CA_CERT) + ")") + " ; stage a job's data before it starts with: "
                    + "strata prefetch submit --job J --path /DIR --deadline 30m");
        }
        String data = " --data " + dir.root;
        if (noFuse.isEmpty()) {
            out.println("Mounted at " + layout.mountDir() + " (" + libfuse.configName() + "): use it like any directory (cp, tar, dd, git, ...).");
        } else {
            out.println("No FUSE mount (" + noFuse.get() + "); use the native client, which needs no FUSE:");
        }
        out.println("Native client:  strata ls /   strata put FILE /DIR   strata cat /DIR/FILE   strata stat /DIR/FILE");
        out.println("                strata cp strata:/A LOCAL   strata rm /DIR/FILE   strata policy get /DIR");
        out.println("                (not the default data directory? add" + data + ", or: export " + ClusterDir.ENV + "=" + dir.root + ")");
        out.println("Cluster state:  strata admin nodes|chains" + data);
        out.println("Stop:           strata down" + data);
        out.println("Help:           strata help COMMAND   (or strata COMMAND --help)");
        out.flush();
    }

    /** Waits until the manager's routing has a chain table of the layout's replicas whose every target serves. */
    private void awaitChains(ClusterDir dir, UpLayout layout, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "no answer from the cluster manager";
        try (NodeContext ctx = NodeContext.builder("strata-up").eventLoopThreads(1).blockingThreads(1)
                .credentials(UpAuth.admin(layout.data())).tls(noTls ? null : UpTls.client(dir)).build();
             MgmtdClient m = new MgmtdClient(ctx, MgmtdClient.parse(layout.mgmtdAddress()))) {
            while (System.nanoTime() < deadline) {
                try {
                    MgmtdMessage.RoutingReply r = Futures.join(m.call(new MgmtdMessage.GetRouting(0, 0), MgmtdMessage.RoutingReply.class,
                            Duration.ofSeconds(2), Duration.ofSeconds(5)), Duration.ofSeconds(6));
                    last = notReady(r.routing(), layout.replicas());
                    if (last == null) {
                        return;
                    }
                } catch (RuntimeException e) {
                    last = e.getMessage();
                }
                sleep(200);
            }
        }
        throw new IllegalStateException("the chains did not become ready within " + timeout.toSeconds() + " s: " + last);
    }

    /** Why the routing is not ready to serve files yet, or null when it is. */
    static String notReady(RoutingInfo r, int replicas) {
        if (r.latestTable(replicas).isEmpty()) {
            return "no chain table of " + replicas + " replicas yet (routing version " + r.version() + ")";
        }
        for (ChainInfo c : r.chains().values()) {
            for (TargetId t : c.targets()) {
                TargetState s = r.target(t).state();
                if (s != TargetState.SERVING) {
                    return c.id() + ": target " + t.value() + " is " + s.publicName();
                }
            }
        }
        return null;
    }

    /**
     * Launches every daemon of {@code specs} at once, then waits for each in order, recording it in
     * {@code started} and the data directory; on a failure stops all of them and rethrows.
     */
    private List<JavaProcess> startAll(ClusterDir dir, List<DaemonSpec> specs, Duration timeout, List<ClusterDir.Member> started)
            throws IOException {
        List<JavaProcess> ps = new ArrayList<>();
        try {
            for (DaemonSpec d : specs) {
                ps.add(launch(dir, d));
            }
            for (int i = 0; i < specs.size(); i++) {
                started.add(await(dir, specs.get(i), ps.get(i), timeout));
                dir.writeMembers(started); // so that `strata down` finds it even if `up` is interrupted
            }
            return ps;
        } catch (RuntimeException | IOException e) {
            ps.forEach(p -> p.stop(Duration.ofSeconds(10)));
            throw e;
        }
    }

    private JavaProcess start(ClusterDir dir, DaemonSpec d, Duration timeout, List<ClusterDir.Member> started) throws IOException {
        return startAll(dir, List.of(d), timeout, started).get(0);
    }

    private JavaProcess launch(ClusterDir dir, DaemonSpec d) throws IOException {
        Path home = PrivateFiles.createDirectories(dir.daemonDir(d.name()));
        Path config = home.resolve(d.name() + ".toml");
        AtomicFiles.plain().write(config, d.toml() + UpAuth.daemonToml(dir, d) + (noTls ? "" : UpTls.daemonToml(dir, d.name())), false);
        Files.deleteIfExists(home.resolve(DaemonRuntime.READY_FILE));
        List<String> args = new ArrayList<>(List.of(d.command(), "--config", config.toString()));
        args.addAll(d.args());
        Path log = dir.logs().resolve(d.name() + ".log");
        PrivateFiles.open(log, StandardOpenOption.CREATE, StandardOpenOption.APPEND).close(); // private before the output is appended to it
        return JavaProcess.start(d.name(), StrataMain.class.getName(), args,
                List.of("-Xmx" + d.heap(), "-XX:+ExitOnOutOfMemoryError", "-XX:+UseSerialGC"), Map.of(), log);
    }

    private static ClusterDir.Member await(ClusterDir dir, DaemonSpec d, JavaProcess p, Duration timeout) throws IOException {
        Path ready = dir.daemonDir(d.name()).resolve(DaemonRuntime.READY_FILE);
        p.awaitReady(() -> Files.exists(ready), timeout);
        Properties props = new Properties();
        try (Reader r = Files.newBufferedReader(ready)) {
            props.load(r);
        }
        return new ClusterDir.Member(d.name(), p.pid(), props.getProperty("rpc", "-"), p.log());
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
    }
}
