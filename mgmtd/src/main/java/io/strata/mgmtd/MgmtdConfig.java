package io.strata.mgmtd;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.config.TlsConfig;
import io.strata.core.rpc.RpcOptions;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Settings of one cluster-manager peer. TOML ({@code strata mgmtd --config FILE}), next to the
 * usual {@code [node]} and {@code [rpc]} tables ({@code node.listen} is this peer's RPC address
 * when no peer list is given):
 * <pre>
 * [mgmtd]
 * id = "m1"                    # this peer's id in the Ratis group
 * raft = "127.0.0.1:9870"      # Ratis (gRPC) address of this peer when [[mgmtd.peers]] is absent
 * lease = "20s"                # a node that has not heartbeat for this long loses its targets
 * heartbeat = "4s"             # interval asked of nodes (default lease / 5)
 * lease-check = "250ms"        # how often the leader looks for expired leases
 * election-timeout = "1s"      # Ratis leader election timeout (min; max is twice it)
 * snapshot-every = 1000        # log entries between snapshots
 * auto-table-replicas = 3      # create chain table 1 once enough storage nodes joined (0 = never)
 * [[mgmtd.peers]]              # 1, 3 or 5 peers, identical on every peer
 * id = "m1"
 * raft = "127.0.0.1:9870"
 * rpc = "127.0.0.1:9871"
 * </pre>
 * The {@code [tls]} table (see {@link TlsConfig}) protects the Ratis port as well as the RPC
 * one: with it, the peers speak mutual TLS with each other using the same certificate, key and
 * CA, and refuse any peer whose certificate the cluster CA did not sign.
 */
