package io.strata.storage;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.core.NodeContext;
import io.strata.placement.StaticRoutingSource;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Everything a storage node process reads from its TOML file: {@code [node]} and {@code [rpc]}
 * ({@link NodeConfig}), {@code [storage]} ({@link StorageConfig}) and where routing comes from:
 * the cluster manager ({@code [storage] mgmtd}, the normal case) or a static chain table in
 * {@code [routing]} ({@link StaticRoutingSource}; tests and setups without a manager). Exactly
 * one of the two must be given. Unknown keys are refused.
 */
public record StorageDaemonConfig(NodeConfig node, StorageConfig storage, Optional<StaticRoutingSource> staticRouting) {
    public static StorageDaemonConfig load(Path file) {
        ConfigNode root = ConfigNode.load(file);
        NodeConfig node = NodeConfig.read(root, "storage");
        StorageConfig storage = StorageConfig.read(root.section("storage"), node.data());
        Optional<StaticRoutingSource> routing = Optional.empty();
        if (root.has("routing")) {
            if (storage.managed()) {
                throw new ConfigException("routing", "a node routed by the cluster manager (storage.mgmtd) must not have a static [routing] table");
            }
            routing = Optional.of(StaticRoutingSource.fromConfig(root.section("routing")));
        } else if (!storage.managed()) {
            throw new ConfigException("storage.mgmtd", "is required unless a static [routing] table is given (where do chains come from?)");
        }
        root.rejectUnknownKeys();
        return new StorageDaemonConfig(node, storage, routing);
    }

    /** The static routing table; fails for a node routed by the cluster manager. */
    public StaticRoutingSource routing() {
        return staticRouting.orElseThrow(() -> new IllegalStateException("this storage node is routed by the cluster manager"));
    }

    /** The resolved listen address. */
    public InetSocketAddress listen() {
        return new InetSocketAddress(node.listen().getHostString(), node.listen().getPort());
    }

    /**
     * Starts the node this file describes: registered with the cluster manager
     * ({@link StorageNode#startManaged}) or on its static table ({@link StorageNode#start}).
     */
    public StorageNode start(NodeContext ctx) {
        if (storage.managed()) {
            return StorageNode.startManaged(ctx, storage, node.rpc(), listen());
        }
        return StorageNode.start(ctx, storage, routing(), node.rpc(), listen());
    }
}
