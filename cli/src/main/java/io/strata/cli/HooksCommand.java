package io.strata.cli;

import io.strata.client.ClientConfig;
import io.strata.client.StrataFileSystem;
import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.hooks.Hooks;
import io.strata.hooks.HooksConfig;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.nio.file.Path;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata hooks --config FILE}: the scheduler hooks (docs/scheduler-hooks.md), the HTTP
 * API where schedulers post prefetch hints and the planner that has the L2 agents stage them.
 * It keeps no state: hints live in the cluster manager, so a restart loses none. With a
 * {@code [tls]} table the API is HTTPS with the process's certificate.
 */
@Command(name = "hooks", mixinStandardHelpOptions = true,
        description = {"Run the scheduler hooks (prefetch hints over HTTP, staged into L2 before jobs start) until stopped.", "",
                "The hints live in the cluster manager ([hooks] mgmtd); the API listens on [hooks] listen "
                        + "(default 127.0.0.1:" + HooksConfig.DEFAULT_PORT + "), over HTTPS when the config has a [tls] table. "
                        + "See docs/scheduler-hooks.md."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata hooks --config hooks.toml"})
final class HooksCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(HooksCommand.class);

    @Option(names = "--config", required = true, paramLabel = "FILE",
            description = "TOML file with [node], [client] and [hooks] tables (and [auth], [tls]).")
    Path config;

    @Override
    public Integer call() throws Exception {
        ConfigNode root = ConfigNode.load(config);
        NodeConfig node = NodeConfig.read(root, "hooks");
        HooksConfig cfg = HooksConfig.read(root.section("hooks"), node.tls());
        ClientConfig client = ClientConfig.read(root);
        root.rejectUnknownKeys();
        DaemonRuntime rt = new DaemonRuntime("hooks", node);
        MgmtdClient mgmtd = null;
        ManagerRoutingSource routing = null;
        StrataFileSystem fs = null;
        Hooks hooks;
        try {
            mgmtd = new MgmtdClient(rt.ctx, cfg.mgmtd());
            routing = ManagerRoutingSource.start(rt.ctx, mgmtd);
            fs = StrataFileSystem.connect(rt.ctx, client);
            hooks = Hooks.start(rt.ctx, cfg, fs, routing, mgmtd, node.rpc(), Clock.systemUTC());
        } catch (Exception e) {
            for (AutoCloseable c : new AutoCloseable[] {fs, routing, mgmtd}) {
                if (c != null) {
                    c.close();
                }
            }
            rt.close();
            throw e;
        }
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", "-");
        info.put("http", NodeCommand.hostPort(hooks.address()));
        rt.announceMetrics(info);
        if (node.data() != null) {
            DaemonRuntime.announceReady(node.data(), info);
        }
        if (node.tls().enabled()) {
            LOG.info("{}: ready, scheduler hooks on {}/v1/ (callers verify its certificate with the CA of {})", node.name(), hooks.url(),
                    node.tls().caFile());
        } else {
            LOG.warn("{}: ready, scheduler hooks on {}/v1/ in plain HTTP (no [tls] table): bearer tokens cross the wire readable",
                    node.name(), hooks.url());
        }
        StrataFileSystem fsToClose = fs;
        ManagerRoutingSource routingToClose = routing;
        MgmtdClient mgmtdToClose = mgmtd;
        rt.runUntilStopped(() -> {
            hooks.close();
            fsToClose.close();
            routingToClose.close();
            mgmtdToClose.close();
        });
        return 0;
    }
}