public record MgmtdConfig(String id, List<Peer> peers, Path data, Duration lease, Duration heartbeat, Duration leaseCheck,
                          Duration electionTimeout, long snapshotEvery, int autoTableReplicas, RpcOptions rpc, TlsConfig tls) {

    /** A peer whose Ratis port is plaintext. */
    public MgmtdConfig(String id, List<Peer> peers, Path data, Duration lease, Duration heartbeat, Duration leaseCheck,
                       Duration electionTimeout, long snapshotEvery, int autoTableReplicas, RpcOptions rpc) {
        this(id, peers, data, lease, heartbeat, leaseCheck, electionTimeout, snapshotEvery, autoTableReplicas, rpc, TlsConfig.OFF);
    }

    /** One peer of the manager group: its Ratis address and its Strata RPC address. */
    public record Peer(String id, InetSocketAddress raft, InetSocketAddress rpc) {
        public Peer {
            if (id == null || !id.matches("[A-Za-z0-9_-]{1,64}")) {
                throw new IllegalArgumentException("peer id must be 1-64 letters, digits, '-' or '_', got " + id);
            }
        }

        public String rpcHostPort() {
            return rpc.getHostString() + ":" + rpc.getPort();
        }
    }

    public MgmtdConfig {
        peers = List.copyOf(peers);
        if (tls == null) {
            throw new IllegalArgumentException("mgmtd: tls is required (TlsConfig.OFF for plaintext)");
        }
        if (peers.size() != 1 && peers.size() != 3 && peers.size() != 5) {
            throw new IllegalArgumentException("mgmtd.peers: 1, 3 or 5 peers, got " + peers.size());
        }
        Set<String> ids = new HashSet<>();
        for (Peer p : peers) {
            if (!ids.add(p.id())) {
                throw new IllegalArgumentException("mgmtd.peers: peer id " + p.id() + " appears twice");
            }
        }
        if (!ids.contains(id)) {
            throw new IllegalArgumentException("mgmtd.id: " + id + " is not one of the peers " + ids);
        }
        if (heartbeat.compareTo(lease.dividedBy(3)) > 0) {
            throw new IllegalArgumentException("mgmtd.heartbeat (" + heartbeat + ") must be at most a third of mgmtd.lease (" + lease + ")");
        }
        if (autoTableReplicas < 0 || autoTableReplicas > 5) {
            throw new IllegalArgumentException("mgmtd.auto-table-replicas must be 0..5, got " + autoTableReplicas);
        }
    }

    /** This peer. */
    public Peer self() {
        return peers.stream().filter(p -> p.id().equals(id)).findFirst().orElseThrow();
    }

    /** A single-peer manager (the embedded default and most tests). */
    public static MgmtdConfig single(Path data, InetSocketAddress raft, InetSocketAddress rpc, Duration lease) {
        return new MgmtdConfig("m1", List.of(new Peer("m1", raft, rpc)), data, lease, lease.dividedBy(5),
                Duration.ofMillis(Math.max(10, lease.toMillis() / 40)), Duration.ofSeconds(1), 1000, 0, RpcOptions.DEFAULTS);
    }

    public MgmtdConfig withAutoTableReplicas(int r) {
        return new MgmtdConfig(id, peers, data, lease, heartbeat, leaseCheck, electionTimeout, snapshotEvery, r, rpc, tls);
    }

    public MgmtdConfig withSnapshotEvery(long n) {
        return new MgmtdConfig(id, peers, data, lease, heartbeat, leaseCheck, electionTimeout, n, autoTableReplicas, rpc, tls);
    }

    public MgmtdConfig withElectionTimeout(Duration d) {
        return new MgmtdConfig(id, peers, data, lease, heartbeat, leaseCheck, d, snapshotEvery, autoTableReplicas, rpc, tls);
    }

    public MgmtdConfig withLeaseCheck(Duration d) {
        return new MgmtdConfig(id, peers, data, lease, heartbeat, d, electionTimeout, snapshotEvery, autoTableReplicas, rpc, tls);
    }

    /** This peer with mutual TLS on its Ratis port ({@link TlsConfig#OFF}: plaintext). */
    public MgmtdConfig withTls(TlsConfig t) {
        return new MgmtdConfig(id, peers, data, lease, heartbeat, leaseCheck, electionTimeout, snapshotEvery, autoTableReplicas, rpc, t);
    }

    /** Reads {@code [mgmtd]} and {@code [tls]}; {@code listen} and {@code data} come from {@code [node]}. */
    public static MgmtdConfig read(ConfigNode root, InetSocketAddress listen, Path data, RpcOptions rpc) {
        ConfigNode m = root.section("mgmtd");
        String id = m.string("id", "m1");
        Duration lease = m.duration("lease", Duration.ofSeconds(20), Duration.ofMillis(100), Duration.ofHours(1));
        Duration heartbeat = m.duration("heartbeat", lease.dividedBy(5), Duration.ofMillis(10), lease);
        Duration check = m.duration("lease-check", Duration.ofMillis(Math.max(10, Math.min(250, lease.toMillis() / 20))),
                Duration.ofMillis(1), lease);
        Duration election = m.duration("election-timeout", Duration.ofSeconds(1), Duration.ofMillis(100), Duration.ofMinutes(1));
        long snapshotEvery = m.integer("snapshot-every", 1000L, 1L, 1L << 40);
        int auto = m.integer("auto-table-replicas", 0, 0, 5);
        List<Peer> peers = new ArrayList<>();
        for (ConfigNode p : m.sections("peers")) {
            try {
                peers.add(new Peer(p.requireString("id"),
                        p.address("raft").orElseThrow(() -> new ConfigException(p.path() + ".raft", "is required")),
                        p.address("rpc").orElseThrow(() -> new ConfigException(p.path() + ".rpc", "is required"))));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(p.path(), e.getMessage());
            }
        }
        if (peers.isEmpty()) {
            InetSocketAddress raft = m.address("raft").orElse(InetSocketAddress.createUnresolved("127.0.0.1", 0));
            peers.add(new Peer(id, raft, listen));
        }
        try {
            return new MgmtdConfig(id, peers, data, lease, heartbeat, check, election, snapshotEvery, auto, rpc, TlsConfig.read(root));
        } catch (IllegalArgumentException e) {
            throw new ConfigException("mgmtd", e.getMessage());
        }
    }
}
