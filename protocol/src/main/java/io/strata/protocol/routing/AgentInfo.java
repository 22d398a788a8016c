package io.strata.protocol.routing;

import io.strata.core.NodeId;

/**
 * An L2 agent as routing knows it: the node it runs on (its address and labels are that node's
 * {@link NodeInfo}; the failure domain is its {@code domain} label, else its host) and whether it
 * holds a live lease. An agent whose lease expired stays listed, not serving, so that readers
 * and the drain can tell "gone for now" from "never existed".
 */
public record AgentInfo(NodeId node, boolean serving) {
    public AgentInfo {
        if (node == null) {
            throw new IllegalArgumentException("an agent needs a node");
        }
    }
}
