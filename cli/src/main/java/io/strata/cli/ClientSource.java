package io.strata.cli;

import io.strata.client.ClientConfig;
import io.strata.protocol.meta.MetaDiscovery;
import io.strata.client.StrataFileSystem;
import io.strata.config.AuthConfig;
import io.strata.config.ConfigNode;
import io.strata.config.TlsConfig;
import io.strata.core.NodeContext;
import io.strata.core.trace.SlowOps;
import io.strata.core.auth.Credentials;
import io.strata.core.rpc.Addresses;
import io.strata.core.tls.TlsContext;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;
import picocli.CommandLine.Option;

/**
 * Where a client command finds its cluster (a picocli mixin: every command that talks to a
 * running cluster takes it). The first of these that is given wins:
 * <ol>
 *   <li>{@code --config FILE}: a client config file;</li>
 *   <li>{@code --mgmtd HOST:PORT[,...]}: the cluster manager of a real cluster;</li>
 *   <li>{@code --data DIR}: the local cluster {@code strata up} runs on that data directory;</li>
 *   <li>{@code $STRATA_MGMTD}: as {@code --mgmtd};</li>
 *   <li>{@code $STRATA_DATA}: as {@code --data};</li>
 *   <li>the local cluster on {@code strata up}'s default data directory.</li>
 * </ol>
 * A flag always beats a variable. {@code --meta} names the meta service instead of the one the
 * cluster's config (or its manager) gives.
 *
 * <p>The token presented to the cluster comes the same way: {@code --token-file}, else the
 * {@code [auth] token-file} of the client config (for a local cluster, the {@code client}
 * token {@code strata up} wrote); admin commands take a local cluster's {@code admin} token
 * instead ({@link #adminCredentials()}). TLS comes from the same client config's {@code [tls]}
 * table ({@link #tls()}).
 */
final class ClientSource {
    /** The client config {@code strata up} writes into its data directory. */
    static final String CLIENT_TOML = "client.toml";
    /** The environment variable naming the cluster manager when no flag names a cluster. */
    static final String ENV_MGMTD = "STRATA_MGMTD";

    @Option(names = "--config", paramLabel = "FILE", description = "Client config file ([client], [routing], [l1], [rpc]) of the cluster to use.")
    Path config;

    @Option(names = "--mgmtd", paramLabel = "HOST:PORT[,...]",
            description = "Cluster manager peers of the cluster to use (default: $" + ENV_MGMTD + ", else the local cluster of --data).")
    String mgmtd;

    @Option(names = "--meta", paramLabel = "HOST:PORT[,...]", description = "Meta service instances (default: the cluster's own, or those its manager knows of).")
    String meta;

    @Option(names = "--data", paramLabel = "DIR",
            description = "Data directory of the local `strata up` cluster to use (default: $" + ClusterDir.ENV + ", else as for `strata up`).")
    Path data;

    @Option(names = "--token-file", paramLabel = "FILE",
            description = "Token to present to the cluster (default: the client config's [auth] token-file; for admin commands on a "
                    + "local cluster, its admin token).")
    Path tokenFile;

    @Option(names = "--tls-config", paramLabel = "FILE",
            description = "Config file whose [tls] table to dial the cluster with (default: the client config's; none for --mgmtd).")
    Path tlsConfig;

    @Option(names = "--io-timeout", paramLabel = "DURATION", description = "Fail a data request after this long (default: the config's, 30s).")
    String ioTimeout;

    /** The cluster as the user named it. */
    sealed interface Cluster {
        /** A client config file. */
        record ConfigFile(Path file) implements Cluster {
        }

        /** Cluster manager peers, "host:port,host:port". */
        record Managers(String peers) implements Cluster {
        }

        /** The local cluster of {@code strata up} on a data directory. */
        record Local(ClusterDir dir) implements Cluster {
        }
    }

    Cluster cluster() {
        return cluster(System::getenv);
    }

    /** The cluster named by the flags, else by the variables in {@code env} (see the class comment for the order). */
    Cluster cluster(UnaryOperator<String> env) {
        if (config != null) {
            return new Cluster.ConfigFile(config);
        }
        if (mgmtd != null) {
            return new Cluster.Managers(mgmtd);
        }
        String peers = env.apply(ENV_MGMTD);
        if (data == null && peers != null && !peers.isBlank()) {
            return new Cluster.Managers(peers);
        }
        return new Cluster.Local(ClusterDir.resolve(data, env));
    }

    /** The client config, plus the file's root table (for callers reading more tables from it). */
    record Loaded(ClientConfig config, ConfigNode root) {
    }

    Loaded load() {
        Loaded l = switch (cluster()) {
            case Cluster.ConfigFile f -> {
                ConfigNode root = ConfigNode.load(f.file());
                yield new Loaded(ClientConfig.read(root), root);
            }
            case Cluster.Managers m -> new Loaded(ClientConfig.ofManager(List.of(), MgmtdClient.parse(m.peers())), ConfigNode.empty());
            case Cluster.Local local -> {
                Path file = local.dir().root.resolve(CLIENT_TOML);
                if (!Files.exists(file)) {
                    throw noLocalCluster(local.dir());
                }
                ConfigNode root = ConfigNode.load(file);
                yield new Loaded(ClientConfig.read(root), root);
            }
        };
        ClientConfig cfg = l.config();
        if (meta != null) {
            cfg = cfg.withMeta(addresses(meta));
        }
        if (ioTimeout != null) {
            cfg = cfg.withIoTimeout(io.strata.config.Durations.parse(ioTimeout));
        }
        return new Loaded(cfg, l.root());
    }

