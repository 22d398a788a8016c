package io.strata.mgmtd;

import io.strata.placement.NodeAgent;
import io.strata.core.util.Eventually;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import io.strata.core.time.StrataClock;
import io.strata.core.util.Futures;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.routing.LocalState;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Storage agents against a real manager; a partitioned node fences itself before the manager expires its lease. */
class NodeAgentTest {
    static final Duration LEASE = Duration.ofSeconds(2);
    static final Duration T = Duration.ofSeconds(20);

    @TempDir
    Path dir;
    final List<AutoCloseable> closers = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closers.size() - 1; i >= 0; i--) {
            closers.get(i).close();
        }
    }

    <T extends AutoCloseable> T closing(T c) {
        closers.add(c);
        return c;
    }

    record Node(NodeContext ctx, NodeAgent agent, ManagerRoutingSource routing) {
    }

    Node node(int id, InetSocketAddress manager) {
        NodeContext ctx = closing(NodeContext.builder("storage-" + id).seed(id)
                .faults(new io.strata.core.fault.FaultInjector(id)).eventLoopThreads(1).blockingThreads(1).build());
        MgmtdClient client = closing(new MgmtdClient(ctx, List.of(manager)));
        ManagerRoutingSource routing = closing(ManagerRoutingSource.start(ctx, client, Duration.ofSeconds(5), Duration.ofSeconds(1)));
        NodeAgent agent = closing(NodeAgent.start(ctx, client, routing,
                new NodeInfo(NodeId.of(id), "127.0.0.1", 9200 + id, Map.of("rack", "r" + id)),
                List.of(TargetId.of(id * 100L + 1))));
        return new Node(ctx, agent, routing);
    }

    @Test
    void aPartitionedNodeFencesBeforeItsLeaseExpiresAndResyncsAfter() throws Exception {
        NodeContext mctx = closing(NodeContext.builder("mgmtd").eventLoopThreads(1).build());
        MgmtdServer m = closing(MgmtdServer.start(mctx, MgmtdConfig.single(dir, loopback(0), loopback(0), LEASE)
                .withAutoTableReplicas(3).withLeaseCheck(Duration.ofMillis(20))));
        Eventually.await("leader", T, m::isLeader);
        List<Node> nodes = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            nodes.add(node(i, m.rpcAddress()));
        }
        for (Node n : nodes) {
            Futures.join(n.agent().registered(), T);
        }
        Eventually.await("chain table and routing pushed to every node", T, () -> nodes.stream()
                .allMatch(n -> n.routing().current().latestTable(3).isPresent()));
        Eventually.await("serving targets reported up to date", T, () -> nodes.stream()
                .allMatch(n -> n.agent().localState(TargetId.of(n.agent().node().id().value() * 100L + 1)) == LocalState.UP_TO_DATE));
        assertThat(nodes).allSatisfy(n -> assertThat(n.agent().mayServeWrites()).isTrue());

        Node victim = nodes.get(2);
        TargetId vt = TargetId.of(301);
        AtomicLong fencedAt = new AtomicLong();
        AtomicLong managerLiveAtFence = new AtomicLong(-1);
        victim.agent().onFenceChange(f -> {
            if (f && fencedAt.get() == 0) {
                fencedAt.set(System.nanoTime());
                managerLiveAtFence.set(m.view().nodes().get(NodeId.of(3)).live() ? 1 : 0);
            }
        });
        AtomicLong expiredAt = new AtomicLong();
        long before = m.routing().version();
        // partition: every heartbeat from node 3 to the manager is dropped
        var rule = victim.ctx().faults().arm(FaultPoint.RPC_SEND, new Fault.Drop()).when(s -> s.message().equals("Heartbeat"));
        long partitionedAt = System.nanoTime();
        Thread watcher = new Thread(() -> {
            while (expiredAt.get() == 0) {
                if (!m.view().nodes().get(NodeId.of(3)).live()) {
                    expiredAt.set(System.nanoTime());
                }
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        watcher.setDaemon(true);
        watcher.start();
        Eventually.await("node 3 fenced", T, victim.agent()::fenced);
        Eventually.await("manager expires node 3", T, () -> expiredAt.get() != 0);
        assertThat(managerLiveAtFence.get()).as("the manager still held node 3's lease when it fenced").isEqualTo(1);
        assertThat(fencedAt.get()).isLessThan(expiredAt.get());
        double fenceS = (fencedAt.get() - partitionedAt) / 1e9;
        double expireS = (expiredAt.get() - partitionedAt) / 1e9;
        System.out.printf("fencing: node fenced %.2f s after the partition, manager expired it after %.2f s (lease %s)%n",
                fenceS, expireS, LEASE);
        assertThat(fenceS).isLessThan(expireS);
        // the other nodes keep their gate open and see node 3's target at the tail, offline
        RoutingInfo r = Eventually.value("routing without node 3", T, () -> {
            RoutingInfo x = nodes.get(0).routing().current();
            return x.target(vt).state() == TargetState.OFFLINE ? x : null;
        });
        assertThat(r.version()).isGreaterThan(before);
        ChainInfo c = r.chains().values().stream().filter(ch -> ch.targets().contains(vt)).findFirst().orElseThrow();
        assertThat(c.targets().get(c.targets().size() - 1)).isEqualTo(vt);
        assertThat(nodes.get(0).agent().mayServeWrites()).isTrue();
        assertThat(victim.agent().mayServeWrites()).isFalse();

        // the partition heals: node 3 learns its lease expired, registers again and resyncs
        victim.ctx().faults().disarm(rule);
        Eventually.await("node 3 back and syncing", T, () -> victim.agent().mayServeWrites()
                && m.routing().target(vt).state() == TargetState.SYNCING);
        assertThat(victim.agent().localState(vt)).isEqualTo(LocalState.ONLINE);
        Eventually.await("node 3 sees itself syncing", T, () -> victim.agent().publishedState(vt) == TargetState.SYNCING);
        // its resync finishes under the current chain version: it serves again
        long cv = victim.routing().current().chains().values().stream().filter(ch -> ch.targets().contains(vt)).findFirst()
                .orElseThrow().version();
        victim.agent().markSynced(vt, cv);
        Eventually.await("node 3 serving", T, () -> m.routing().target(vt).state() == TargetState.SERVING);
        Eventually.await("node 3 reports up to date", T, () -> victim.agent().localState(vt) == LocalState.UP_TO_DATE);
    }

    @Test
    void routingIsPulledOnRefreshAndPushedOnChange() throws Exception {
        NodeContext mctx = closing(NodeContext.builder("mgmtd").eventLoopThreads(1).build());
        MgmtdServer m = closing(MgmtdServer.start(mctx, MgmtdConfig.single(dir, loopback(0), loopback(0), Duration.ofSeconds(30))));
        Eventually.await("leader", T, m::isLeader);
        NodeContext ctx = closing(NodeContext.builder("client").eventLoopThreads(1).build());
        MgmtdClient client = closing(new MgmtdClient(ctx, List.of(m.rpcAddress())));
        ManagerRoutingSource src = closing(ManagerRoutingSource.start(ctx, client, Duration.ofSeconds(10), Duration.ofSeconds(2)));
        List<Long> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        src.onChange(r -> seen.add(r.version()));
        Node n = node(1, m.rpcAddress());
        Futures.join(n.agent().registered(), T);
        long v = m.routing().version();
        // pushed: the long poll returns as soon as the change is applied (well within its 10 s wait)
        long t0 = System.nanoTime();
        Eventually.await("pushed", T, () -> src.current().version() == v);
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(5);
        // pulled: a stale-version rejection refreshes to the newest
        RoutingInfo r = Futures.join(src.refreshAsync(v - 1), T);
        assertThat(r.version()).isEqualTo(v);
        assertThat(Futures.join(src.refreshAsync(v), T).version()).isEqualTo(v);
        assertThat(seen).isSorted().doesNotHaveDuplicates().contains(v);
    }

    @Test
    void theManagerTellsL2AgentsHowManyOfThemReportADrainBacklog() throws Exception {
        NodeContext mctx = closing(NodeContext.builder("mgmtd").eventLoopThreads(1).build());
        MgmtdServer m = closing(MgmtdServer.start(mctx, MgmtdConfig.single(dir, loopback(0), loopback(0), LEASE)
                .withLeaseCheck(Duration.ofMillis(20))));
        Eventually.await("leader", T, m::isLeader);
        List<NodeAgent> agents = new ArrayList<>();
        List<AtomicLong> backlogs = new ArrayList<>();
        for (int id = 11; id <= 13; id++) {
            NodeContext ctx = closing(NodeContext.builder("l2-" + id).seed(id).eventLoopThreads(1).blockingThreads(1).build());
            MgmtdClient client = closing(new MgmtdClient(ctx, List.of(m.rpcAddress())));
            ManagerRoutingSource routing = closing(ManagerRoutingSource.start(ctx, client, Duration.ofSeconds(5), Duration.ofSeconds(1)));
            NodeAgent a = closing(NodeAgent.start(ctx, client, routing, new NodeInfo(NodeId.of(id), "127.0.0.1", 9300 + id,
                    Map.of("host", "h" + id)), io.strata.protocol.mgmtd.NodeRole.L2_AGENT, List.of()));
            AtomicLong backlog = new AtomicLong();
            a.reportDrainBacklog(backlog::get);
            agents.add(a);
            backlogs.add(backlog);
            Futures.join(a.registered(), T);
        }
        // what each agent learns at its lease answers: the draining agents the manager counts, and
        // whether its own heartbeat was counted among them
        java.util.function.Supplier<List<String>> seen = () -> agents.stream()
                .map(a -> a.drainCount().draining() + (a.drainCount().counted() ? "+me" : "")).toList();
        awaitSeen("nobody drains", seen, List.of("0", "0", "0"));
        backlogs.get(0).set(64 << 20);
        awaitSeen("11 drains alone", seen, List.of("1+me", "1", "1"));
        backlogs.get(1).set(1 << 20);
        awaitSeen("11 and 12 drain", seen, List.of("2+me", "2+me", "2"));
        backlogs.get(0).set(0);
        awaitSeen("12 drains alone", seen, List.of("1", "1+me", "1"));
    }

    /** Waits for {@code seen} to give {@code expected}; when it does not in time, fails showing what it gives. */
    private static void awaitSeen(String what, java.util.function.Supplier<List<String>> seen, List<String> expected) {
        try {
            Eventually.await(what, T, () -> seen.get().equals(expected));
        } catch (io.strata.core.StrataException timedOut) {
            assertThat(seen.get()).as(what).isEqualTo(expected);
        }
    }

    static InetSocketAddress loopback(int port) {
        return InetSocketAddress.createUnresolved("127.0.0.1", port);
    }
}
