package io.strata.protocol.meta;

import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.NodeRole;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds the meta service through the cluster manager: every node registered with role
 * {@code meta} and a live lease (a {@code strata meta --mgmtd ...} registers itself).
 */
public final class MetaDiscovery {
    private MetaDiscovery() {
    }

    /** The live meta services' RPC addresses; fails with NOT_FOUND when none is registered. */
    public static List<InetSocketAddress> find(MgmtdClient mgmtd, Duration timeout) {
        MgmtdMessage.ClusterStatus s = Futures.join(mgmtd.call(new MgmtdMessage.GetStatus(), MgmtdMessage.ClusterStatus.class,
                Duration.ofSeconds(5), timeout), timeout.plusSeconds(1));
        List<InetSocketAddress> out = new ArrayList<>();
        for (MgmtdMessage.NodeStatus n : s.nodes()) {
            if (n.role() == NodeRole.META && n.live()) {
                NodeInfo ni = s.routing().nodes().get(n.node());
                if (ni != null) {
                    out.add(new InetSocketAddress(ni.host(), ni.port()));
                }
            }
        }
        if (out.isEmpty()) {
            throw new StrataException(Status.NOT_FOUND, "no meta service is registered with the cluster manager "
                    + mgmtd.managers() + " (start one with `strata meta --mgmtd ...`, or give its address with --meta)");
        }
        return out;
    }
}
