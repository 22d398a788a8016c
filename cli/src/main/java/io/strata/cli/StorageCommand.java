package io.strata.cli;

import io.strata.storage.StorageDaemonConfig;
import io.strata.storage.StorageNode;
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
 * The file has {@code [node]} (name, listen, data, metrics), {@code [rpc]} and {@code [storage]}
 * (node-id, targets, and {@code mgmtd}: the cluster manager it registers with and routes by), or,
 * without a manager, a static chain table as {@code [routing]} (see docs/operations.md); a bad
 * value names its key and is refused at start. The ready file is written once the node serves:
 * for a managed node, once the manager granted it a lease.
 */
@Command(name = "storage", mixinStandardHelpOptions = true,
        description = {"Run a storage node (chunk targets on CRAQ chains) until stopped.", "",
                "It registers with the cluster manager ([storage] mgmtd) and routes by it, or follows a static "
                        + "[routing] table. A bad config value names its key and is refused at start (see docs/operations.md)."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata storage --config storage-1.toml"})
final class StorageCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(StorageCommand.class);

    @Option(names = "--config", required = true, paramLabel = "FILE",
            description = "TOML file with [node], [rpc] and [storage] tables ([storage] mgmtd, or a static [routing] table).")
    Path config;

    @Override
    public Integer call() throws Exception {
        StorageDaemonConfig cfg = StorageDaemonConfig.load(config);
        DaemonRuntime rt = new DaemonRuntime("storage", cfg.node());
        StorageNode node;
        try {
            node = cfg.start(rt.ctx);
        } catch (RuntimeException e) {
            rt.close();
            throw e;
        }
        Map<String, String> info = new LinkedHashMap<>();
        info.put("rpc", NodeCommand.hostPort(node.address()));
        rt.announceMetrics(info);
        node.registered().thenRun(() -> {
            try {
                if (cfg.node().data() != null) {
                    DaemonRuntime.announceReady(cfg.node().data(), info);
                }
            } catch (java.io.IOException e) {
                LOG.error("{}: cannot write the ready file: {}", cfg.node().name(), e.toString());
            }
            LOG.info("{}: ready, storage node {} with targets {}, rpc {}{}{}", cfg.node().name(), node.nodeId(), node.targets(),
                    info.get("rpc"), info.containsKey("metrics") ? ", metrics " + rt.metricsUrl() : "",
                    cfg.storage().managed() ? ", registered with the cluster manager " + cfg.storage().mgmtd() : ", static routing");
        });
        rt.runUntilStopped(node::close);
        return 0;
    }
}
