package io.strata.client;

import io.strata.core.rpc.Addresses;
import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.config.RpcConfig;
import io.strata.core.DataSize;
import io.strata.core.rpc.RpcOptions;
import io.strata.l1.L1Config;
import io.strata.core.tier.QosClass;
import io.strata.l3.ReadPolicy;
import io.strata.l3.StorageClientOptions;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.placement.StaticRoutingSource;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What a Strata client (the Java API, the FUSE mount, the native CLI commands) is built from,
 * checked at load with the key path of any bad value:
 * <pre>
 * [client]
 * name = "client"                 # for logs and metric tags
 * meta = ["127.0.0.1:9300"]       # meta service instances (any of them); empty: ask the manager
 * mgmtd = ["127.0.0.1:9200"]      # cluster manager peers: routing (and meta discovery)
 * io-timeout = "30s"              # one data call (read, write, fsync) fails with TIMEOUT after this
 * meta-timeout = "30s"            # one namespace call, retries on other instances included
 * attempt-timeout = "5s"          # one attempt on one storage replica before the next is tried
 * read-policy = "by-chunk"        # which replica a read tries first: by-chunk | random | round-robin | prefer-local
 * readahead = "16MiB"             # largest readahead window of a sequentially read file (0: off)
 * write-buffer = "4MiB"           # contiguous writes gathered per file before they are sent (0: off)
 * write-buffer-total = "256MiB"   # all files' gathered writes; past it writes go straight through
 * dentry-ttl = "1s"               # how long a directory's path -> inode is reused (0: never)
 * job = "train-42"                # optional: the job this client works for; a mount tags its metrics strata_job
 * job-qos = "training-read"       # optional: the class of its I/O where the directory's policy says interactive
 * [client.in-flight]              # bytes each QoS class may have in flight to the storage nodes (0: no limit)
 * checkpoint = "32MiB"            # defaults: checkpoint 32MiB, prefetch 16MiB, background 16MiB, others none
 * [routing]                       # instead of mgmtd: a static chain table (see StaticRoutingSource)
 * [l1]                            # optional: the node's L1 cache (see L1Config); absent: no L1
 * [rpc]                           # RPC settings (see RpcConfig)
 * </pre>
 * Data routing comes from a {@code [routing]} table when there is one (then {@code mgmtd}, if
 * also given, only finds the meta service), else from the cluster manager {@code mgmtd}; one of
 * them is required. Immutable; the {@code with*} methods return changed copies (tests, benchmarks).
 */
