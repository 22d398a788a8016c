package io.strata.storage;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The one switch that says whether this storage node may serve: every chunk request (client
 * writes and reads, forwarded updates, version queries) passes {@link #check()} first. Open at
 * start. Fencing (a node that cannot reach the cluster manager for half its lease) will
 * {@link #close} it so that a partitioned node neither accepts writes nor serves possibly stale
 * reads; {@link #open} re-admits requests once the node is back in the cluster.
 */
public final class ServingGate {
    private volatile StrataException closedBecause;

    /** Requests are served again. */
    public void open() {
        closedBecause = null;
    }

    /** Every request is refused with {@code status} (e.g. FENCED) and {@code reason} until {@link #open}. */
    public void close(Status status, String reason) {
        closedBecause = new StrataException(status, reason);
    }

    public boolean isOpen() {
        return closedBecause == null;
    }

    /** Throws the refusal when closed. */
    public void check() {
        StrataException e = closedBecause;
        if (e != null) {
            throw new StrataException(e.status(), e.getMessage());
        }
    }

    /**
     * A request handler's future, after {@link #check()}: when the gate refuses, or the handler
     * throws instead of returning a future, the future fails with that error (handlers answer
     * every failure through their future, never by throwing at the RPC layer).
     */
    public <T> CompletableFuture<T> serve(Supplier<CompletableFuture<T>> handler) {
        try {
            check();
            return handler.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
