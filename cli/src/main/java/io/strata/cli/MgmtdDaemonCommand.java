package io.strata.cli;

import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.mgmtd.MgmtdConfig;
import io.strata.mgmtd.MgmtdServer;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata mgmtd --config FILE}: one cluster-manager peer (Ratis), serving registration,
 * heartbeats, routing and admin requests until stopped. See {@link MgmtdConfig} for the
 * {@code [mgmtd]} table; {@code [node]} gives the name, the RPC address and the data directory.
 */
@Command(name = "mgmtd", mixinStandardHelpOptions = true,
        description = {"Run a cluster manager peer (membership, chains, routing) until stopped.", "",
                "One member of the managers' Ratis group: it keeps the membership, the nodes' leases, the targets' "
                        + "states, the chain tables and the routing, and serves registration, heartbeats, routing and admin "
                        + "requests. A real cluster runs three or five peers."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata mgmtd --config mgmtd-1.toml     [node], [mgmtd] with its peers, [rpc]"})
final class MgmtdDaemonCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(MgmtdDaemonCommand.class);

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "TOML file with [node], [mgmtd] and [rpc] tables.")
    Path config;

    @Override
    public Integer call() throws Exception {
        ConfigNode root = ConfigNode.load(config);
        NodeConfig node = NodeConfig.read(root, "mgmtd");
        MgmtdConfig cfg = MgmtdConfig.read(root, node.listen(), node.requireData(), node.rpc());
        root.rejectUnknownKeys();
        DaemonRuntime rt = new DaemonRuntime("mgmtd", node);
        MgmtdServer server;
        try {
            server = MgmtdServer.start(rt.ctx, cfg);
        } catch (Exception e) {
            rt.close();
            throw e;
        }
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", NodeCommand.hostPort(server.rpcAddress()));
        info.put("raft", NodeCommand.hostPort(server.config().self().raft()));
        rt.announceMetrics(info);
        DaemonRuntime.announceReady(node.requireData(), info);
        LOG.info("{}: cluster manager ready, rpc {}, raft {}", node.name(), info.get("rpc"), info.get("raft"));
        rt.runUntilStopped(server::close);
        return 0;
    }
}
