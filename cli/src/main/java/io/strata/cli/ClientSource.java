package io.strata.cli;

import io.strata.client.ClientConfig;
import io.strata.client.StrataFileSystem;
import io.strata.config.ConfigNode;
import io.strata.core.NodeContext;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * Where a client command finds its cluster: a client config file ({@code --config}), the
 * cluster manager ({@code --mgmtd}, with {@code --meta} or the meta service it knows of), or,
 * by default, the local cluster {@code strata up} runs on the data directory ({@code --data},
 * its {@code client.toml}).
 */
final class ClientSource {
    /** The client config {@code strata up} writes into its data directory. */
    static final String CLIENT_TOML = "client.toml";

    @Option(names = "--config", paramLabel = "FILE", description = "Client config file ([client], [routing], [l1], [rpc]).")
    Path config;

    @Option(names = "--mgmtd", paramLabel = "HOST:PORT[,...]", description = "Cluster manager peers.")
    String mgmtd;

    @Option(names = "--meta", paramLabel = "HOST:PORT[,...]", description = "Meta service instances (default: ask the cluster manager).")
    String meta;

    @Option(names = "--data", paramLabel = "DIR", description = "Data directory of a local `strata up` cluster (default: as for `strata up`).")
    Path data;

    @Option(names = "--io-timeout", paramLabel = "DURATION", description = "Fail a data request after this long (default: the config's, 30s).")
    String ioTimeout;

    /** The client config, plus the file's root table (for callers reading more tables from it). */
    record Loaded(ClientConfig config, ConfigNode root) {
    }

    Loaded load() {
        ClientConfig cfg;
        ConfigNode root;
        if (config != null) {
            root = ConfigNode.load(config);
            cfg = ClientConfig.read(root);
        } else if (mgmtd != null) {
            root = ConfigNode.empty();
            List<InetSocketAddress> m = resolve(MgmtdClient.parse(mgmtd));
            cfg = ClientConfig.ofManager(meta == null ? List.of() : resolve(MgmtdClient.parse(meta)), m);
        } else {
            ClusterDir dir = ClusterDir.resolve(data);
            Path file = dir.root.resolve(CLIENT_TOML);
            if (!Files.exists(file)) {
                throw new IllegalArgumentException("no cluster to talk to: give --mgmtd HOST:PORT (or --config FILE), or start a local one "
                        + "with `strata up` (looked for " + file + ")");
            }
            root = ConfigNode.load(file);
            cfg = ClientConfig.read(root);
        }
        if (ioTimeout != null) {
            cfg = cfg.withIoTimeout(io.strata.config.Durations.parse(ioTimeout));
        }
        return new Loaded(cfg, root);
    }

    private static List<InetSocketAddress> resolve(List<InetSocketAddress> in) {
        return in.stream().map(a -> new InetSocketAddress(a.getHostString(), a.getPort())).toList();
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

    Session connect() {
        ClientConfig cfg = load().config();
        NodeContext ctx = NodeContext.builder("strata-" + cfg.name()).eventLoopThreads(2).blockingThreads(2).build();
        try {
            return new Session(StrataFileSystem.connect(ctx, cfg), ctx);
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
    }

}
