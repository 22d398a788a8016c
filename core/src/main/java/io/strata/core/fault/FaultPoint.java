package io.strata.core.fault;

/**
 * A named place in production code where a test may inject a failure. Each module declares
 * its points as constants next to the code that fires them, e.g.
 * {@code static final FaultPoint BEFORE_COMMIT = FaultPoint.of("chunk.before-commit")}.
 */
public record FaultPoint(String name) {
    /** Every outbound RPC frame, requests and responses; scope carries message and peer. */
    public static final FaultPoint RPC_SEND = new FaultPoint("rpc.send");

    public FaultPoint {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("a fault point needs a name");
        }
    }

    public static FaultPoint of(String name) {
        return new FaultPoint(name);
    }

    @Override
    public String toString() {
        return name;
    }
}
