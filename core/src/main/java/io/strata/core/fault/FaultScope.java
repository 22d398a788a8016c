package io.strata.core.fault;

/**
 * What a fault point knows about the event that fires it, so a rule can match on it: a
 * message type, a peer address, a direction or any module-specific tag.
 */
public record FaultScope(String message, String peer, String detail) {
    public static final FaultScope NONE = new FaultScope("", "", "");

    public static FaultScope of(String message, String peer) {
        return new FaultScope(message, peer, "");
    }

    public static FaultScope detail(String detail) {
        return new FaultScope("", "", detail);
    }
}
