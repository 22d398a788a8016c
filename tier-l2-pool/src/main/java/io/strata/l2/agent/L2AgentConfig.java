package io.strata.l2.agent;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.config.QosConfig;
import io.strata.core.DataSize;
import io.strata.core.NodeId;
import io.strata.core.qos.QosShares;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code [l2]} table of an L2 agent's config file:
 * <pre>
 * [l2]
 * node-id = 11                 # this agent's node id (unique in the cluster)
 * mgmtd = ["127.0.0.1:9200"]   # cluster manager peers: register, heartbeat, route by them
 * advertise = "10.0.0.7:9400"  # optional: the address others reach this agent at (default: the bound listen address)
 * labels = { domain = "gpu-node-7" }   # failure domain (default: the host)
 * path = "/nvme/strata/l2"     # optional: default &lt;node.data&gt;/l2
 * capacity = "64GiB"           # most bytes of chunk copies held
 * min-free = "1GiB"            # never fill the disk past this much free space
 * drain-bandwidth = "512MiB"   # bytes per second this agent drains to L3
 * drain-budget = "2GiB"        # optional: bytes per second all the cluster's agents drain together (an equal share for each agent draining)
 * prefetch-bandwidth = "256MiB" # bytes per second this agent reads from L3 for prefetch hints (0: unlimited)
 * drain-interval = "100ms"     # how often the drain looks for work (a client's sync wakes it at once)
 * forward-timeout = "5s"       # one attempt to forward an update to another holder
 * [l2.qos]                     # how the agent's disk is shared between QoS classes (QosConfig; 32 slots by default)
 * </pre>
 */
