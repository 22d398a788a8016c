package io.strata.cli;

import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcServer;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code strata node --config FILE}: a bare RPC node answering ping, echo and pull. Useful to
 * check the network between two hosts ({@code strata ping}) and the RPC layer between two
 * processes.
 */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = {"Run a bare RPC node (ping, echo, pull) until stopped.", "",
                "With `strata ping` from another host it checks the network and the RPC layer between the two, "
                        + "without a cluster. Stops on SIGTERM or Ctrl-C."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata node --config node.toml      [node] name and listen, optional [rpc]"})
final class NodeCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(NodeCommand.class);

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "TOML file with [node] and [rpc] tables.")
    Path config;

    @Override
    public Integer call() throws Exception {
        ConfigNode root = ConfigNode.load(config);
        NodeConfig cfg = NodeConfig.read(root, "node");
        root.rejectUnknownKeys();
        DaemonRuntime rt = new DaemonRuntime("node", cfg);
        RpcServer server;
        try {
            InetSocketAddress listen = new InetSocketAddress(cfg.listen().getHostString(), cfg.listen().getPort());
            server = EchoService.register(rt.ctx, RpcServer.builder(rt.ctx, Protocol.of(CoreMessages.TYPES)).options(cfg.rpc()),
                    (int) cfg.rpc().maxPayload().bytes()).bind(listen);
        } catch (RuntimeException e) {
            rt.close();
            throw e;
        }
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", hostPort(server.address()));
        rt.announceMetrics(info);
        if (cfg.data() != null) {
            DaemonRuntime.announceReady(cfg.data(), info);
        }
        LOG.info("{}: ready, rpc {}{}", cfg.name(), info.get("rpc"),
                info.containsKey("metrics") ? ", metrics " + rt.metricsUrl() : "");
        rt.runUntilStopped(server::close);
        return 0;
    }

    static String hostPort(InetSocketAddress a) {
        return a.getHostString() + ":" + a.getPort();
    }
}
