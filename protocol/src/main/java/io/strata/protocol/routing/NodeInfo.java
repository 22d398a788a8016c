package io.strata.protocol.routing;

import io.strata.core.NodeId;
import java.net.InetSocketAddress;
import java.util.Map;

/**
 * A storage node as routing info knows it: where to reach it and its failure-domain labels
 * ({@code host}, {@code rack}, ...), which placement uses to keep a chain's replicas apart.
 */
public record NodeInfo(NodeId id, String host, int port, Map<String, String> labels) {
    public NodeInfo {
        if (id == null || host == null || host.isBlank()) {
            throw new IllegalArgumentException("a node needs an id and a host");
        }
        if (port <= 0 || port > 65535) {
            throw new IllegalArgumentException("node " + id + ": port out of range: " + port);
        }
        labels = Map.copyOf(labels);
    }

    /** The RPC address (resolved on each call: cheap for IP literals). */
    public InetSocketAddress address() {
        return new InetSocketAddress(host, port);
    }

    public String hostPort() {
        return host + ":" + port;
    }

    /** The failure domain at {@code level} ("host", "rack"); the node itself when unlabelled. */
    public String domain(String level) {
        String v = labels.get(level);
        return v != null ? v : level.equals("host") ? host : id.toString();
    }
}
