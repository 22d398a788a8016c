package io.strata.placement;

import io.strata.protocol.routing.RoutingInfo;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * Where clients and storage nodes get routing info. Static (from a config file) in tests and
 * single-purpose setups; the cluster manager's client (pull, plus push on change) in a cluster.
 */
public interface RoutingSource extends AutoCloseable {
    /** The newest routing info this source has; never null (possibly {@link RoutingInfo#EMPTY}). */
    RoutingInfo current();

    /**
     * Fetches routing info newer than {@code knownVersion} when there is one (after a node
     * rejected a stale chain version, say); completes with the newest known otherwise.
     */
    CompletableFuture<RoutingInfo> refreshAsync(long knownVersion);

    /** Calls {@code listener} with every new version, on the source's thread; must not block. */
    void onChange(Consumer<RoutingInfo> listener);

    @Override
    default void close() {
    }
}
