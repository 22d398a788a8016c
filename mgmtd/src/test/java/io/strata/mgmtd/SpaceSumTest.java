package io.strata.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.protocol.mgmtd.MgmtdMessage.Space;
import io.strata.protocol.mgmtd.MgmtdMessage.TargetSpace;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What {@code df} on a mount is told: each file system once, only serving targets of live nodes. */
class SpaceSumTest {
    static final long TB = 1L << 40;

    /** Nodes 1 and 2 on host a (one disk, device 7, shared), node 3 on host b with two disks (devices 7 and 8). */
    static RoutingInfo routing(TargetState t32) {
        Map<NodeId, NodeInfo> nodes = Map.of(
                NodeId.of(1), new NodeInfo(NodeId.of(1), "a", 1, Map.of()),
                NodeId.of(2), new NodeInfo(NodeId.of(2), "a", 2, Map.of()),
                NodeId.of(3), new NodeInfo(NodeId.of(3), "b", 3, Map.of()));
        Map<TargetId, TargetInfo> targets = new HashMap<>();
        for (long t : new long[] {11, 21, 31}) {
            targets.put(TargetId.of(t), new TargetInfo(TargetId.of(t), NodeId.of((int) (t / 10)), TargetState.SERVING));
        }
        targets.put(TargetId.of(32), new TargetInfo(TargetId.of(32), NodeId.of(3), t32));
        return new RoutingInfo(5, nodes, targets, Map.of(), List.of());
    }

    static Map<TargetId, TargetSpace> reported() {
        return Map.of(
                TargetId.of(11), new TargetSpace(TargetId.of(11), 4 * TB, 3 * TB, 7),
                TargetId.of(21), new TargetSpace(TargetId.of(21), 4 * TB, 3 * TB - 5, 7), // read a moment later
                TargetId.of(31), new TargetSpace(TargetId.of(31), 2 * TB, TB, 7), // same device number, other host
                TargetId.of(32), new TargetSpace(TargetId.of(32), 8 * TB, 8 * TB, 8));
    }

    @Test
    void aFileSystemSharedByTargetsOfOneHostCountsOnceAndDevicesOfOtherHostsCountApart() {
        Space s = SpaceSum.of(routing(TargetState.SERVING), n -> true, reported());
        assertThat(s.capacityBytes()).isEqualTo(4 * TB + 2 * TB + 8 * TB);
        assertThat(s.freeBytes()).as("the lower of two readings of one disk").isEqualTo(3 * TB - 5 + TB + 8 * TB);
        assertThat(s.reporting()).isEqualTo(4);
        assertThat(s.targets()).isEqualTo(4);
    }

    @Test
    void targetsNotServingOrOnDeadNodesAddNothingAndSilentTargetsAreCountedAsNotReporting() {
        Space s = SpaceSum.of(routing(TargetState.OFFLINE), n -> n.value() != 1, reported());
        assertThat(s.capacityBytes()).as("node 2's copy of host a's disk, node 3's first disk").isEqualTo(4 * TB + 2 * TB);
        assertThat(s.targets()).isEqualTo(2);

        Map<TargetId, TargetSpace> some = new HashMap<>(reported());
        some.remove(TargetId.of(31));
        Space partial = SpaceSum.of(routing(TargetState.SERVING), n -> true, some);
        assertThat(partial.reporting()).isEqualTo(3);
        assertThat(partial.targets()).isEqualTo(4);
        assertThat(partial.capacityBytes()).isEqualTo(4 * TB + 8 * TB);
    }
}
