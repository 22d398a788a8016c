package io.strata.storage;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.ChainId;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which syncing targets share the cluster's resync budget: only those a serving predecessor sends to. */
class ResyncSharesTest {
    /** Nodes 1..3; target {@code 10 * chain + node} on each; chain order as given, states by target. */
    private static RoutingInfo routing(Map<Long, TargetState> states, long[]... chains) {
        Map<NodeId, NodeInfo> nodes = new HashMap<>();
        Map<TargetId, TargetInfo> targets = new HashMap<>();
        Map<ChainId, ChainInfo> cs = new HashMap<>();
        for (int n = 1; n <= 3; n++) {
            nodes.put(NodeId.of(n), new NodeInfo(NodeId.of(n), "h" + n, 9000 + n, Map.of()));
        }
        for (int c = 0; c < chains.length; c++) {
            List<TargetId> order = new java.util.ArrayList<>();
            for (long t : chains[c]) {
                targets.put(TargetId.of(t), new TargetInfo(TargetId.of(t), NodeId.of((int) (t % 10)),
                        states.getOrDefault(t, TargetState.SERVING)));
                order.add(TargetId.of(t));
            }
            cs.put(ChainId.of(c + 1), new ChainInfo(ChainId.of(c + 1), 1, order));
        }
        return new RoutingInfo(3, nodes, targets, cs, List.of());
    }

    @Test
    void aSyncingTargetCountsWhenItsPredecessorServes() {
        RoutingInfo r = routing(Map.of(12L, TargetState.SYNCING, 23L, TargetState.SYNCING), new long[] {11, 12, 13}, new long[] {21, 22, 23});
        assertThat(ResyncWorker.syncingWithASender(r)).isEqualTo(2);
    }

    @Test
    void aSyncingTargetBehindAnotherSyncingOneHasNoSenderYet() {
        // chain 1: 11 serves, 12 and 13 sync: only 12 is sent to; 13 waits for 12 to serve
        RoutingInfo r = routing(Map.of(12L, TargetState.SYNCING, 13L, TargetState.SYNCING), new long[] {11, 12, 13});
        assertThat(ResyncWorker.syncingWithASender(r)).isEqualTo(1);
    }

    @Test
    void anOfflineTargetIsOffTheWritePathSoTheNextServingOneSends() {
        // chain 1: 11 offline (moved to the end by the manager), 12 serves, 13 syncs: 12 sends to 13
        RoutingInfo r = routing(Map.of(11L, TargetState.OFFLINE, 13L, TargetState.SYNCING), new long[] {12, 13, 11});
        assertThat(ResyncWorker.syncingWithASender(r)).isEqualTo(1);
        // no serving target left: nothing is sent
        RoutingInfo none = routing(Map.of(11L, TargetState.OFFLINE, 12L, TargetState.OFFLINE, 13L, TargetState.SYNCING),
                new long[] {13, 11, 12});
        assertThat(ResyncWorker.syncingWithASender(none)).isZero();
    }
}
