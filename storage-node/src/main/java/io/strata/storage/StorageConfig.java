package io.strata.storage;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.config.QosConfig;
import io.strata.core.DataSize;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.qos.QosShares;
import io.strata.storage.engine.EngineOptions;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The {@code [storage]} table of a storage node's config file:
 * <pre>
 * [storage]
 * node-id = 1                  # this node's id in routing (unique in the cluster)
 * mgmtd = ["127.0.0.1:9200"]   # cluster manager peers: register, heartbeat, route by its chain tables
 *                              # (absent: a static [routing] table is required instead)
 * advertise = "10.0.0.5:9100"  # optional: the address others reach this node at (default: the bound listen address)
 * labels = { host = "h1", rack = "r1" }   # optional failure-domain labels sent at registration
 * forward-timeout = "5s"       # one attempt to forward an update to the successor
 * verify-reads = true          # check block CRC32Cs on every read (false: reads use sendfile)
 * pipeline = true              # forward an update down the chain while storing it (false: after storing it)
 * max-batch = 256              # metadata changes per group commit
 * meta-map-size = "1GiB"       # LMDB map size per target
 * resync-bandwidth = "256MiB"  # bytes per second this node sends to targets it resyncs (client I/O is not limited)
 * resync-budget = "1GiB"       # optional: bytes per second all the cluster's resyncs send together (shared by target)
 * failed-after-io-errors = 3   # consecutive I/O errors after which a target is reported failed (offline)
 * [storage.qos]                # how each target's disk is shared between QoS classes (QosConfig)
 * [storage.scrub]              # background checks of every chunk (ScrubOptions)
 * [[storage.targets]]
 * id = 101
 * path = "/disk1/strata/t101"  # optional: default &lt;node.data&gt;/target-&lt;id&gt;
 * </pre>
 *
 * @param mgmtd           cluster manager peers; empty when routing is static
 * @param advertise       the address registered with the manager; null: the bound listen address
 * @param labels          failure-domain labels registered with the manager
 * @param resyncBandwidth most bytes per second of resync copies this node sends
 * @param ioErrorLimit    consecutive I/O errors after which a target is taken out of service
 * @param qos             how each target's reads and writes are ordered by class
 * @param scrub           how each target's chunks are checked in the background
 * @param pipeline        replicas forward an update to their successor while they store it (false: after)
 * @param resyncBudget    most bytes per second all the cluster's resyncs send together (0: no budget), shared
 *                        by the targets being resynced
 */
