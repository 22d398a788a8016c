package io.strata.l3;

import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.placement.StaticRoutingSource;
import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * Everything a storage node process reads from its TOML file: {@code [node]} and {@code [rpc]}
 * ({@link NodeConfig}), {@code [storage]} ({@link StorageConfig}) and, in this release, the
 * chain table from {@code [routing]} ({@link StaticRoutingSource}). Unknown keys are refused.
 */
public record StorageDaemonConfig(NodeConfig node, StorageConfig storage, StaticRoutingSource routing) {
    public static StorageDaemonConfig load(Path file) {
        ConfigNode root = ConfigNode.load(file);
        NodeConfig node = NodeConfig.read(root, "storage");
        StorageConfig storage = StorageConfig.read(root.section("storage"), node.data());
        StaticRoutingSource routing = StaticRoutingSource.fromConfig(root.section("routing"));
        root.rejectUnknownKeys();
        return new StorageDaemonConfig(node, storage, routing);
    }

    /** The resolved listen address. */
    public InetSocketAddress listen() {
        return new InetSocketAddress(node.listen().getHostString(), node.listen().getPort());
    }
}
