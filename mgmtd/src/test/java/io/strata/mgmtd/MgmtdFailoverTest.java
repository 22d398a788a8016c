package io.strata.mgmtd;

import io.strata.placement.ManagerRoutingSource;
import io.strata.core.util.Eventually;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.mgmtd.StoredHint;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.time.StrataClock;
import io.strata.core.util.Futures;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.routing.LocalState;
import io.strata.protocol.mgmtd.TargetReport;
import io.strata.protocol.mgmtd.MgmtdMessage.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real 3-peer Ratis group in this JVM loses its leader while nodes heartbeat and chains
 * change; a new leader takes over and every acknowledged change is there.
 */
class MgmtdFailoverTest {
    static final Duration T = Duration.ofSeconds(30);

    @TempDir
    Path dir;
    final List<MgmtdServer> servers = new ArrayList<>();
    final List<NodeContext> contexts = new ArrayList<>();

    @AfterEach
    void tearDown() {
        servers.forEach(MgmtdServer::close);
        contexts.forEach(NodeContext::close);
    }

    MgmtdServer leader() {
        return servers.stream().filter(MgmtdServer::isLeader).findFirst().orElse(null);
    }

    @Test
    void aNewLeaderTakesOverWithEveryCommittedChange() throws Exception {
        List<MgmtdConfig> cfgs = Managers.group(dir, 3, Duration.ofSeconds(30));
        for (MgmtdConfig c : cfgs) {
            NodeContext ctx = Managers.ctx(c.id(), StrataClock.system(), 7);
            contexts.add(ctx);
            servers.add(MgmtdServer.start(ctx, c));
        }
        MgmtdServer first = Eventually.value("a leader", T, this::leader);
        NodeContext cctx = Managers.ctx("client", StrataClock.system(), 8);
        contexts.add(cctx);
        // the client knows a follower first: its first call is redirected
        List<java.net.InetSocketAddress> addrs = new ArrayList<>();
        servers.stream().filter(s -> s != first).forEach(s -> addrs.add(s.rpcAddress()));
        addrs.add(first.rpcAddress());
        MgmtdClient client = new MgmtdClient(cctx, addrs);
        ManagerRoutingSource routing = ManagerRoutingSource.start(cctx, client, Duration.ofSeconds(2), Duration.ofSeconds(2));
        List<Long> pushed = new CopyOnWriteArrayList<>();
        routing.onChange(r -> pushed.add(r.version()));

        for (int n = 1; n <= 3; n++) {
            register(client, n, n);
        }
        assertThat(client.leaderGuess()).isEqualTo(first.rpcAddress());
        ChainTableCreated t1 = Futures.join(client.call(new CreateChainTable(1, 3), ChainTableCreated.class, T, T), T);
        assertThat(t1.version()).isEqualTo(1);

        // heartbeats and chain changes keep flowing while the leader dies
        Map<Integer, Long> incarnations = new ConcurrentHashMap<>(Map.of(1, 1L, 2, 2L, 3, 3L));
        List<String> acked = new CopyOnWriteArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        Thread load = new Thread(() -> {
            int round = 0;
            while (!stop.get()) {
                round++;
                int n = 1 + round % 3;
                try {
                    if (round % 4 == 0) {
                        // a chain change: node n restarts (new incarnation), its targets resync
                        long inc = 100L * round + n;
                        register(client, n, inc);
                        incarnations.put(n, inc);
                        acked.add("register node-" + n + " incarnation " + inc);
                    } else if (round % 4 == 2) {
                        // a new storage node joins: one more committed change
                        int extra = 10 + round;
                        register(client, extra, extra);
                        acked.add("register node-" + extra + " incarnation " + extra);
                    } else {
                        Futures.join(client.call(new Heartbeat(NodeId.of(n), incarnations.get(n), List.of()), LeaseGranted.class,
                                Duration.ofSeconds(3), T), T);
                    }
                } catch (RuntimeException e) {
                    // an unacknowledged change may or may not be committed; only acknowledged ones are checked
                }
            }
        }, "load");
        load.start();
        Eventually.await("some changes before the kill", T, () -> acked.size() >= 3);
        long killedAt = System.nanoTime();
        first.close();
        MgmtdServer second = Eventually.value("a new leader", T, () -> {
            MgmtdServer l = leader();
            return l != first ? l : null;
        });
        double failoverS = (System.nanoTime() - killedAt) / 1e9;
        int ackedAtFailover = acked.size();
        Eventually.await("changes after the failover", T, () -> acked.size() >= ackedAtFailover + 3);
        stop.set(true);
        load.join();
        System.out.printf("mgmtd failover: new leader %s after %.2f s; %d acknowledged changes%n", second.peerId(), failoverS, acked.size());

        // every acknowledged change is in the new leader's state
        ClusterState.View v = second.view();
        for (String a : acked) {
            String[] w = a.split(" ");
            NodeId node = NodeId.of(Integer.parseInt(w[1].substring("node-".length())));
            long inc = Long.parseLong(w[3]);
            ClusterState.NodeMeta m = v.nodes().get(node);
            assertThat(m).as(a).isNotNull();
            if (node.value() > 3) {
                assertThat(m.incarnation()).as(a).isEqualTo(inc);
            }
        }
        for (int n = 1; n <= 3; n++) {
            assertThat(v.nodes().get(NodeId.of(n)).incarnation()).isEqualTo(incarnations.get(n));
        }
        assertThat(v.routing().table(1, 1)).isPresent();
        // the surviving follower applied the same state
        MgmtdServer other = servers.stream().filter(s -> s != first && s != second).findFirst().orElseThrow();
        Eventually.await("follower caught up", T, () -> other.view().equals(second.view()));
        // the routing source followed the leader change and kept receiving versions, in order
        Eventually.await("routing pushed after failover", T, () -> routing.current().version() == second.routing().version());
        assertThat(pushed).isSorted().doesNotHaveDuplicates();
        // and the new leader keeps completing resyncs: report every syncing target up to date
        RoutingInfo r = second.routing();
        for (int n = 1; n <= 3; n++) {
            List<TargetReport> reports = new ArrayList<>();
            for (var t : r.targets().values()) {
                if (t.node().value() == n && t.state() == TargetState.SYNCING) {
                    long cv = r.chains().values().stream().filter(c -> c.targets().contains(t.id())).findFirst().orElseThrow().version();
                    reports.add(new TargetReport(t.id(), LocalState.UP_TO_DATE, cv));
                }
            }
            Futures.join(client.call(new Heartbeat(NodeId.of(n), incarnations.get(n), reports), LeaseGranted.class, T, T), T);
        }
        routing.close();
        client.close();
    }

