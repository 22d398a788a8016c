package io.strata.harness;

import io.strata.config.TlsConfig;
import io.strata.core.NodeContext;
import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.TlsContext;
import io.strata.core.tls.TlsEngine;
import io.strata.store.PrivateFiles;
import io.strata.core.fault.FaultInjector;
import io.strata.core.rpc.RpcOptions;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.mgmtd.MgmtdConfig;
import io.strata.mgmtd.MgmtdServer;
import io.strata.core.util.Eventually;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * A cluster manager of 1, 3 or 5 real Ratis peers in this JVM, on loopback, for tests of
 * anything that talks to the manager (storage nodes, clients). Each peer has its own
 * {@link NodeContext} (seeded fault injector) and data directory under {@code dir}, so a peer
 * can be stopped and restarted from its disk.
 *
 * <pre>{@code
 * try (MiniMgmtdCluster m = MiniMgmtdCluster.builder(dir).peers(1).lease(Duration.ofSeconds(2)).autoTable(3).start()) {
 *     MgmtdClient c = new MgmtdClient(ctx, m.addresses());
 *     ... NodeAgent.start(ctx, c, ManagerRoutingSource.start(ctx, c), nodeInfo, targets) ...
 * }
 * }</pre>
 *
 * <p>With {@link Builder#tls(CertificateAuthority)} every peer gets a certificate of that CA (its
 * {@code [tls]} files under its data directory) and speaks mutual TLS on both its RPC and its
 * Ratis port; a client takes {@link #clientTls(String)}.
 */
public final class MiniMgmtdCluster implements AutoCloseable {
    private final List<MgmtdConfig> configs;
    private final long seed;
    private final MgmtdServer[] servers;
    private final NodeContext[] contexts;
    /** The CA the peers' certificates come from; null: plaintext. */
    private final CertificateAuthority ca;

    private MiniMgmtdCluster(List<MgmtdConfig> configs, long seed, CertificateAuthority ca) {
        this.configs = configs;
        this.seed = seed;
        this.ca = ca;
        this.servers = new MgmtdServer[configs.size()];
        this.contexts = new NodeContext[configs.size()];
    }

    public static Builder builder(Path dir) {
        return new Builder(dir);
    }

    /** The peers' RPC addresses (what {@link MgmtdClient} takes). */
    public List<InetSocketAddress> addresses() {
        List<InetSocketAddress> out = new ArrayList<>();
        for (MgmtdConfig c : configs) {
            out.add(new InetSocketAddress(c.self().rpc().getHostString(), c.self().rpc().getPort()));
        }
        return out;
    }

    /** "host:port,host:port" for command lines and configs. */
    public String addressList() {
        return String.join(",", addresses().stream().map(a -> a.getHostString() + ":" + a.getPort()).toList());
    }

    /** A client's side of mutual TLS with the peers: a certificate for {@code name} from the cluster's CA (TLS clusters only). */
    public TlsContext clientTls(String name) {
        if (ca == null) {
            throw new IllegalStateException("this cluster manager runs without TLS");
        }
        CertificateAuthority.Issued i = ca.issue(name, CertificateAuthority.localHosts(), Instant.now(), Duration.ofDays(1));
        try {
            return TlsContext.of(List.of(i.certificate()), i.key(), List.of(ca.certificate()), TlsEngine.JDK);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int size() {
        return configs.size();
    }

    /** Peer {@code i} (0-based), or null while stopped. */
    public MgmtdServer peer(int i) {
        return servers[i];
    }

    /** The peer's context (its clock and fault injector), or null while stopped. */
    public NodeContext context(int i) {
        return contexts[i];
    }

    /** Waits for a leader and returns its index. */
    public int awaitLeader(Duration timeout) {
        int[] found = {-1};
        Eventually.await("a cluster manager leader", timeout, () -> {
            for (int i = 0; i < servers.length; i++) {
                if (servers[i] != null && servers[i].isLeader()) {
                    found[0] = i;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    public MgmtdServer leader(Duration timeout) {
        return servers[awaitLeader(timeout)];
    }

    /** Stops peer {@code i} (its state stays on disk). */
    public void stop(int i) {
        if (servers[i] != null) {
            servers[i].close();
            servers[i] = null;
        }
        if (contexts[i] != null) {
            contexts[i].close();
            contexts[i] = null;
        }
    }

    /** Starts (or restarts, from its disk) peer {@code i}. */
    public MgmtdServer start(int i) {
        if (servers[i] != null) {
            return servers[i];
        }
        MgmtdConfig c = configs.get(i);
        long s = seed ^ (31L * (i + 1));
        contexts[i] = c.tls().applyTo(NodeContext.builder("mgmtd-" + c.id()).seed(s).faults(new FaultInjector(s))
                .eventLoopThreads(1).blockingThreads(2).schedulerThreads(2)).build();
        try {
            servers[i] = MgmtdServer.start(contexts[i], c);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return servers[i];
    }

    @Override
    public void close() {
        for (int i = 0; i < servers.length; i++) {
            stop(i);
        }
    }

    public static final class Builder {
        private final Path dir;
        private int peers = 1;
        private Duration lease = Duration.ofSeconds(10);
        private Duration election = Duration.ofMillis(700);
        private int autoTable;
        private long snapshotEvery = 1000;
        private long seed = 1;
        private CertificateAuthority ca;

        private Builder(Path dir) {
            this.dir = dir;
        }

        public Builder peers(int n) {
            this.peers = n;
            return this;
        }

        public Builder lease(Duration d) {
            this.lease = d;
            return this;
        }

        public Builder electionTimeout(Duration d) {
            this.election = d;
            return this;
        }

        /** Create chain table 1 with {@code replicas} once that many storage nodes registered (0 = never). */
        public Builder autoTable(int replicas) {
            this.autoTable = replicas;
            return this;
        }

        public Builder snapshotEvery(long entries) {
            this.snapshotEvery = entries;
            return this;
        }

        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Mutual TLS on every peer's RPC and Ratis ports, with certificates {@code ca} issues (null: plaintext). */
        public Builder tls(CertificateAuthority ca) {
            this.ca = ca;
            return this;
        }

        /** Starts every peer and waits for a leader. */
        public MiniMgmtdCluster start() {
            List<MgmtdConfig.Peer> ps = new ArrayList<>();
            for (int i = 1; i <= peers; i++) {
                ps.add(new MgmtdConfig.Peer("m" + i, loopback(Ports.free()), loopback(Ports.free())));
            }
            List<MgmtdConfig> cfgs = new ArrayList<>();
            for (MgmtdConfig.Peer p : ps) {
                cfgs.add(new MgmtdConfig(p.id(), ps, dir.resolve(p.id()), lease, lease.dividedBy(5),
                        Duration.ofMillis(Math.max(10, lease.toMillis() / 40)), election, snapshotEvery, autoTable, RpcOptions.DEFAULTS,
                        ca == null ? TlsConfig.OFF : tlsFiles(dir.resolve(p.id()), p.id())));
            }
            return Lifecycle.startOrClose(new MiniMgmtdCluster(cfgs, seed, ca), m -> {
                for (int i = 0; i < peers; i++) {
                    m.start(i);
                }
                m.awaitLeader(Duration.ofSeconds(30));
            });
        }

        /** The peer's {@code [tls]} files under its data directory: certificate, key (0600), the CA's certificate. */
        private TlsConfig tlsFiles(Path data, String id) {
            try {
                Path d = PrivateFiles.createDirectories(PrivateFiles.createDirectories(data).resolve("tls"));
                CertificateAuthority.Issued i = ca.issue("mgmtd-" + id, CertificateAuthority.localHosts(), Instant.now(), Duration.ofDays(1));
                Path key = d.resolve(id + ".key");
                Files.deleteIfExists(key);
                Files.writeString(PrivateFiles.createFile(key), i.keyPem());
                Path cert = Files.writeString(d.resolve(id + ".pem"), i.certificatePem());
                Path caFile = Files.writeString(d.resolve("ca.pem"), ca.certificatePem());
                return new TlsConfig(true, cert, key, caFile, TlsEngine.JDK);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private static InetSocketAddress loopback(int port) {
            return InetSocketAddress.createUnresolved("127.0.0.1", port);
        }
    }
}
