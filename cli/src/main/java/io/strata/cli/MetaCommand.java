package io.strata.cli;

import io.strata.namespace.TierChunkReclaimer;
import io.strata.config.ConfigNode;
import io.strata.core.NodeId;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.namespace.ChainTables;
import io.strata.namespace.ChunkReclaimer;
import io.strata.namespace.service.MetaConfig;
import io.strata.namespace.service.MetaServer;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.placement.RoutingSource;
import io.strata.placement.StaticRoutingSource;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
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
 * {@code [[meta.chain-tables]]} (or a static {@code [routing]} table). Several instances may
 * serve one FoundationDB cluster.
 *
 * <p>The garbage collector frees deleted files' chunks on the storage nodes (an
 * {@link TierChunkReclaimer} over a storage client routed by the manager, or by the static
 * {@code [routing]} table); with neither, deleted files stay queued until a service that has one
 * runs. With {@code --mgmtd} the service also registers with the manager (role {@code meta},
 * {@code --node-id}), so clients given only the manager's address find it.
 */
@Command(name = "meta", mixinStandardHelpOptions = true,
        description = {"Run a meta service (the namespace on LMDB or FoundationDB) until stopped.", "",
                "With --mgmtd it takes file layouts from the manager's chain tables and registers with it, so that "
                        + "clients given only the manager find it. Several instances may serve one FoundationDB cluster."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata meta --config meta.toml --mgmtd mgmt1:9200,mgmt2:9200,mgmt3:9200"})
final class MetaCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(MetaCommand.class);

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "TOML file with [node], [rpc] and [meta] tables.")
    Path config;

    @Option(names = "--mgmtd", paramLabel = "HOST:PORT[,...]", description = "Cluster manager peers: take chain tables from its routing.")
    String mgmtd;

    @Option(names = "--node-id", paramLabel = "N", defaultValue = "1000",
            description = "With --mgmtd: the node id this service registers under (role meta; default ${DEFAULT-VALUE}).")
    int nodeId;

    @Override
    public Integer call() throws Exception {
        ConfigNode root = ConfigNode.load(config);
        MetaConfig cfg = MetaConfig.read(root);
        // without a manager, a static [routing] table tells the collector where chunks live
        StaticRoutingSource staticRouting = root.has("routing") ? StaticRoutingSource.fromConfig(root.section("routing")) : null;
        root.rejectUnknownKeys();
        if (mgmtd != null && staticRouting != null) {
            throw new IllegalArgumentException("give either --mgmtd or a static [routing] table, not both");
        }
        DaemonRuntime rt = new DaemonRuntime("meta", cfg.node());
        MetaServer server;
        RoutingSource routing = null;
        MgmtdClient manager = null;
        StorageClient storage = null;
        try {
            ChainTables tables = null;
            if (mgmtd != null) {
                manager = new MgmtdClient(rt.ctx, MgmtdClient.parse(mgmtd));
                routing = ManagerRoutingSource.start(rt.ctx, manager);
                tables = new RoutingChainTables(routing);
            } else if (staticRouting != null) {
                routing = staticRouting;
                if (cfg.chainTables().tables().isEmpty()) {
                    tables = new RoutingChainTables(routing);
                }
            }
            // the collector frees deleted files' chunks on the storage nodes (without routing they stay queued)
            ChunkReclaimer reclaimer = null;
            if (routing != null) {
                storage = new StorageClient(rt.ctx, routing, cfg.node().rpc(), StorageClientOptions.DEFAULTS);
                reclaimer = new TierChunkReclaimer(storage, Duration.ofMinutes(1));
            }
            server = MetaServer.start(rt.ctx, cfg, tables, reclaimer);
        } catch (RuntimeException e) {
            if (storage != null) {
                storage.close();
            }
            if (routing != null) {
                routing.close();
            }
            if (manager != null) {
                manager.close();
            }
            rt.close();
            throw e;
        }
        MetaRegistration registration = manager == null ? null : MetaRegistration.start(rt.ctx, manager,
                new NodeInfo(NodeId.of(nodeId), server.address().getHostString(), server.address().getPort(), Map.of("role", "meta")));
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", hostPort(server.address()));
        rt.announceMetrics(info);
        if (cfg.node().data() != null) {
            DaemonRuntime.announceReady(cfg.node().data(), info);
        }
        LOG.info("{}: ready, rpc {} ({} backend)", cfg.node().name(), info.get("rpc"), cfg.backend());
        RoutingSource r = routing;
        StorageClient sc = storage;
        MgmtdClient mc = manager;
        rt.runUntilStopped(() -> {
            if (registration != null) {
                registration.close();
            }
            server.close();
            if (sc != null) {
                sc.close();
            }
            if (r != null) {
                r.close();
            }
            if (mc != null) {
                mc.close();
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
