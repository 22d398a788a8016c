package io.strata.cli;

import io.strata.client.ClientConfig;
import io.strata.client.StrataFileSystem;
import io.strata.config.ConfigNode;
import io.strata.config.Durations;
import io.strata.config.NodeConfig;
import io.strata.core.Status;
import io.strata.core.tier.QosClass;
import io.strata.core.StrataException;
import io.strata.fuse.FuseMount;
import io.strata.fuse.MountOptions;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata mount --mgmtd HOST:PORT [--meta HOST:PORT] DIR}, or {@code strata mount --config
 * FILE} (a client config with {@code [mount]} and optionally {@code [node]} for the daemon's
 * name, metrics and ready file): mounts Strata with FUSE and serves it until SIGTERM or
 * {@code strata umount DIR}, then unmounts and exits.
 */
@Command(name = "mount", mixinStandardHelpOptions = true,
        description = {"Mount Strata at DIR with FUSE and serve it until stopped (SIGTERM or `strata umount DIR`).", "",
                "Any program then uses the namespace as a directory. The cluster is found as for the native commands "
                        + "(--mgmtd, --data, --config or the variables); --config may also give [mount], [l1] (the node's L1 "
                        + "cache) and [node]."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata mount --mgmtd mgmt1:9200 /mnt/strata",
                "  strata mount --config client.toml       [client], [mount], [l1], [node]",
                "  strata mount --root /ds /mnt/ds         show only /ds",
                "  strata mount --fuse libfuse3 /mnt/s     1 MiB FUSE requests (JDK 22+)",
                "  strata mount --job train-42 /mnt/s      metrics tagged strata_job=train-42"})
