package io.strata.cli;

import io.strata.config.ConfigNode;
import io.strata.namespace.ChainTables;
import io.strata.namespace.service.MetaConfig;
import io.strata.namespace.service.MetaServer;
import io.strata.placement.ChainTable;
import io.strata.placement.RoutingSource;
import io.strata.placement.mgmtd.ManagerRoutingSource;
import io.strata.placement.mgmtd.MgmtdClient;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata meta --config FILE [--mgmtd HOST:PORT,...]}: a stateless meta service (the
 * namespace over LMDB or FoundationDB, see {@link MetaConfig}). File layouts draw chains from
 * the cluster manager's chain tables when {@code --mgmtd} is given, else from
 * {@code [[meta.chain-tables]]}. Several instances may serve one FoundationDB cluster.
 */
@Command(name = "meta", description = "Run a meta service (the namespace on LMDB or FoundationDB) until stopped.")
final class MetaCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(MetaCommand.class);

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "TOML file with [node], [rpc] and [meta] tables.")
    Path config;

    @Option(names = "--mgmtd", paramLabel = "HOST:PORT[,...]", description = "Cluster manager peers: take chain tables from its routing.")
    String mgmtd;

    @Override
    public Integer call() throws Exception {
        ConfigNode root = ConfigNode.load(config);
        MetaConfig cfg = MetaConfig.read(root);
        root.rejectUnknownKeys();
        DaemonRuntime rt = new DaemonRuntime("meta", cfg.node());
        MetaServer server;
        RoutingSource routing = null;
        try {
            ChainTables tables = null;
            if (mgmtd != null) {
                routing = ManagerRoutingSource.start(rt.ctx, new MgmtdClient(rt.ctx, MgmtdClient.parse(mgmtd)));
                tables = new RoutingChainTables(routing);
            }
            // chunks of deleted files are freed by a collector wired to the data tiers (the client issue);
            // until then they stay queued
            server = MetaServer.start(rt.ctx, cfg, tables, null);
        } catch (RuntimeException e) {
            if (routing != null) {
                routing.close();
            }
            rt.close();
            throw e;
        }
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", hostPort(server.address()));
        if (rt.metricsAddress() != null) {
            info.put("metrics", hostPort(rt.metricsAddress()));
        }
        if (cfg.node().data() != null) {
            DaemonRuntime.announceReady(cfg.node().data(), info);
        }
        LOG.info("{}: ready, rpc {} ({} backend)", cfg.node().name(), info.get("rpc"), cfg.backend());
        RoutingSource r = routing;
        rt.runUntilStopped(() -> {
            server.close();
            if (r != null) {
                r.close();
            }
        });
        return 0;
    }

    static String hostPort(InetSocketAddress a) {
        return a.getHostString() + ":" + a.getPort();
    }

    /** The namespace's view of placement's chain tables: the routing info the manager pushes. */
    static final class RoutingChainTables implements ChainTables {
        private final RoutingSource routing;

        RoutingChainTables(RoutingSource routing) {
            this.routing = routing;
        }

        private static Table of(ChainTable t) {
            return new Table(t.id(), t.version(), t.replicas(), t.chains());
        }

        @Override
        public Optional<Table> latest(int replicas) {
            return routing.current().latestTable(replicas).map(RoutingChainTables::of);
        }

        @Override
        public Optional<Table> table(int id, int version) {
            return routing.current().table(id, version).map(RoutingChainTables::of);
        }
    }
}
