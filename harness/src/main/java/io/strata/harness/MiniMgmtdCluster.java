package io.strata.harness;

import io.strata.core.NodeContext;
import io.strata.core.fault.FaultInjector;
import io.strata.core.rpc.RpcOptions;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.mgmtd.MgmtdConfig;
import io.strata.mgmtd.MgmtdServer;
import io.strata.core.util.Eventually;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
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
 */
public final class MiniMgmtdCluster implements AutoCloseable {
    private final List<MgmtdConfig> configs;
    private final long seed;
    private final MgmtdServer[] servers;
    private final NodeContext[] contexts;

    private MiniMgmtdCluster(List<MgmtdConfig> configs, long seed) {
        this.configs = configs;
        this.seed = seed;
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
        contexts[i] = NodeContext.builder("mgmtd-" + c.id()).seed(s).faults(new FaultInjector(s))
                .eventLoopThreads(1).blockingThreads(2).schedulerThreads(2).build();
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

        /** Starts every peer and waits for a leader. */
        public MiniMgmtdCluster start() {
            List<MgmtdConfig.Peer> ps = new ArrayList<>();
            for (int i = 1; i <= peers; i++) {
                ps.add(new MgmtdConfig.Peer("m" + i, loopback(Ports.free()), loopback(Ports.free())));
            }
            List<MgmtdConfig> cfgs = new ArrayList<>();
            for (MgmtdConfig.Peer p : ps) {
                cfgs.add(new MgmtdConfig(p.id(), ps, dir.resolve(p.id()), lease, lease.dividedBy(5),
                        Duration.ofMillis(Math.max(10, lease.toMillis() / 40)), election, snapshotEvery, autoTable, RpcOptions.DEFAULTS));
            }
            return Lifecycle.startOrClose(new MiniMgmtdCluster(cfgs, seed), m -> {
                for (int i = 0; i < peers; i++) {
                    m.start(i);
                }
                m.awaitLeader(Duration.ofSeconds(30));
            });
        }

        private static InetSocketAddress loopback(int port) {
            return InetSocketAddress.createUnresolved("127.0.0.1", port);
        }
    }
}