final class MountCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(MountCommand.class);
    /** Not {@code job}: Prometheus gives that label to the scrape job, and would rename ours. */
    static final String JOB_TAG = "strata_job";

    @Mixin
    ClientSource source;

    @Parameters(paramLabel = "DIR", arity = "0..1", description = "Mount point (or [mount] dir of --config).")
    Path dir;

    @Option(names = "--root", paramLabel = "PATH", description = "Strata directory to show at the mount point (default /).")
    String root;

    @Option(names = "--attr-timeout", paramLabel = "DURATION", description = "Kernel attribute cache (default: from the root's consistency mode).")
    String attrTimeout;

    @Option(names = "--entry-timeout", paramLabel = "DURATION", description = "Kernel name cache (default: from the root's consistency mode).")
    String entryTimeout;

    @Option(names = "--fuse", paramLabel = "LIBFUSE", description = "libfuse2 (128 KiB requests) or libfuse3 (1 MiB requests, JDK 22+); default [mount] fuse, else libfuse2.")
    String fuse;

    @Option(names = "--job", paramLabel = "NAME", description = "The job this mount serves (or [client] job): every metric of "
            + "the mount is tagged strata_job=NAME, so hit ratios, bytes per tier and latencies are per job.")
    String job;

    @Option(names = "--job-qos", paramLabel = "CLASS", description = "The QoS class of the job's I/O (or [client] job-qos) "
            + "in directories whose policy leaves qos at interactive, e.g. training-read for a dataloader.")
    String jobQos;

    @Option(names = "--debug", description = "libfuse debug output (every request) on stderr.")
    boolean debug;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        ClientSource.Loaded loaded = source.load();
        ConfigNode root = loaded.root();
        NodeConfig node = withCommandLine(NodeConfig.read(root, "mount"));
        MountOptions opts = options(root);
        ClientConfig cfg = job == null ? loaded.config() : loaded.config().withJob(job);
        if (jobQos != null) {
            cfg = cfg.withJobQos(QosClass.parse(jobQos));
        }
        if (source.config != null) {
            root.rejectUnknownKeys();
        }
        Optional<String> why = FuseMount.unavailable(opts.fuse());
        if (why.isPresent()) {
            throw new StrataException(Status.UNSUPPORTED, "cannot mount: " + why.get()
                    + "; the native client works without FUSE: strata ls|stat|cat|put|cp|rm|mkdir");
        }
        DaemonRuntime rt = new DaemonRuntime("mount", node, cfg.job().map(j -> Map.of(JOB_TAG, j)).orElse(Map.of()));
        StrataFileSystem fs;
        FuseMount mount;
        try {
            fs = StrataFileSystem.connect(rt.ctx, cfg);
            try {
                mount = FuseMount.mount(fs, opts, rt.ctx.meters());
            } catch (RuntimeException e) {
                fs.close();
                throw e;
            }
        } catch (RuntimeException e) {
            rt.close();
            throw e;
        }
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", "-");
        info.put("dir", mount.dir().toString());
        rt.announceMetrics(info);
        if (node.data() != null) {
            DaemonRuntime.announceReady(node.data(), info);
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println("strata: mounted " + opts.root() + " at " + mount.dir() + " (attr timeout " + Durations.format(mount.attrTimeout())
                + ", entry timeout " + Durations.format(mount.entryTimeout()) + "); stop with: strata umount " + mount.dir());
        out.flush();
        // unmounted from outside (strata umount, fusermount -u): stop the daemon too
        mount.unmounted().whenComplete((v, e) -> {
            LOG.info("{} was unmounted; exiting", mount.dir());
            new Thread(() -> System.exit(0), "exit").start();
        });
        rt.runUntilStopped(() -> {
            try {
                mount.close();
            } finally {
                fs.close();
            }
        });
        return 0;
    }

    /**
     * The daemon's config with {@code --token-file} and {@code --tls-config} in place of the
     * config file's {@code [auth]} token and {@code [tls]} table, as every other client command
     * takes them (a node whose mount must act for a narrower range of users than the local
     * cluster's own client token).
     */
    private NodeConfig withCommandLine(NodeConfig n) {
        io.strata.config.AuthConfig auth = source.tokenFile == null ? n.auth()
                : new io.strata.config.AuthConfig(n.auth().keyFile(), Optional.of(source.tokenFile));
        io.strata.config.TlsConfig tls = source.tlsConfig == null ? n.tls()
                : io.strata.config.TlsConfig.read(ConfigNode.load(source.tlsConfig));
        return new NodeConfig(n.name(), n.listen(), n.data(), n.transport(), n.metrics(), n.rpc(), auth, tls, n.slowOp(), n.metricsOpen());
    }

    private MountOptions options(ConfigNode file) {
        MountOptions o;
        if (file.has("mount")) {
            ConfigNode m = file.section("mount");
            o = MountOptions.read(m);
            if (dir != null) {
                o = new MountOptions(dir, o.root(), o.attrTimeout(), o.entryTimeout(), o.allowOther(), o.debug(), o.fuse());
            }
        } else {
            if (dir == null) {
                throw new IllegalArgumentException("give the mount point: strata mount [--mgmtd HOST:PORT] DIR");
            }
            o = MountOptions.at(dir);
        }
        Optional<Duration> attr = attrTimeout != null ? Optional.of(Durations.parse(attrTimeout)) : o.attrTimeout();
        Optional<Duration> entry = entryTimeout != null ? Optional.of(Durations.parse(entryTimeout)) : o.entryTimeout();
        MountOptions.Libfuse libfuse = fuse != null ? MountOptions.Libfuse.parse("--fuse", fuse) : o.fuse();
        return new MountOptions(o.dir(), root != null ? root : o.root(), attr, entry, o.allowOther(), debug || o.debug(), libfuse);
    }

    /** {@code strata umount DIR}: unmounts a Strata mount (the mount daemon then exits). */
    @Command(name = "umount", mixinStandardHelpOptions = true,
            description = {"Unmount a Strata FUSE mount (its mount daemon then exits).", "",
                    "Fails while files on it are open, unless -l detaches it at once and finishes when they are closed."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata umount /mnt/strata", "  strata umount -l data/mnt"})
    static final class Umount implements Callable<Integer> {
        @Parameters(paramLabel = "DIR", description = "Mount point.")
        Path dir;

        @Option(names = {"-l", "--lazy"}, description = "Detach now even if files are open; finish when they are closed.")
        boolean lazy;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            Path d = dir.toAbsolutePath().normalize();
            if (!FuseMount.isMounted(d)) {
                throw new IllegalArgumentException(d + " is not mounted");
            }
            FuseMount.unmount(d, lazy);
            spec.commandLine().getOut().println("strata: unmounted " + d);
            return 0;
        }
    }
}