public record ClientConfig(String name, List<InetSocketAddress> meta, List<InetSocketAddress> mgmtd,
                           Optional<RoutingInfo> staticRouting, Duration ioTimeout, Duration metaTimeout,
                           Duration attemptTimeout, ReadPolicy readPolicy, DataSize readahead, DataSize writeBuffer,
                           DataSize writeBufferTotal, Duration dentryTtl, Optional<L1Config> l1, RpcOptions rpc,
                           Map<QosClass, Long> inFlight, Optional<String> job, Optional<QosClass> jobQos) {

    public ClientConfig {
        if (name == null || !name.matches("[A-Za-z0-9._-]+")) {
            throw new ConfigException("client.name", "must be letters, digits, '.', '_' or '-', got \"" + name + "\"");
        }
        meta = List.copyOf(meta);
        mgmtd = List.copyOf(mgmtd);
        if (mgmtd.isEmpty() && staticRouting.isEmpty()) {
            throw new ConfigException("client.mgmtd", "is required unless a static [routing] table is given (where do chunks live?)");
        }
        if (meta.isEmpty() && mgmtd.isEmpty()) {
            throw new ConfigException("client.meta", "is required unless client.mgmtd is given (the meta service is then asked of the manager)");
        }
        positive("client.io-timeout", ioTimeout);
        positive("client.meta-timeout", metaTimeout);
        positive("client.attempt-timeout", attemptTimeout);
        if (readahead.bytes() > DataSize.ofGiB(1).bytes()) {
            throw new ConfigException("client.readahead", "must be at most 1GiB, got " + readahead);
        }
        if (writeBuffer.bytes() > DataSize.ofMiB(256).bytes()) {
            throw new ConfigException("client.write-buffer", "must be at most 256MiB, got " + writeBuffer);
        }
        if (writeBuffer.bytes() > 0 && writeBufferTotal.bytes() < writeBuffer.bytes()) {
            throw new ConfigException("client.write-buffer-total", "must hold at least one write buffer (" + writeBuffer + "), got "
                    + writeBufferTotal);
        }
        inFlight = Map.copyOf(inFlight);
        if (job.isPresent() && !job.get().matches("[A-Za-z0-9._:-]{1,128}")) {
            throw new ConfigException("client.job", "must be 1 to 128 letters, digits, '.', '_', ':' or '-', got \"" + job.get() + "\"");
        }
        if (dentryTtl.isNegative()) {
            throw new ConfigException("client.dentry-ttl", "must not be negative");
        }
    }

    private static void positive(String key, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new ConfigException(key, "must be a positive duration, got " + d);
        }
    }

    /** {@code read-policy} when the config does not say: each chunk read from the replica its id picks. */
    public static final ReadPolicy DEFAULT_READ_POLICY = ReadPolicy.BY_CHUNK;

    /** Defaults with the given meta addresses and static routing (tests, tools). */
    public static ClientConfig of(List<InetSocketAddress> meta, RoutingInfo routing) {
        return new ClientConfig("client", meta, List.of(), Optional.of(routing), Duration.ofSeconds(30), Duration.ofSeconds(30),
                Duration.ofSeconds(5), DEFAULT_READ_POLICY, DataSize.ofMiB(16), DataSize.ofMiB(4), DataSize.ofMiB(256),
                Duration.ofSeconds(1), Optional.empty(), RpcOptions.DEFAULTS,
                StorageClientOptions.DEFAULT_IN_FLIGHT, Optional.empty(), Optional.empty());
    }

    /** Defaults with the given meta addresses and cluster manager peers. */
    public static ClientConfig ofManager(List<InetSocketAddress> meta, List<InetSocketAddress> mgmtd) {
        return new ClientConfig("client", meta, mgmtd, Optional.empty(), Duration.ofSeconds(30), Duration.ofSeconds(30),
                Duration.ofSeconds(5), DEFAULT_READ_POLICY, DataSize.ofMiB(16), DataSize.ofMiB(4), DataSize.ofMiB(256),
                Duration.ofSeconds(1), Optional.empty(), RpcOptions.DEFAULTS,
                StorageClientOptions.DEFAULT_IN_FLIGHT, Optional.empty(), Optional.empty());
    }

    /**
     * Reads {@code [client]}, {@code [routing]}, {@code [l1]} and {@code [rpc]} of {@code root}; the
     * caller rejects unknown keys of the whole file once it has read its own tables.
     */
    public static ClientConfig read(ConfigNode root) {
        ConfigNode c = root.section("client");
        String name = c.string("name", "client");
        List<InetSocketAddress> meta = addresses(c, "meta");
        List<InetSocketAddress> mgmtd = addresses(c, "mgmtd");
        Optional<RoutingInfo> routing = Optional.empty();
        if (root.has("routing")) {
            routing = Optional.of(StaticRoutingSource.fromConfig(root.section("routing")).current());
        }
        Duration io = c.duration("io-timeout", Duration.ofSeconds(30), Duration.ofMillis(10), Duration.ofHours(1));
        Duration metaTimeout = c.duration("meta-timeout", Duration.ofSeconds(30), Duration.ofMillis(10), Duration.ofHours(1));
        Duration attempt = c.duration("attempt-timeout", Duration.ofSeconds(5), Duration.ofMillis(10), Duration.ofHours(1));
        ReadPolicy policy = c.choice("read-policy", DEFAULT_READ_POLICY, ReadPolicy.class);
        DataSize readahead = c.size("readahead", DataSize.ofMiB(16), DataSize.ZERO, DataSize.ofGiB(1));
        DataSize wb = c.size("write-buffer", DataSize.ofMiB(4), DataSize.ZERO, DataSize.ofMiB(256));
        DataSize wbTotal = c.size("write-buffer-total", DataSize.ofMiB(256), DataSize.ZERO, DataSize.ofGiB(64));
        Duration dentry = c.duration("dentry-ttl", Duration.ofSeconds(1), Duration.ZERO, Duration.ofHours(1));
        Optional<String> job = Optional.ofNullable(c.string("job", null));
        Optional<QosClass> jobQos;
        try {
            jobQos = Optional.ofNullable(c.string("job-qos", null)).map(QosClass::parse);
        } catch (IllegalArgumentException e) {
            throw new ConfigException("client.job-qos", e.getMessage());
        }
        Optional<L1Config> l1 = root.has("l1") ? Optional.of(L1Config.read(root.section("l1"))) : Optional.empty();
        Map<QosClass, Long> inFlight = new EnumMap<>(QosClass.class);
        ConfigNode budgets = c.section("in-flight");
        for (QosClass q : QosClass.values()) {
            long def = StorageClientOptions.DEFAULT_IN_FLIGHT.getOrDefault(q, 0L);
            inFlight.put(q, budgets.size(q.policyName(), DataSize.ofBytes(def), DataSize.ZERO, DataSize.ofGiB(64)).bytes());
        }
        RpcOptions rpc;
        try {
            rpc = RpcConfig.read(root.section("rpc"));
        } catch (IllegalArgumentException e) {
            throw new ConfigException("rpc", e.getMessage());
        }
        return new ClientConfig(name, meta, mgmtd, routing, io, metaTimeout, attempt, policy, readahead, wb, wbTotal, dentry, l1, rpc, inFlight,
                job, jobQos);
    }

    private static List<InetSocketAddress> addresses(ConfigNode c, String key) {
        List<InetSocketAddress> out = new ArrayList<>();
        List<String> raw = c.strings(key, List.of());
        for (int i = 0; i < raw.size(); i++) {
            try {
                InetSocketAddress a = Addresses.parse(raw.get(i));
                out.add(new InetSocketAddress(a.getHostString(), a.getPort()));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(c.path() + "." + key + "[" + i + "]", e.getMessage());
            }
        }
        return out;
    }

    public ClientConfig withName(String n) {
        return new ClientConfig(n, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, inFlight, job, jobQos);
    }

    public ClientConfig withIoTimeout(Duration d) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, d, metaTimeout, attemptTimeout, readPolicy, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, inFlight, job, jobQos);
    }

    public ClientConfig withAttemptTimeout(Duration d) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, d, readPolicy, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, inFlight, job, jobQos);
    }

    public ClientConfig withReadahead(DataSize s) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, s,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, inFlight, job, jobQos);
    }

    public ClientConfig withWriteBuffer(DataSize perFile, DataSize total) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, readahead,
                perFile, total, dentryTtl, l1, rpc, inFlight, job, jobQos);
    }

    public ClientConfig withDentryTtl(Duration d) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, readahead,
                writeBuffer, writeBufferTotal, d, l1, rpc, inFlight, job, jobQos);
    }

    public ClientConfig withReadPolicy(ReadPolicy p) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, p, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, inFlight, job, jobQos);
    }

    public ClientConfig withL1(L1Config c) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, Optional.ofNullable(c), rpc, inFlight, job, jobQos);
    }

    public ClientConfig withInFlight(Map<QosClass, Long> limits) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, limits, job, jobQos);
    }

    public ClientConfig withJob(String j) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, inFlight, Optional.ofNullable(j), jobQos);
    }

    public ClientConfig withJobQos(QosClass q) {
        return new ClientConfig(name, meta, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, inFlight, job, Optional.ofNullable(q));
    }

    public ClientConfig withMeta(List<InetSocketAddress> m) {
        return new ClientConfig(name, m, mgmtd, staticRouting, ioTimeout, metaTimeout, attemptTimeout, readPolicy, readahead,
                writeBuffer, writeBufferTotal, dentryTtl, l1, rpc, inFlight, job, jobQos);
    }
}