    @Test
    void schedulerHintsSurviveALeaderFailover() throws Exception {
        List<MgmtdConfig> cfgs = Managers.group(dir, 3, Duration.ofSeconds(30));
        for (MgmtdConfig c : cfgs) {
            NodeContext ctx = Managers.ctx(c.id(), StrataClock.system(), 7);
            contexts.add(ctx);
            servers.add(MgmtdServer.start(ctx, c));
        }
        MgmtdServer first = Eventually.value("a leader", T, this::leader);
        NodeContext cctx = Managers.ctx("client", StrataClock.system(), 8);
        contexts.add(cctx);
        MgmtdClient client = new MgmtdClient(cctx, servers.stream().map(MgmtdServer::rpcAddress).toList());
        List<StoredHint> put = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            put.add(Futures.join(client.putHintAsync(0, 0, ("{\"job\":\"j" + i + "\"}").getBytes(StandardCharsets.UTF_8)), T));
        }
        StoredHint replaced = Futures.join(client.putHintAsync(5, 1, "{\"job\":\"j4\",\"progress\":1}".getBytes(StandardCharsets.UTF_8)), T);
        put.set(4, replaced);
        Futures.join(client.deleteHintAsync(20, 1), T);
        put.remove(19);

        first.close();
        MgmtdServer second = Eventually.value("a new leader", T, () -> {
            MgmtdServer l = leader();
            return l != first ? l : null;
        });
        assertThat(second.hints()).isEqualTo(put);
        assertThat(Futures.join(client.hintsAsync(), T)).isEqualTo(put);
        assertThat(client.leaderGuess()).isEqualTo(second.rpcAddress());
        // the new leader goes on: the next id follows the deleted one, versions go on counting
        StoredHint next = Futures.join(client.putHintAsync(0, 0, "{}".getBytes(StandardCharsets.UTF_8)), T);
        assertThat(next.id()).isEqualTo(21);
        assertThat(Futures.join(client.putHintAsync(5, 2, "{}".getBytes(StandardCharsets.UTF_8)), T).version()).isEqualTo(3);
        MgmtdServer other = servers.stream().filter(s -> s != first && s != second).findFirst().orElseThrow();
        Eventually.await("follower caught up", T, () -> other.hints().equals(second.hints()));
        client.close();
    }

    static void register(MgmtdClient client, int n, long incarnation) {
        NodeInfo node = new NodeInfo(NodeId.of(n), "127.0.0.1", 9000 + n, Map.of("rack", "r" + n));
        Futures.join(client.call(new RegisterNode(node, NodeRole.STORAGE, incarnation,
                List.of(TargetId.of(n * 100L + 1))), LeaseGranted.class, Duration.ofSeconds(3), T), T);
    }
}
