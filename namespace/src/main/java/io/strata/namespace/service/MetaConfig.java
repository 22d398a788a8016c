package io.strata.namespace.service;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.config.policy.Policy;
import io.strata.core.DataSize;
import io.strata.namespace.MetaStore;
import io.strata.namespace.StaticChainTables;
import io.strata.namespace.kv.FdbKvStore;
import io.strata.namespace.kv.KvStore;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.namespace.kv.RetryPolicy;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The meta service's configuration, checked at load:
 * <pre>
 * [node]                       # name, listen, data, transport, metrics (NodeConfig)
 * [meta]
 * backend = "lmdb"             # lmdb (embedded, one instance) | fdb (any number of instances)
 * workers = 8                  # threads running transactions
 * inode-batch = 1024           # inode ids reserved per allocator transaction
 * gc-interval = "1s"           # collector period
 * gc-delay = "0s"              # wait before freeing a deleted file's chunks
 * gc-chunks-per-second = 2000  # most chunk removals the collector starts per second
 * gc-busy-chunks-per-second = 5 # the same while clients change the namespace (a change in the last second)
 * gc-busy-max-wait = "60s"     # a file due this long is freed at the full rate however busy
 * idempotency-ttl = "30m"      # how long retries of a request find its result
 * session-lease = "60s"        # a client silent this long has its open sessions ended
 * [meta.lmdb]
 * path = "/var/lib/strata/meta" # default: node.data + "/meta"
 * map-size = "16GiB"
 * sync = true                  # fsync every group commit
 * [meta.fdb]
 * cluster-file = "/etc/foundationdb/fdb.cluster"
 * prefix = "strata/"           # key prefix of this namespace in the cluster
 * [[meta.chain-tables]]        # without a cluster manager: the tables layouts draw from
 * id = 1
 * version = 1
 * replicas = 3
 * chains = [1, 2, 3]
 * </pre>
 */
public record MetaConfig(NodeConfig node, String backend, MetaStore.Options options, Path lmdbPath, DataSize lmdbMapSize,
                         boolean lmdbSync, String fdbClusterFile, String fdbPrefix, StaticChainTables chainTables) {

    public static MetaConfig read(ConfigNode root) {
        NodeConfig node = NodeConfig.read(root, "meta");
        ConfigNode m = root.section("meta");
        String backend = m.string("backend", "lmdb");
        if (!backend.equals("lmdb") && !backend.equals("fdb")) {
            throw new ConfigException(m.path() + ".backend", "must be \"lmdb\" or \"fdb\", got \"" + backend + "\"");
        }
        int workers = m.integer("workers", 8, 1, 1024);
        int batch = m.integer("inode-batch", 1024, 1, 1 << 20);
        Duration gcInterval = m.duration("gc-interval", Duration.ofSeconds(1), Duration.ZERO, Duration.ofHours(1));
        Duration gcDelay = m.duration("gc-delay", Duration.ZERO, Duration.ZERO, Duration.ofDays(30));
        long gcRate = m.integer("gc-chunks-per-second", 2000, 1, 1_000_000);
        long gcBusyRate = m.integer("gc-busy-chunks-per-second", 5, 1, 1_000_000);
        Duration gcBusyMaxWait = m.duration("gc-busy-max-wait", Duration.ofSeconds(60), Duration.ZERO, Duration.ofDays(30));
        Duration ttl = m.duration("idempotency-ttl", Duration.ofMinutes(30), Duration.ofSeconds(1), Duration.ofDays(7));
        Duration lease = m.duration("session-lease", Duration.ofSeconds(60), Duration.ofMillis(100), Duration.ofDays(1));
        ConfigNode l = m.section("lmdb");
        String lpath = l.string("path", null);
        DataSize mapSize = l.size("map-size", DataSize.ofGiB(16), DataSize.ofMiB(1), DataSize.ofGiB(1L << 20));
        boolean sync = l.bool("sync", true);
        ConfigNode f = m.section("fdb");
        String clusterFile = f.string("cluster-file", null);
        String prefix = f.string("prefix", "strata/");
        StaticChainTables tables = StaticChainTables.fromConfig(m.sections("chain-tables"));
        Path lmdbPath = null;
        if (backend.equals("lmdb")) {
            lmdbPath = lpath != null ? Path.of(lpath) : node.requireData().resolve("meta");
        } else if (clusterFile == null) {
            throw new ConfigException(f.path() + ".cluster-file", "is required when meta.backend = \"fdb\"");
        }
        if (gcBusyRate > gcRate) {
            throw new ConfigException(m.path() + ".gc-busy-chunks-per-second", "is " + gcBusyRate
                    + ", above gc-chunks-per-second (" + gcRate + "): the busy pace is the slower one");
        }
        MetaStore.Options options = new MetaStore.Options(workers, batch, gcInterval, gcDelay, gcRate, ttl, Policy.DEFAULT,
                RetryPolicy.DEFAULT, lease, gcBusyRate, gcBusyMaxWait);
        return new MetaConfig(node, backend, options, lmdbPath, mapSize, sync, clusterFile, prefix, tables);
    }

    /** Opens the configured store. */
    public KvStore openStore(MeterRegistry meters) {
        if (backend.equals("fdb")) {
            return FdbKvStore.open(fdbClusterFile, fdbPrefix.getBytes(StandardCharsets.UTF_8), null);
        }
        return LmdbKvStore.open(lmdbPath, new LmdbKvStore.Options(lmdbMapSize.bytes(), lmdbSync, 1024), meters);
    }
}
