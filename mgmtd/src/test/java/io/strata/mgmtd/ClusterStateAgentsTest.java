package io.strata.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeId;
import io.strata.placement.L2Placement;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.routing.AgentInfo;
import io.strata.protocol.routing.NodeInfo;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** L2 agents registered with the manager appear in routing, serving while their lease lives, and survive a snapshot. */
class ClusterStateAgentsTest {
    @Test
    void agentsAreRoutedWithTheirLeaseAndSurviveASnapshot() {
        ClusterState s = new ClusterState();
        NodeInfo a = new NodeInfo(NodeId.of(21), "127.0.0.1", 9121, Map.of("domain", "gpu-1"));
        NodeInfo b = new NodeInfo(NodeId.of(22), "127.0.0.1", 9122, Map.of("host", "gpu-2"));
        long v0 = s.view().routing().version();
        s.apply(new MgmtdCommand.Register(a, NodeRole.L2_AGENT, 1, List.of()));
        s.apply(new MgmtdCommand.Register(b, NodeRole.L2_AGENT, 1, List.of()));
        assertThat(s.view().routing().version()).isGreaterThan(v0);
        assertThat(s.view().routing().agents()).containsExactlyInAnyOrderEntriesOf(
                Map.of(a.id(), new AgentInfo(a.id(), true), b.id(), new AgentInfo(b.id(), true)));
        assertThat(L2Placement.serving(s.view().routing())).containsExactly(
                new L2Placement.Agent(a.id(), "gpu-1"), new L2Placement.Agent(b.id(), "gpu-2"));

        long v1 = s.view().routing().version();
        s.apply(new MgmtdCommand.Expire(b.id(), 1));
        assertThat(s.view().routing().version()).as("an agent's lease expiring is a routing change").isGreaterThan(v1);
        assertThat(s.view().routing().agents().get(b.id()).serving()).isFalse();
        assertThat(L2Placement.serving(s.view().routing())).extracting(L2Placement.Agent::id).containsExactly(a.id());

        ByteBuf snap = Unpooled.buffer();
        try {
            s.encode(snap);
            ClusterState back = new ClusterState();
            back.decode(snap);
            assertThat(back.view().routing()).isEqualTo(s.view().routing());
        } finally {
            snap.release();
        }
    }
}