public record L2AgentConfig(NodeId nodeId, List<InetSocketAddress> mgmtd, InetSocketAddress advertise, Map<String, String> labels,
                            Path path, DataSize capacity, DataSize minFree, DataSize drainBandwidth, DataSize prefetchBandwidth,
                            Duration drainInterval, Duration forwardTimeout, QosShares qos, DataSize drainBudget) {
    public static final DataSize DEFAULT_CAPACITY = DataSize.ofGiB(16);
    public static final DataSize DEFAULT_MIN_FREE = DataSize.ofMiB(512);
    public static final DataSize DEFAULT_DRAIN_BANDWIDTH = DataSize.ofMiB(512);
    /** Half the drain's: a prefetch is ahead of its job, the drain frees room and makes checkpoints durable. */
    public static final DataSize DEFAULT_PREFETCH_BANDWIDTH = DataSize.ofMiB(256);
    /**
     * The agent's disk scheduler: a storage target's shares, with as many slots as the agent has
     * read threads (a restore keeps many chunk reads in flight, and the disk serves them faster so).
     */
    public static final QosShares DEFAULT_QOS = QosShares.DEFAULTS.withSlots(L2Agent.READ_THREADS);

    public L2AgentConfig {
        mgmtd = List.copyOf(mgmtd);
        labels = Map.copyOf(labels);
        if (nodeId == null || path == null || qos == null) {
            throw new ConfigException("l2", "an L2 agent needs a node id, a path and QoS shares");
        }
        if (capacity.bytes() < (1 << 20)) {
            throw new ConfigException("l2.capacity", "must be at least 1MiB, got " + capacity);
        }
        if (drainBandwidth.bytes() < 64 * 1024) {
            throw new ConfigException("l2.drain-bandwidth", "must be at least 64KiB (per second), got " + drainBandwidth);
        }
        if (drainBudget == null || (drainBudget.bytes() != 0 && drainBudget.bytes() < 64 * 1024)) {
            throw new ConfigException("l2.drain-budget", "must be 0 (none) or at least 64KiB (per second), got " + drainBudget);
        }
        if (prefetchBandwidth.bytes() != 0 && prefetchBandwidth.bytes() < 64 * 1024) {
            throw new ConfigException("l2.prefetch-bandwidth", "must be 0 (unlimited) or at least 64KiB (per second), got "
                    + prefetchBandwidth);
        }
    }

    /** An agent with default settings storing in {@code path} (tests, embedded clusters). */
    public static L2AgentConfig of(NodeId id, Path path) {
        return new L2AgentConfig(id, List.of(), null, Map.of(), path, DEFAULT_CAPACITY, DataSize.ofMiB(16), DEFAULT_DRAIN_BANDWIDTH,
                DEFAULT_PREFETCH_BANDWIDTH, Duration.ofMillis(100), Duration.ofSeconds(5), DEFAULT_QOS,
                DataSize.ZERO);
    }

    public L2AgentConfig withCapacity(DataSize c) {
        return new L2AgentConfig(nodeId, mgmtd, advertise, labels, path, c, minFree, drainBandwidth, prefetchBandwidth, drainInterval,
                forwardTimeout, qos, drainBudget);
    }

    public L2AgentConfig withDrainBandwidth(DataSize perSecond) {
        return new L2AgentConfig(nodeId, mgmtd, advertise, labels, path, capacity, minFree, perSecond, prefetchBandwidth, drainInterval,
                forwardTimeout, qos, drainBudget);
    }

    public L2AgentConfig withLabels(Map<String, String> l) {
        return new L2AgentConfig(nodeId, mgmtd, advertise, l, path, capacity, minFree, drainBandwidth, prefetchBandwidth, drainInterval,
                forwardTimeout, qos, drainBudget);
    }

    /** The same settings with a prefetch byte rate ({@link DataSize#ZERO}: unlimited). */
    public L2AgentConfig withPrefetchBandwidth(DataSize perSecond) {
        return new L2AgentConfig(nodeId, mgmtd, advertise, labels, path, capacity, minFree, drainBandwidth, perSecond, drainInterval,
                forwardTimeout, qos, drainBudget);
    }

    /** The same settings with a cluster-wide drain budget ({@link DataSize#ZERO}: none). */
    public L2AgentConfig withDrainBudget(DataSize perSecond) {
        return new L2AgentConfig(nodeId, mgmtd, advertise, labels, path, capacity, minFree, drainBandwidth, prefetchBandwidth, drainInterval,
                forwardTimeout, qos, perSecond);
    }

    /**
     * The drain rate of this agent when {@code sharing} agents of the cluster drain: its own
     * {@code drain-bandwidth}, or less, its equal share of {@code drain-budget} (at least 64 KiB/s).
     */
    public long drainRate(int sharing) {
        long own = drainBandwidth.bytes();
        if (drainBudget.bytes() == 0) {
            return own;
        }
        return Math.min(own, Math.max(64 * 1024, drainBudget.bytes() / Math.max(1, sharing)));
    }

    /** The same settings with the disk scheduler's shares {@code q}. */
    public L2AgentConfig withQos(QosShares q) {
        return new L2AgentConfig(nodeId, mgmtd, advertise, labels, path, capacity, minFree, drainBandwidth, prefetchBandwidth, drainInterval,
                forwardTimeout, q, drainBudget);
    }

    public Optional<InetSocketAddress> advertiseAddress() {
        return Optional.ofNullable(advertise);
    }

    public static L2AgentConfig read(ConfigNode s, Path dataDir) {
        if (!s.has("node-id")) {
            throw new ConfigException(s.path() + ".node-id", "is required (this agent's node id, unique in the cluster)");
        }
        NodeId id = NodeId.of((int) s.integer("node-id", 0L, 1L, Integer.MAX_VALUE));
        List<InetSocketAddress> mgmtd = s.addresses("mgmtd");
        if (mgmtd.isEmpty()) {
            throw new ConfigException(s.path() + ".mgmtd", "is required: an L2 agent registers with the cluster manager");
        }
        InetSocketAddress advertise = s.address("advertise").orElse(null);
        if (advertise != null && advertise.getPort() == 0) {
            throw new ConfigException(s.path() + ".advertise", "needs a real port, not 0");
        }
        String p = s.string("path", null);
        Path path;
        if (p != null) {
            path = Path.of(p);
        } else if (dataDir != null) {
            path = dataDir.resolve("l2");
        } else {
            throw new ConfigException(s.path() + ".path", "is required when [node] data is not set");
        }
        return new L2AgentConfig(id, mgmtd, advertise, s.stringMap("labels"), path,
                s.size("capacity", DEFAULT_CAPACITY, DataSize.ofMiB(1), DataSize.ofGiB(1L << 20)),
                s.size("min-free", DEFAULT_MIN_FREE, DataSize.ofBytes(0), DataSize.ofGiB(1L << 20)),
                s.size("drain-bandwidth", DEFAULT_DRAIN_BANDWIDTH, DataSize.ofKiB(64), DataSize.ofGiB(1L << 20)),
                s.size("prefetch-bandwidth", DEFAULT_PREFETCH_BANDWIDTH, DataSize.ZERO, DataSize.ofGiB(1L << 20)),
                s.duration("drain-interval", Duration.ofMillis(100), Duration.ofMillis(1), Duration.ofMinutes(10)),
                s.duration("forward-timeout", Duration.ofSeconds(5), Duration.ofMillis(10), Duration.ofMinutes(10)),
                QosConfig.read(s.section("qos"), DEFAULT_QOS),
                s.size("drain-budget", DataSize.ZERO, DataSize.ZERO, DataSize.ofGiB(1L << 20)));
    }
}
