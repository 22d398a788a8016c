package io.strata.l2.agent;

import io.strata.core.NodeId;
import io.strata.protocol.routing.AgentInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;

/**
 * Routing with L2 agents added or changed, as the cluster manager publishes it: for harnesses
 * and tests that route by a static table instead of a manager.
 */
public final class AgentRouting {
    private AgentRouting() {
    }

    /**
     * {@code r} at the next version with agent {@code id} at {@code address} in failure domain
     * {@code domain}, serving or not.
     */
    public static RoutingInfo with(RoutingInfo r, int id, InetSocketAddress address, String domain, boolean serving) {
        Map<NodeId, NodeInfo> nodes = new HashMap<>(r.nodes());
        nodes.put(NodeId.of(id), new NodeInfo(NodeId.of(id), address.getHostString(), address.getPort(), Map.of("domain", domain)));
        Map<NodeId, AgentInfo> agents = new HashMap<>(r.agents());
        agents.put(NodeId.of(id), new AgentInfo(NodeId.of(id), serving));
        return new RoutingInfo(r.version() + 1, nodes, r.targets(), r.chains(), r.tables(), agents);
    }

    /** {@code r} at the next version with agent {@code id} serving or not (it must be listed). */
    public static RoutingInfo serving(RoutingInfo r, int id, boolean serving) {
        Map<NodeId, AgentInfo> agents = new HashMap<>(r.agents());
        agents.put(NodeId.of(id), new AgentInfo(NodeId.of(id), serving));
        return new RoutingInfo(r.version() + 1, r.nodes(), r.targets(), r.chains(), r.tables(), agents);
    }
}
