package io.strata.cli;

import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.RpcClient;
import io.strata.l2.agent.L2Agent;
import io.strata.l2.agent.L2AgentConfig;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaDiscovery;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata l2 --config FILE}: an L2 agent, one per compute node, staging chunks on the
 * node's NVMe and draining them to L3 (docs/internals/l2.md). It registers with the cluster
 * manager ({@code [l2] mgmtd}) as an L2 agent, finds the meta service through it, writes to L3
 * through the chains the manager routes, and serves only while it holds a lease.
 */
@Command(name = "l2", mixinStandardHelpOptions = true,
        description = {"Run an L2 agent (staged chunks on this node's NVMe, drained to L3) until stopped.", "",
                "It registers with the cluster manager ([l2] mgmtd), finds the meta service through it and serves while "
                        + "it holds a lease. A bad config value names its key and is refused at start (see docs/configuration.md)."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata l2 --config l2.toml"})
final class L2Command implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(L2Command.class);

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "TOML file with [node], [rpc] and [l2] tables.")
    Path config;

    @Override
    public Integer call() throws Exception {
        ConfigNode root = ConfigNode.load(config);
        NodeConfig node = NodeConfig.read(root, "l2");
        L2AgentConfig cfg = L2AgentConfig.read(root.section("l2"), node.data());
        root.rejectUnknownKeys();
        DaemonRuntime rt = new DaemonRuntime("l2", node);
        List<AutoCloseable> closeables = new ArrayList<>();
        L2Agent agent;
        try {
            MgmtdClient mgmtd = new MgmtdClient(rt.ctx, cfg.mgmtd());
            closeables.add(0, mgmtd);
            ManagerRoutingSource routing = ManagerRoutingSource.start(rt.ctx, mgmtd);
            closeables.add(0, routing);
            List<InetSocketAddress> metaAddrs = findMeta(mgmtd);
            RpcClient metaRpc = new RpcClient(rt.ctx, MetaMessages.PROTOCOL, node.rpc());
            closeables.add(0, metaRpc);
            MetaClient meta = new MetaClient(rt.ctx, metaRpc, metaAddrs, Duration.ofSeconds(10), 3 * metaAddrs.size() + 2);
            StorageClient l3 = new StorageClient(rt.ctx, routing, node.rpc(), StorageClientOptions.DEFAULTS);
            closeables.add(0, l3);
            agent = L2Agent.start(rt.ctx, cfg, routing, meta, l3, node.rpc(),
                    new InetSocketAddress(node.listen().getHostString(), node.listen().getPort()));
            closeables.add(0, agent);
            agent.register(mgmtd);
        } catch (Exception e) {
            closeAll(closeables);
            rt.close();
            throw e;
        }
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", NodeCommand.hostPort(agent.address()));
        rt.announceMetrics(info);
        agent.registered().thenRun(() -> {
            try {
                if (node.data() != null) {
                    DaemonRuntime.announceReady(node.data(), info);
                }
            } catch (java.io.IOException e) {
                LOG.error("{}: cannot write the ready file: {}", node.name(), e.toString());
            }
            LOG.info("{}: ready, L2 agent {} on {}, store {}, registered with the cluster manager {}", node.name(), cfg.nodeId(),
                    info.get("rpc"), cfg.path(), cfg.mgmtd());
        });
        rt.runUntilStopped(() -> closeAll(closeables));
        return 0;
    }

    /** The meta services the manager knows, waiting for one to register (an agent may start first). */
    private static List<InetSocketAddress> findMeta(MgmtdClient mgmtd) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (true) {
            try {
                return MetaDiscovery.find(mgmtd, Duration.ofSeconds(10));
            } catch (StrataException e) {
                if (e.status() != Status.NOT_FOUND || System.nanoTime() > deadline) {
                    throw e;
                }
                LOG.info("waiting for a meta service to register with the cluster manager...");
                Thread.sleep(1000);
            }
        }
    }

    private static void closeAll(List<AutoCloseable> closeables) {
        for (AutoCloseable c : closeables) {
            try {
                c.close();
            } catch (Exception e) {
                LOG.warn("closing {}: {}", c, e.toString());
            }
        }
    }
}
