package io.strata.harness;

import io.strata.config.ConfigNode;
import io.strata.core.NodeContext;
import io.strata.core.util.JavaProcess;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.namespace.TierChunkReclaimer;
import io.strata.namespace.service.MetaConfig;
import io.strata.namespace.service.MetaServer;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.placement.StaticRoutingSource;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A whole Strata cluster on loopback for integration tests and benchmarks: N storage nodes with a
 * static chain table ({@link StorageCluster}, in this JVM or as child processes), a meta service
 * on LMDB (a child process, or in this JVM with its garbage collector freeing chunks on the
 * storage nodes through {@link TierChunkReclaimer}) whose chain tables match the storage
 * nodes', and optionally more daemon processes (a FUSE mount, say).
 *
 * <p>The harness sits below {@code client} and {@code fuse-mount} in the build (their tests use
 * it), so it never links their classes: daemons above it are started by class name, and the
 * harness hands out addresses and config text ({@link #clientToml}) from which a test builds its
 * own clients.
 *
 * <pre>{@code
 * try (LocalCluster c = LocalCluster.builder(dir, seed).storageNodes(3).chains(6).start()) {
 *     ClientConfig cfg = ClientConfig.read(ConfigNode.parse(c.clientToml(""), "test"));
 *     try (StrataFileSystem fs = StrataFileSystem.connect(cfg)) { ... }
 *     c.storage().kill(2);                                  // and restart(2)
 * }
 * }</pre>
 */
public final class LocalCluster implements AutoCloseable {
    /** Where the meta service runs. */
    public enum MetaMode { PROCESS, IN_PROCESS }

    /** The bare meta service process (no data tier wired: deleted files' chunks stay queued). */
    public static final String META_SERVER_MAIN = MetaServer.class.getName();
    /** The CLI, whose {@code strata meta} frees deleted files' chunks on the storage nodes. */
    public static final String STRATA_MAIN = "io.strata.cli.StrataMain";

    private final Builder b;
    private final StorageCluster storage;
    private final int metaPort;
    private JavaProcess metaProcess;
    private InProcessMeta metaInProcess;
    private final List<JavaProcess> extra = new ArrayList<>();

    private LocalCluster(Builder b, StorageCluster storage) {
        this.b = b;
        this.storage = storage;
        this.metaPort = Ports.free();
    }

    public static Builder builder(Path dir, long seed) {
        return new Builder(dir, seed);
    }

    /** Settings; {@link #start()} starts the cluster. */
    public static final class Builder {
        private final Path dir;
        private final long seed;
        /** The storage nodes' settings live in their own builder; the setters below pass them on. */
        private final StorageCluster.Builder storage;
        private MetaMode metaMode = MetaMode.PROCESS;
        private String metaMain = META_SERVER_MAIN;
        private Duration gcInterval = Duration.ofMillis(200);
        private boolean metaSync = true;
        private List<String> jvmArgs = StorageCluster.CHILD_JVM_ARGS;

        private Builder(Path dir, long seed) {
            this.dir = dir;
            this.seed = seed;
            this.storage = StorageCluster.builder(dir.resolve("storage"), seed).chains(6);
        }

        public Builder storageNodes(int n) {
            storage.nodes(n);
            return this;
        }

        public Builder chains(int n) {
            storage.chains(n);
            return this;
        }

        public Builder replicas(int n) {
            storage.replicas(n);
            return this;
        }

        public Builder storageMode(StorageCluster.Mode m) {
            storage.mode(m);
            return this;
        }

        /**
         * Runs the meta service in this JVM, its collector freeing deleted files' chunks on the
         * storage nodes (through a storage client on the cluster's routing).
         */
        public Builder metaInProcess() {
            this.metaMode = MetaMode.IN_PROCESS;
            return this;
        }

        /**
         * Runs the meta service as a child process of {@code mainClass}: {@link #META_SERVER_MAIN}
         * (default) or {@link #STRATA_MAIN} ({@code strata meta}, which also gets the [routing] table
         * and frees deleted files' chunks).
         */
        public Builder metaProcess(String mainClass) {
            this.metaMode = MetaMode.PROCESS;
            this.metaMain = mainClass;
            return this;
        }

        /** How often the meta service's garbage collector runs. */
        public Builder gcInterval(Duration d) {
            this.gcInterval = d;
            return this;
        }

        /** Whether the meta service's LMDB store fsyncs every commit (off: faster tests that never crash it). */
        public Builder metaSync(boolean sync) {
            this.metaSync = sync;
            return this;
        }

        public Builder forwardTimeout(Duration d) {
            storage.forwardTimeout(d);
            return this;
        }

        /** JVM flags of child processes (storage nodes, the meta service, {@link LocalCluster#startProcess} daemons). */
        public Builder jvmArgs(List<String> args) {
            this.jvmArgs = List.copyOf(args);
            storage.jvmArgs(args);
            return this;
        }

        public LocalCluster start() {
            return Lifecycle.startOrClose(new LocalCluster(this, storage.start()), LocalCluster::startMeta);
        }
    }

    // ---- addresses and config text ----

    public StorageCluster storage() {
        return storage;
    }

    /** The routing in-process nodes and clients share (process nodes keep the version they started with). */
    public StaticRoutingSource routingSource() {
        return storage.routing();
    }

    public RoutingInfo routing() {
        return storage.routing().current();
    }

    /** The current routing as a {@code [routing]} table. */
    public String routingToml() {
        return RoutingToml.of(routing());
    }

    public InetSocketAddress metaAddress() {
        return new InetSocketAddress("127.0.0.1", metaPort);
    }

    public String metaHostPort() {
        return "127.0.0.1:" + metaPort;
    }

    /**
     * A client config file's text: {@code [client]} with the meta address and {@code clientExtra}
     * lines (e.g. {@code io-timeout = "5s"}), then the {@code [routing]} table, then {@code tail}
     * (more tables, e.g. {@code [l1]} or {@code [mount]}).
     */
    public String clientToml(String clientExtra, String tail) {
        return "[client]\nname = \"client\"\nmeta = [\"" + metaHostPort() + "\"]\n" + clientExtra + "\n" + routingToml() + "\n" + tail;
    }

    public String clientToml(String clientExtra) {
        return clientToml(clientExtra, "");
    }

    public Path dir() {
        return b.dir;
    }

    // ---- the meta service ----

    private Path metaDir() {
        return b.dir.resolve("meta");
    }

    /** The meta service's config file text. */
    public String metaToml() {
        StringBuilder s = new StringBuilder();
        s.append("[node]\nname = \"meta\"\nlisten = \"").append(metaHostPort()).append("\"\ndata = \"").append(metaDir()).append("\"\n\n");
        s.append("[meta]\ngc-interval = \"").append(b.gcInterval.toMillis()).append("ms\"\n");
        s.append("[meta.lmdb]\nmap-size = \"1GiB\"\nsync = ").append(b.metaSync).append('\n');
        s.append(RoutingToml.metaChainTables(routing()));
        if (b.metaMode == MetaMode.IN_PROCESS || b.metaMain.equals(STRATA_MAIN)) {
            s.append('\n').append(routingToml());
        }
        return s.toString();
    }

    private void startMeta() {
        try {
            Files.createDirectories(metaDir());
            Path cfg = metaDir().resolve("meta.toml");
            Files.writeString(cfg, metaToml());
            if (b.metaMode == MetaMode.IN_PROCESS) {
                metaInProcess = new InProcessMeta(cfg);
                return;
            }
            Files.deleteIfExists(metaDir().resolve("meta.address"));
            Files.deleteIfExists(metaDir().resolve("ready.properties"));
            List<String> args = b.metaMain.equals(STRATA_MAIN) ? List.of("meta", "--config", cfg.toString())
                    : List.of("--config", cfg.toString());
            metaProcess = JavaProcess.start("meta", b.metaMain, args, b.jvmArgs, Map.of(), metaDir().resolve("meta.log"));
            metaProcess.awaitReady(() -> Files.exists(metaDir().resolve("meta.address"))
                    || Files.exists(metaDir().resolve("ready.properties")), Duration.ofSeconds(60));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("meta service did not start: " + e, e);
        }
    }

    /** The meta service's process (PROCESS mode). */
    public JavaProcess metaProcess() {
        return metaProcess;
    }

    /** Stops the meta service abruptly (kill -9 of the process; close in this JVM). */
    public void killMeta() {
        if (metaProcess != null) {
            metaProcess.kill();
        }
        if (metaInProcess != null) {
            metaInProcess.close();
            metaInProcess = null;
        }
    }

    /** The in-process meta service (IN_PROCESS mode; null otherwise or while it is killed). */
    public MetaServer meta() {
        return metaInProcess == null ? null : metaInProcess.server;
    }

    /** A meta service in this JVM: its context, the storage client its collector frees chunks with, the server. */
    private final class InProcessMeta implements AutoCloseable {
        final NodeContext ctx;
        final StorageClient gc;
        final MetaServer server;

        InProcessMeta(Path configFile) {
            MetaConfig cfg = MetaConfig.read(ConfigNode.load(configFile));
            ctx = NodeContext.seeded("meta", b.seed);
            StorageClient c = null;
            try {
                c = new StorageClient(ctx, routingSource(), cfg.node().rpc(), StorageClientOptions.DEFAULTS);
                server = MetaServer.start(ctx, cfg, null, new TierChunkReclaimer(c, Duration.ofSeconds(30)));
            } catch (RuntimeException e) {
                if (c != null) {
                    c.close();
                }
                ctx.close();
                throw e;
            }
            gc = c;
        }

        @Override
        public void close() {
            server.close();
            gc.close();
            ctx.close();
        }
    }

    /** Starts the meta service again on the same address and data. */
    public void restartMeta() {
        startMeta();
    }

    // ---- more daemons ----

    /**
     * Starts {@code mainClass args} as a child process (a mount, a benchmark driver) and waits up to
     * a minute for {@code readyFile} to exist; stopped (SIGTERM) when the cluster closes.
     */
    public JavaProcess startProcess(String name, String mainClass, List<String> args, Path readyFile) {
        try {
            Files.deleteIfExists(readyFile);
            JavaProcess p = JavaProcess.start(name, mainClass, args, b.jvmArgs, Map.of(), b.dir.resolve(name + ".log"));
            extra.add(p);
            p.awaitReady(() -> Files.exists(readyFile), Duration.ofSeconds(60));
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Reads a {@code ready.properties}-style file. */
    public static Properties readProperties(Path file) {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file)) {
            p.load(r);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return p;
    }

    @Override
    public void close() {
        for (int i = extra.size() - 1; i >= 0; i--) {
            extra.get(i).stop(Duration.ofSeconds(10));
        }
        if (metaProcess != null) {
            metaProcess.stop(Duration.ofSeconds(10));
        }
        if (metaInProcess != null) {
            metaInProcess.close();
        }
        storage.close();
    }
}
