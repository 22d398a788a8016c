package io.strata.testing;

import io.strata.core.NodeContext;
import io.strata.core.fault.FaultInjector;

/** Node contexts for tests: small thread pools, a seeded fault injector, one seed per node. */
public final class TestNodes {
    private TestNodes() {
    }

    /** A context named {@code name} whose randomness and faults derive from {@code seed}. */
    public static NodeContext context(String name, long seed) {
        long nodeSeed = seed ^ name.hashCode() * 0x9E3779B97F4A7C15L;
        return NodeContext.builder(name)
                .seed(nodeSeed)
                .faults(new FaultInjector(nodeSeed))
                .eventLoopThreads(2)
                .blockingThreads(4)
                .build();
    }
}
