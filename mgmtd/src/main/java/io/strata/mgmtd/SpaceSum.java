package io.strata.mgmtd;

import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.protocol.mgmtd.MgmtdMessage.Space;
import io.strata.protocol.mgmtd.MgmtdMessage.TargetSpace;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The cluster's storage capacity as clients see it ({@code df} on a mount): the raw size and free
 * bytes of the file systems under the serving targets of live storage nodes. Several targets of
 * one host on one device (a node with two targets on one disk, or the three storage nodes of
 * {@code strata up} on one machine) share their file system, which is counted once: summing
 * per target would report three disks where there is one. A target that is not serving (its
 * disk failed, it is syncing) holds no data a client can write to, so it adds nothing.
 */
final class SpaceSum {
    private SpaceSum() {
    }

    static Space of(RoutingInfo routing, Predicate<NodeId> live, Map<TargetId, TargetSpace> reported) {
        record Disk(String host, long device) {
        }
        Map<Disk, TargetSpace> disks = new HashMap<>();
        int serving = 0;
        int reporting = 0;
        for (TargetInfo t : routing.targets().values()) {
            if (t.state() != TargetState.SERVING || !live.test(t.node())) {
                continue;
            }
            serving++;
            TargetSpace s = reported.get(t.id());
            NodeInfo n = routing.nodes().get(t.node());
            if (s == null || n == null) {
                continue;
            }
            reporting++;
            // the same file system read twice a moment apart: keep the lower free figure
            disks.merge(new Disk(n.host(), s.device()), s, (a, b) -> a.freeBytes() <= b.freeBytes() ? a : b);
        }
        long capacity = 0;
        long free = 0;
        for (TargetSpace s : disks.values()) {
            capacity += s.capacityBytes();
            free += s.freeBytes();
        }
        return new Space(capacity, free, reporting, serving);
    }
}
