package io.strata.core;

/** A process in the cluster (storage node, meta service, manager peer, client). Positive. */
public record NodeId(int value) implements Comparable<NodeId> {
    public NodeId {
        if (value <= 0) {
            throw new IllegalArgumentException("node id must be positive, got " + value);
        }
    }

    public static NodeId of(int value) {
        return new NodeId(value);
    }

    @Override
    public int compareTo(NodeId o) {
        return Integer.compare(value, o.value);
    }

    @Override
    public String toString() {
        return "node-" + value;
    }
}
