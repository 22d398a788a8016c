package io.strata.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.placement.NodeAgent;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.core.tls.CertificateAuthority;
import io.strata.protocol.mgmtd.StoredHint;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MiniMgmtdClusterTest {
    @TempDir
    Path dir;

    @Test
    void agentsRegisterGetAChainTableAndSurviveAManagerRestart() throws Exception {
        Duration t = Duration.ofSeconds(30);
        List<AutoCloseable> closers = new ArrayList<>();
        try (MiniMgmtdCluster m = MiniMgmtdCluster.builder(dir).peers(1).lease(Duration.ofSeconds(5)).autoTable(3).start()) {
            List<NodeAgent> agents = new ArrayList<>();
            List<ManagerRoutingSource> sources = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                NodeContext ctx = NodeContext.seeded("storage-" + i, 5);
                MgmtdClient c = new MgmtdClient(ctx, m.addresses());
                ManagerRoutingSource r = ManagerRoutingSource.start(ctx, c);
                NodeAgent a = NodeAgent.start(ctx, c, r, new NodeInfo(NodeId.of(i), "127.0.0.1", 9300 + i, Map.of()),
                        List.of(TargetId.of(i * 10L)));
                closers.addAll(List.of(ctx, c, r, a));
                agents.add(a);
                sources.add(r);
            }
            Eventually.await("chain of 3 serving", t, () -> sources.get(0).current().latestTable(3).isPresent()
                    && sources.get(0).current().targets().values().stream().allMatch(x -> x.state() == TargetState.SERVING));
            long v = m.peer(0).routing().version();
            // the manager restarts from its disk; the agents keep their gate and carry on
            m.stop(0);
            m.start(0);
            m.awaitLeader(t);
            // at least the state it had (leases that ran out while it was down may have moved it on since)
            Eventually.await("state back", t, () -> m.peer(0).routing().version() >= v);
            assertThat(m.peer(0).routing().latestTable(3)).isPresent();
            Eventually.await("agents heartbeat again", t, () -> agents.stream().allMatch(NodeAgent::mayServeWrites));
            Eventually.await("targets serving again", t,
                    () -> m.peer(0).routing().targets().values().stream().allMatch(x -> x.state() == TargetState.SERVING));
        } finally {
            for (int i = closers.size() - 1; i >= 0; i--) {
                closers.get(i).close();
            }
        }
    }

    @Test
    void aManagerGroupOnMutualTlsFailsOverAndARestartedPeerCatchesUp() throws Exception {
        Duration t = Duration.ofSeconds(30);
        CertificateAuthority ca = CertificateAuthority.generate("test-ca", Instant.now(), Duration.ofDays(1));
        try (MiniMgmtdCluster m = MiniMgmtdCluster.builder(dir).peers(3).tls(ca).start();
             NodeContext ctx = NodeContext.builder("scheduler").seed(5).tls(m.clientTls("scheduler")).build();
             MgmtdClient c = new MgmtdClient(ctx, m.addresses())) {
            List<StoredHint> put = new ArrayList<>();
            put.add(Futures.join(c.putHintAsync(0, 0, "{\"job\":\"a\"}".getBytes(StandardCharsets.UTF_8)), t));
            int first = m.awaitLeader(t);
            m.stop(first);
            int second = m.awaitLeader(t);
            assertThat(second).as("a new leader among the other two").isNotEqualTo(first);
            put.add(Futures.join(c.putHintAsync(0, 0, "{\"job\":\"b\"}".getBytes(StandardCharsets.UTF_8)), t));
            // the old leader comes back from its disk, still on TLS, and receives what it missed
            m.start(first);
            Eventually.await("the restarted peer caught up", t, () -> m.peer(first).hints().equals(put));
            assertThat(Futures.join(c.hintsAsync(), t)).as("hints through the leader").isEqualTo(put);
        }
    }
}
