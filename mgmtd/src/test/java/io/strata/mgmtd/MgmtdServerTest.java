package io.strata.mgmtd;

import io.strata.core.util.Eventually;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.NodeRole;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.ChainId;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.time.ManualClock;
import io.strata.core.util.Futures;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.routing.LocalState;
import io.strata.protocol.mgmtd.TargetReport;
import io.strata.protocol.mgmtd.MgmtdMessage.*;
import io.strata.store.PrivateFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One manager peer on a manual clock: registration, heartbeats, lease expiry, tables, restart from disk. */
class MgmtdServerTest {
    static final Duration LEASE = Duration.ofSeconds(10);
    static final Duration T = Duration.ofSeconds(10);

    @TempDir
    Path dir;
    final ManualClock clock = new ManualClock();
    final List<AutoCloseable> closers = new ArrayList<>();
    NodeContext ctx;
    MgmtdServer server;
    MgmtdClient client;

    MgmtdServer start(MgmtdConfig cfg) throws Exception {
        server = MgmtdServer.start(ctx, cfg);
        Eventually.await("leader", Duration.ofSeconds(20), server::isLeader);
        return server;
    }

    void setUp(int autoTable, long snapshotEvery) throws Exception {
        ctx = Managers.ctx("mgmtd", clock, 1);
        MgmtdConfig cfg = MgmtdConfig.single(dir.resolve("m1"), Managers.loopback(0), Managers.loopback(0), LEASE)
                .withAutoTableReplicas(autoTable).withSnapshotEvery(snapshotEvery).withLeaseCheck(Duration.ofHours(1));
        start(cfg);
        client = new MgmtdClient(ctx, List.of(server.rpcAddress()));
    }

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        if (ctx != null) {
            ctx.close();
        }
    }

    <R extends io.strata.core.rpc.Message> R call(MgmtdMessage m, Class<R> type) {
        return Futures.join(client.call(m, type, T, T), T);
    }

    LeaseGranted register(int node, long incarnation, String rack) {
        NodeInfo n = new NodeInfo(NodeId.of(node), "127.0.0.1", 9100 + node, Map.of("rack", rack));
        return call(new RegisterNode(n, NodeRole.STORAGE, incarnation, List.of(TargetId.of(node * 100L + 1), TargetId.of(node * 100L + 2))),
                LeaseGranted.class);
    }

    LeaseGranted heartbeat(int node, long incarnation, TargetReport... reports) {
        return call(new Heartbeat(NodeId.of(node), incarnation, List.of(reports)), LeaseGranted.class);
    }

    @Test
    void theDataAndRatisDirectoriesArePrivateAndAWideOneIsTightened() throws Exception {
        Path data = Files.createDirectory(dir.resolve("m1"));
        Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwxrwxrwx"));
        setUp(0, 1000);
        Path ratis = data.resolve("ratis");
        assertThat(Files.getPosixFilePermissions(data)).isEqualTo(PrivateFiles.DIRECTORY);
        assertThat(Files.getPosixFilePermissions(ratis)).isEqualTo(PrivateFiles.DIRECTORY);
        // Ratis's log and metadata (made with the umask's modes) are all inside it
        assertThat(ratis.resolve(MgmtdServer.GROUP.getUuid().toString())).isDirectory();
    }

    LeaseGranted registerAgent(int node, long incarnation) {
        NodeInfo n = new NodeInfo(NodeId.of(node), "127.0.0.1", 9100 + node, Map.of("host", "h" + node));
        return call(new RegisterNode(n, NodeRole.L2_AGENT, incarnation, List.of()), LeaseGranted.class);
    }

    LeaseGranted agentHeartbeat(int node, long incarnation, long backlog) {
        return call(new Heartbeat(NodeId.of(node), incarnation, List.of(), List.of(), backlog), LeaseGranted.class);
    }

    @Test
    void theLeaseAnswerCountsTheServingAgentsThatReportADrainBacklog() throws Exception {
        setUp(0, 1000);
        assertThat(registerAgent(11, 1).drainingAgents()).isZero();
        registerAgent(12, 1);
        registerAgent(13, 1);
        assertThat(agentHeartbeat(11, 1, 0).drainingAgents()).as("nobody drains").isZero();
        assertThat(agentHeartbeat(11, 1, 8 << 20).drainingAgents()).as("the heartbeat's own backlog counts").isEqualTo(1);
        assertThat(agentHeartbeat(12, 1, 0).drainingAgents()).as("an agent without a backlog takes no share").isEqualTo(1);
        assertThat(agentHeartbeat(13, 1, 1).drainingAgents()).isEqualTo(2);
        assertThat(agentHeartbeat(11, 1, 0).drainingAgents()).as("drained: it stops counting").isEqualTo(1);
        assertThat(agentHeartbeat(11, 1, 5).drainingAgents()).isEqualTo(2);
        // agent 13 goes silent: once its lease expires it no longer counts, backlog or not
        clock.advance(LEASE.minusSeconds(2));
        agentHeartbeat(11, 1, 5);
        agentHeartbeat(12, 1, 0);
        clock.advance(Duration.ofSeconds(3));
        agentHeartbeat(11, 1, 5);
        agentHeartbeat(12, 1, 0);
        Futures.join(server.checkLeases(), T);
        Eventually.await("agent 13 no longer serving", T, () -> !server.routing().agents().get(NodeId.of(13)).serving());
        assertThat(agentHeartbeat(11, 1, 5).drainingAgents()).isEqualTo(1);
        // a storage node's heartbeat never counts
        register(1, 11, "r1");
        assertThat(call(new Heartbeat(NodeId.of(1), 11, List.of(), List.of(), 99), LeaseGranted.class).drainingAgents()).isEqualTo(1);
    }

    @Test
    void leaseExpiryMovesTargetsToTheTailWithVersionBumps() throws Exception {
        setUp(3, 1000);
        register(1, 11, "r1");
        register(2, 22, "r2");
        register(3, 33, "r3");
        RoutingInfo r0 = Eventually.value("auto chain table", T,
                () -> server.routing().latestTable(3).isPresent() ? server.routing() : null);
        ChainTable table = r0.latestTable(3).orElseThrow();
        assertThat(table.chains()).hasSize(2); // 3 nodes x 2 targets / 3 replicas
        for (ChainId c : table.chains()) {
            assertThat(r0.readable(c)).hasSize(3);
        }
        // nodes 1 and 2 heartbeat; node 3 goes silent
        clock.advance(Duration.ofSeconds(6));
        heartbeat(1, 11);
        heartbeat(2, 22);
        Futures.join(server.checkLeases(), T);
        assertThat(server.routing().version()).isEqualTo(r0.version()); // nobody expired yet
        clock.advance(Duration.ofSeconds(5)); // node 3: 11 s since registration > lease; nodes 1, 2: 5 s
        heartbeat(1, 11);
        heartbeat(2, 22);
        Futures.join(server.checkLeases(), T);
        RoutingInfo r1 = server.routing();
        assertThat(r1.version()).isEqualTo(r0.version() + 1);
        for (ChainId c : table.chains()) {
            ChainInfo before = r0.chain(c);
            ChainInfo after = r1.chain(c);
            assertThat(after.version()).isEqualTo(before.version() + 1);
            TargetId tail = after.targets().get(2);
            assertThat(r1.target(tail).node()).isEqualTo(NodeId.of(3));
            assertThat(r1.target(tail).state()).isEqualTo(TargetState.OFFLINE);
            assertThat(r1.writePath(c)).hasSize(2).doesNotContain(tail);
        }
        assertThat(server.view().nodes().get(NodeId.of(3)).live()).isFalse();
        // a late heartbeat from node 3 is refused: it must register again
        assertThatThrownBy(() -> heartbeat(3, 33)).isInstanceOfSatisfying(StrataException.class,
                e -> assertThat(e.status()).isEqualTo(Status.LEASE_EXPIRED));
        // it returns: its targets sync from their predecessor, then serve once up to date
        register(3, 33, "r3");
        RoutingInfo r2 = server.routing();
        for (ChainId c : table.chains()) {
            TargetId t = r2.chain(c).targets().get(2);
            assertThat(r2.target(t).state()).isEqualTo(TargetState.SYNCING);
            // a report naming an older chain version (a resync that ran before a change) counts for nothing
            heartbeat(3, 33, new TargetReport(t, LocalState.UP_TO_DATE, r2.chain(c).version() - 1));
            assertThat(server.routing().target(t).state()).isEqualTo(TargetState.SYNCING);
            heartbeat(3, 33, new TargetReport(t, LocalState.UP_TO_DATE, r2.chain(c).version()));
            assertThat(server.routing().target(t).state()).isEqualTo(TargetState.SERVING);
            assertThat(server.routing().chain(c).version()).isEqualTo(r2.chain(c).version() + 1);
        }
        // a lease past its deadline is never renewed, even if the check has not run yet
        clock.advance(LEASE.plusSeconds(1));
        assertThatThrownBy(() -> heartbeat(1, 11)).isInstanceOfSatisfying(StrataException.class,
                e -> assertThat(e.status()).isEqualTo(Status.LEASE_EXPIRED));
    }

    @Test
    void aRestartedNodeResyncsAndTheLastServingCopyIsKept() throws Exception {
        setUp(0, 1000);
        register(1, 1, "r1");
        register(2, 2, "r2");
        CreateChainTable ask = new CreateChainTable(1, 2);
        ChainTableCreated created = call(ask, ChainTableCreated.class);
        assertThat(created.version()).isEqualTo(1);
        List<ChainId> v1 = server.routing().table(1, 1).orElseThrow().chains();
        ChainId c = v1.get(0);
        // node 2 restarts (new incarnation): its target was serving, so it resyncs
        register(2, 3, "r2");
        RoutingInfo r = server.routing();
        TargetId t2 = r.chain(c).targets().stream().filter(t -> r.target(t).node().equals(NodeId.of(2))).findFirst().orElseThrow();
        assertThat(r.target(t2).state()).isEqualTo(TargetState.SYNCING);
        // node 1 loses its lease while node 2 is still syncing: node 1 holds the last copy
        clock.advance(Duration.ofSeconds(6));
        heartbeat(2, 3);
        clock.advance(Duration.ofSeconds(5));
        heartbeat(2, 3);
        Futures.join(server.checkLeases(), T);
        RoutingInfo r2 = server.routing();
        TargetId t1 = r2.chain(c).targets().stream().filter(t -> r2.target(t).node().equals(NodeId.of(1))).findFirst().orElseThrow();
        assertThat(r2.target(t1).state()).isEqualTo(TargetState.LASTSRV);
        assertThat(r2.target(t2).state()).isEqualTo(TargetState.WAITING);
        assertThat(r2.readable(c)).isEmpty();
        // node 1 comes back: it serves at once, node 2 syncs from it
        register(1, 1, "r1");
        RoutingInfo r3 = server.routing();
        assertThat(r3.target(t1).state()).isEqualTo(TargetState.SERVING);
        assertThat(r3.target(t2).state()).isEqualTo(TargetState.SYNCING);
        assertThat(r3.chain(c).targets()).containsExactly(t1, t2);
        // growth: two more nodes give table 1 a second version; version 1 stays
        register(3, 3, "r3");
        register(4, 4, "r4");
        ChainTableCreated v2 = call(ask, ChainTableCreated.class);
        assertThat(v2.version()).isEqualTo(2);
        RoutingInfo r4 = server.routing();
        assertThat(r4.table(1, 1).orElseThrow().chains()).isEqualTo(v1);
        assertThat(r4.table(1, 2).orElseThrow().chains()).hasSize(4).containsAll(r4.table(1, 1).orElseThrow().chains());
        // no free targets left: a clear error, nothing written
        long before = server.routing().version();
        assertThatThrownBy(() -> call(ask, ChainTableCreated.class)).isInstanceOfSatisfying(StrataException.class,
                e -> assertThat(e.status()).isEqualTo(Status.INVALID_ARGUMENT));
        assertThat(server.routing().version()).isEqualTo(before);
        // a target claimed by two nodes is refused
        NodeInfo n5 = new NodeInfo(NodeId.of(5), "127.0.0.1", 9105, Map.of());
        assertThatThrownBy(() -> call(new RegisterNode(n5, NodeRole.STORAGE, 5, List.of(TargetId.of(101))), LeaseGranted.class))
                .isInstanceOfSatisfying(StrataException.class, e -> assertThat(e.status()).isEqualTo(Status.INVALID_ARGUMENT));
    }

    @Test
    void aRestartedManagerComesBackWithTheSameState() throws Exception {
        setUp(3, 4); // a snapshot every 4 entries: the restart loads one and replays the log after it
        for (int n = 1; n <= 4; n++) {
            register(n, n, "r" + n);
        }
        Eventually.await("table", T, () -> server.routing().latestTable(3).isPresent());
        heartbeat(1, 1, new TargetReport(TargetId.of(101), LocalState.OFFLINE, 0));
        register(2, 20, "r2");
        ClusterState.View before = server.view();
        assertThat(before.routing().version()).isGreaterThan(6);
        assertThat(java.nio.file.Files.walk(dir).anyMatch(p -> p.getFileName().toString().startsWith("snapshot."))).isTrue();
        server.close();
        server = null;
        MgmtdConfig cfg = MgmtdConfig.single(dir.resolve("m1"), Managers.loopback(0), Managers.loopback(0), LEASE)
                .withAutoTableReplicas(3).withSnapshotEvery(4).withLeaseCheck(Duration.ofHours(1));
        start(cfg);
        Eventually.await("state replayed", T, () -> server.view().routing().version() == before.routing().version());
        assertThat(server.view()).isEqualTo(before);
        // and it keeps working: the restarted manager accepts the next change
        client.close();
        client = new MgmtdClient(ctx, List.of(server.rpcAddress()));
        register(5, 5, "r5");
        assertThat(server.routing().version()).isEqualTo(before.routing().version() + 1);
    }
}
