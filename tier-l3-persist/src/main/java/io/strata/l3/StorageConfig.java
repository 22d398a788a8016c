package io.strata.l3;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.DataSize;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.l3.engine.EngineOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The {@code [storage]} table of a storage node's config file:
 * <pre>
 * [storage]
 * node-id = 1                  # this node's id in routing ([routing] nodes)
 * forward-timeout = "5s"       # one attempt to forward an update to the successor
 * verify-reads = true          # check block CRC32Cs on every read (false: reads use sendfile)
 * max-batch = 256              # metadata changes per group commit
 * meta-map-size = "1GiB"       # LMDB map size per target
 * [[storage.targets]]
 * id = 101
 * path = "/disk1/strata/t101"  # optional: default &lt;node.data&gt;/target-&lt;id&gt;
 * </pre>
 */
public record StorageConfig(NodeId nodeId, List<Target> targets, EngineOptions engine, Duration forwardTimeout) {
    /** One target this node serves: its id and directory. */
    public record Target(TargetId id, Path path) {
    }

    public StorageConfig {
        targets = List.copyOf(targets);
        if (targets.isEmpty()) {
            throw new ConfigException("storage.targets", "a storage node needs at least one target");
        }
    }

    public static StorageConfig read(ConfigNode s, Path dataDir) {
        if (!s.has("node-id")) {
            throw new ConfigException(s.path().isEmpty() ? "node-id" : s.path() + ".node-id", "is required (this node's id in [routing])");
        }
        NodeId node = NodeId.of((int) s.integer("node-id", 0L, 1L, Integer.MAX_VALUE));
        Duration forward = s.duration("forward-timeout", Duration.ofSeconds(5), Duration.ofMillis(10), Duration.ofMinutes(10));
        EngineOptions d = EngineOptions.DEFAULTS;
        EngineOptions engine;
        try {
            engine = new EngineOptions(s.size("meta-map-size", d.metaMapSize(), DataSize.ofMiB(1), DataSize.ofGiB(1024)),
                    s.integer("max-batch", d.maxBatch(), 1, 1 << 16), s.bool("verify-reads", d.verifyReads()),
                    d.poolLow(), d.poolHigh());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(s.path(), e.getMessage());
        }
        List<Target> targets = new ArrayList<>();
        Set<Long> ids = new HashSet<>();
        for (ConfigNode t : s.sections("targets")) {
            if (!t.has("id")) {
                throw new ConfigException(t.path() + ".id", "is required");
            }
            TargetId id = TargetId.of(t.integer("id", 0L, 1L, Long.MAX_VALUE));
            if (!ids.add(id.value())) {
                throw new ConfigException(t.path() + ".id", "target " + id.value() + " is listed twice");
            }
            String p = t.string("path", null);
            Path path;
            if (p != null) {
                path = Path.of(p);
            } else if (dataDir != null) {
                path = dataDir.resolve("target-" + id.value());
            } else {
                throw new ConfigException(t.path() + ".path", "is required when [node] data is not set");
            }
            targets.add(new Target(id, path));
        }
        if (targets.isEmpty()) {
            throw new ConfigException(s.path() + ".targets", "a storage node needs at least one [[storage.targets]]");
        }
        return new StorageConfig(node, targets, engine, forward);
    }
}