    /**
     * The cluster manager's peers. A local cluster's are in its layout, known from its first
     * start on (so that {@code strata admin} can look at one whose {@code up} did not finish).
     */
    List<InetSocketAddress> managers() {
        if (cluster() instanceof Cluster.Local local) {
            return UpLayout.find(local.dir().root).map(u -> MgmtdClient.parse(u.mgmtdAddress())).orElseThrow(() -> noLocalCluster(local.dir()));
        }
        List<InetSocketAddress> m = load().config().mgmtd();
        if (m.isEmpty()) {
            throw new IllegalArgumentException(config + " names no cluster manager (client.mgmtd): give --mgmtd HOST:PORT");
        }
        return m;
    }

    /** The meta service instances: {@code --meta}, else the cluster config's, else those registered with its manager. */
    List<InetSocketAddress> metaAddresses(NodeContext ctx) {
        if (meta != null) {
            return addresses(meta);
        }
        ClientConfig cfg = load().config();
        if (!cfg.meta().isEmpty()) {
            return cfg.meta();
        }
        try (MgmtdClient m = new MgmtdClient(ctx, cfg.mgmtd())) {
            return MetaDiscovery.find(m, cfg.metaTimeout());
        }
    }

    private static IllegalArgumentException noLocalCluster(ClusterDir dir) {
        return new IllegalArgumentException("no cluster to talk to: no `strata up` cluster in " + dir.root + "; start one with `strata up`"
                + " (--data DIR or $" + ClusterDir.ENV + " for another directory), or name a cluster with --mgmtd HOST:PORT"
                + " (or $" + ENV_MGMTD + ") or --config FILE");
    }

    private static List<InetSocketAddress> addresses(String list) {
        List<InetSocketAddress> out = new ArrayList<>();
        for (String s : list.split(",")) {
            if (!s.isBlank()) {
                InetSocketAddress a = Addresses.parse(s.trim());
                out.add(new InetSocketAddress(a.getHostString(), a.getPort()));
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no address in '" + list + "'");
        }
        return out;
    }

    /** A file system for a short-lived command and the context it runs in; closing closes both. */
    record Session(StrataFileSystem fs, NodeContext ctx) implements AutoCloseable {
        @Override
        public void close() {
            try {
                fs.close();
            } finally {
                ctx.close();
            }
        }
    }

    /**
     * The token a client command presents: {@code --token-file}, else the client config's
     * {@code [auth] token-file}; none for a cluster named by its managers, or a local one not
     * started yet (a command given only {@code --meta} still runs).
     */
    Optional<Credentials> credentials() {
        if (tokenFile != null) {
            return Optional.of(read(tokenFile));
        }
        Path file = switch (cluster()) {
            case Cluster.ConfigFile f -> f.file();
            case Cluster.Managers m -> null;
            case Cluster.Local local -> local.dir().root.resolve(CLIENT_TOML);
        };
        return file == null ? Optional.empty() : credentials(file);
    }

    /** The {@code [auth] token-file} token of the client config {@code file}; none when there is no such file. */
    static Optional<Credentials> credentials(Path file) {
        return Files.exists(file) ? AuthConfig.read(ConfigNode.load(file)).credentials() : Optional.empty();
    }

    /**
     * The token an admin command presents: {@code --token-file}, else the admin token of a local
     * cluster ({@link UpAuth#ADMIN_TOKEN}), else the client's.
     */
    Optional<Credentials> adminCredentials() {
        if (tokenFile == null && cluster() instanceof Cluster.Local local) {
            Path admin = local.dir().root.resolve(UpAuth.ADMIN_TOKEN);
            if (Files.exists(admin)) {
                return Optional.of(read(admin));
            }
        }
        return credentials();
    }

    /**
     * The TLS a client command dials with: the client config's {@code [tls]} table (for a local
     * cluster, the client certificate {@code strata up} wrote), or {@code --tls-config}'s; none
     * for a cluster named by its managers without {@code --tls-config}, or a local one not
     * started yet.
     */
    Optional<TlsContext> tls() {
        if (tlsConfig != null) {
            return tls(tlsConfig);
        }
        Path file = switch (cluster()) {
            case Cluster.ConfigFile f -> f.file();
            case Cluster.Managers m -> null;
            case Cluster.Local local -> local.dir().root.resolve(CLIENT_TOML);
        };
        return file == null ? Optional.empty() : tls(file);
    }

    /** The {@code [tls]} context of the client config {@code file}; none when there is no such file or table. */
    static Optional<TlsContext> tls(Path file) {
        return Files.exists(file) ? TlsConfig.read(ConfigNode.load(file)).context() : Optional.empty();
    }

    /** A small context for a short-lived command that presents {@code credentials} and dials with {@code tls}. */
    static NodeContext context(String name, Optional<Credentials> credentials, Optional<TlsContext> tls) {
        return NodeContext.builder(name).eventLoopThreads(1).blockingThreads(1).credentials(credentials.orElse(null))
                .tls(tls.orElse(null)).slowOp(SlowOps.NEVER).build();
    }

    /** The token in {@code file}; one that cannot be read fails the command with the reason. */
    static Credentials read(Path file) {
        try {
            return Credentials.read(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the token: " + e.getMessage(), e);
        }
    }

    Session connect() {
        ClientConfig cfg = load().config();
        NodeContext ctx = NodeContext.builder("strata-" + cfg.name()).eventLoopThreads(2).blockingThreads(2)
                .credentials(credentials().orElse(null)).tls(tls().orElse(null)).slowOp(SlowOps.NEVER).build(); // a command: no /slow to serve
        try {
            return new Session(StrataFileSystem.connect(ctx, cfg), ctx);
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
    }
}
