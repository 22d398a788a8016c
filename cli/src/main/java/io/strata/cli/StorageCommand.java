package io.strata.cli;

import io.strata.l3.StorageDaemonConfig;
import io.strata.l3.StorageNode;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata storage --config FILE}: a storage node serving its chunk targets on CRAQ chains.
 * The file has {@code [node]} (name, listen, data, metrics), {@code [rpc]}, {@code [storage]}
 * (node-id, targets, ...) and the chain table as {@code [routing]} (see
 * docs/internals/craq.md); a bad value names its key and is refused at start.
 */
@Command(name = "storage", description = "Run a storage node (chunk targets on CRAQ chains) until stopped.")
final class StorageCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(StorageCommand.class);

    @Option(names = "--config", required = true, paramLabel = "FILE",
            description = "TOML file with [node], [rpc], [storage] and [routing] tables.")
    Path config;

    @Override
    public Integer call() throws Exception {
        StorageDaemonConfig cfg = StorageDaemonConfig.load(config);
        DaemonRuntime rt = new DaemonRuntime("storage", cfg.node());
        StorageNode node;
        try {
            node = StorageNode.start(rt.ctx, cfg.storage(), cfg.routing(), cfg.node().rpc(), cfg.listen());
        } catch (RuntimeException e) {
            rt.close();
            throw e;
        }
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", NodeCommand.hostPort(node.address()));
        if (rt.metricsAddress() != null) {
            info.put("metrics", NodeCommand.hostPort(rt.metricsAddress()));
        }
        if (cfg.node().data() != null) {
            DaemonRuntime.announceReady(cfg.node().data(), info);
        }
        LOG.info("{}: ready, storage node {} with targets {}, rpc {}{}", cfg.node().name(), node.nodeId(), node.targets(),
                info.get("rpc"), info.containsKey("metrics") ? ", metrics http://" + info.get("metrics") + "/metrics" : "");
        rt.runUntilStopped(node::close);
        return 0;
    }
}