public record StorageConfig(NodeId nodeId, List<Target> targets, EngineOptions engine, Duration forwardTimeout,
                            List<InetSocketAddress> mgmtd, InetSocketAddress advertise, Map<String, String> labels,
                            DataSize resyncBandwidth, int ioErrorLimit, QosShares qos, ScrubOptions scrub,
                            boolean pipeline, DataSize resyncBudget) {
    /** Default {@code resync-bandwidth}. */
    public static final DataSize DEFAULT_RESYNC_BANDWIDTH = DataSize.ofMiB(256);
    /** Default {@code failed-after-io-errors}. */
    public static final int DEFAULT_IO_ERROR_LIMIT = 3;

    /** One target this node serves: its id and directory. */
    public record Target(TargetId id, Path path) {
    }

    public StorageConfig {
        targets = List.copyOf(targets);
        mgmtd = List.copyOf(mgmtd);
        labels = Map.copyOf(labels);
        if (targets.isEmpty()) {
            throw new ConfigException("storage.targets", "a storage node needs at least one target");
        }
        if (resyncBandwidth.bytes() < 64 * 1024) {
            throw new ConfigException("storage.resync-bandwidth", "must be at least 64KiB (per second), got " + resyncBandwidth);
        }
        if (resyncBudget == null || (resyncBudget.bytes() != 0 && resyncBudget.bytes() < 64 * 1024)) {
            throw new ConfigException("storage.resync-budget", "must be 0 (none) or at least 64KiB (per second), got " + resyncBudget);
        }
        if (qos == null || scrub == null) {
            throw new IllegalArgumentException("qos shares and scrub options are required");
        }
        if (ioErrorLimit < 1) {
            throw new ConfigException("storage.failed-after-io-errors", "must be at least 1, got " + ioErrorLimit);
        }
    }

    /** A node routed by a static table (no cluster manager), with default resync settings. */
    public StorageConfig(NodeId nodeId, List<Target> targets, EngineOptions engine, Duration forwardTimeout) {
        this(nodeId, targets, engine, forwardTimeout, List.of(), null, Map.of(), DEFAULT_RESYNC_BANDWIDTH, DEFAULT_IO_ERROR_LIMIT,
                QosShares.DEFAULTS, ScrubOptions.DEFAULTS, true, DataSize.ZERO);
    }

    /** Whether this node registers with a cluster manager (else it needs a static routing table). */
    public boolean managed() {
        return !mgmtd.isEmpty();
    }

    public Optional<InetSocketAddress> advertiseAddress() {
        return Optional.ofNullable(advertise);
    }

    /** This config registering with the cluster manager at {@code peers}. */
    public StorageConfig withMgmtd(List<InetSocketAddress> peers) {
        return new StorageConfig(nodeId, targets, engine, forwardTimeout, peers, advertise, labels, resyncBandwidth,
                ioErrorLimit, qos, scrub, pipeline, resyncBudget);
    }

    public StorageConfig withLabels(Map<String, String> l) {
        return new StorageConfig(nodeId, targets, engine, forwardTimeout, mgmtd, advertise, l, resyncBandwidth, ioErrorLimit,
                qos, scrub, pipeline, resyncBudget);
    }

    public StorageConfig withResyncBandwidth(DataSize perSecond) {
        return new StorageConfig(nodeId, targets, engine, forwardTimeout, mgmtd, advertise, labels, perSecond, ioErrorLimit, qos,
                scrub, pipeline, resyncBudget);
    }

    public StorageConfig withIoErrorLimit(int n) {
        return new StorageConfig(nodeId, targets, engine, forwardTimeout, mgmtd, advertise, labels, resyncBandwidth, n, qos,
                scrub, pipeline, resyncBudget);
    }

    public StorageConfig withQos(QosShares q) {
        return new StorageConfig(nodeId, targets, engine, forwardTimeout, mgmtd, advertise, labels, resyncBandwidth,
                ioErrorLimit, q, scrub, pipeline, resyncBudget);
    }

    public StorageConfig withScrub(ScrubOptions o) {
        return new StorageConfig(nodeId, targets, engine, forwardTimeout, mgmtd, advertise, labels, resyncBandwidth,
                ioErrorLimit, qos, o, pipeline, resyncBudget);
    }

    public StorageConfig withPipeline(boolean p) {
        return new StorageConfig(nodeId, targets, engine, forwardTimeout, mgmtd, advertise, labels, resyncBandwidth, ioErrorLimit, qos, scrub,
                p, resyncBudget);
    }

    /** The same settings with a cluster-wide resync budget ({@link DataSize#ZERO}: none). */
    public StorageConfig withResyncBudget(DataSize perSecond) {
        return new StorageConfig(nodeId, targets, engine, forwardTimeout, mgmtd, advertise, labels, resyncBandwidth, ioErrorLimit, qos, scrub,
                pipeline, perSecond);
    }

    /**
     * The resync rate of this node while it resyncs {@code mine} of the {@code syncing} targets of
     * the cluster: its own {@code resync-bandwidth}, or less, its share of {@code resync-budget} in
     * proportion to the targets it resyncs (at least 64 KiB/s).
     */
    public long resyncRate(int mine, int syncing) {
        long own = resyncBandwidth.bytes();
        if (resyncBudget.bytes() == 0 || syncing == 0) {
            return own;
        }
        long share = (long) ((double) resyncBudget.bytes() * Math.max(1, mine) / Math.max(syncing, Math.max(1, mine)));
        return Math.min(own, Math.max(64 * 1024, share));
    }

    public static StorageConfig read(ConfigNode s, Path dataDir) {
        if (!s.has("node-id")) {
            throw new ConfigException(s.path().isEmpty() ? "node-id" : s.path() + ".node-id", "is required (this node's id in routing)");
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
        List<InetSocketAddress> mgmtd = s.addresses("mgmtd");
        if (s.has("mgmtd") && mgmtd.isEmpty()) {
            throw new ConfigException(s.path() + ".mgmtd", "lists no cluster manager peer (remove the key to use a static [routing] table)");
        }
        InetSocketAddress advertise = s.address("advertise").orElse(null);
        if (advertise != null && advertise.getPort() == 0) {
            throw new ConfigException(s.path() + ".advertise", "needs a real port, not 0");
        }
        Map<String, String> labels = s.stringMap("labels");
        DataSize bandwidth = s.size("resync-bandwidth", DEFAULT_RESYNC_BANDWIDTH, DataSize.ofKiB(64), DataSize.ofGiB(1024));
        int ioErrors = s.integer("failed-after-io-errors", DEFAULT_IO_ERROR_LIMIT, 1, 1_000_000);
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
        QosShares qos = QosConfig.read(s.section("qos"));
        ScrubOptions scrub = ScrubOptions.read(s.section("scrub"));
        return new StorageConfig(node, targets, engine, forward, mgmtd, advertise, labels, bandwidth, ioErrors, qos, scrub,
                s.bool("pipeline", true), s.size("resync-budget", DataSize.ZERO, DataSize.ZERO, DataSize.ofGiB(1024)));
    }
}
