package io.strata.placement;

import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.RevocationWatcher;
import io.strata.core.NodeContext;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.mgmtd.MgmtdMessage.GetRouting;
import io.strata.protocol.mgmtd.MgmtdMessage.RoutingReply;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routing info from the cluster manager: a pull at start and on {@link #refreshAsync}, and a
 * standing long poll ({@link GetRouting} with a wait) that brings every new version as soon as
 * the manager applies it. Follows leader changes through {@link MgmtdClient}. Listeners run on
 * the RPC or scheduler thread that delivered the version, in version order, never twice for
 * one version.
 *
 * <p>In a process that verifies tokens it also keeps the verifier's revocation list current
 * ({@link RevocationWatcher}): every daemon that follows the manager's routing learns revoked
 * tokens the same way.
 */
public final class ManagerRoutingSource implements RoutingSource {
    private static final Logger LOG = LoggerFactory.getLogger(ManagerRoutingSource.class);

    private final NodeContext ctx;
    private final MgmtdClient client;
    private final Duration watchWait;
    private final Duration callTimeout;
    private final Listeners<RoutingInfo> listeners = new Listeners<>();
    private volatile RoutingInfo current = RoutingInfo.EMPTY;
    private volatile boolean closed;
    private CompletableFuture<RoutingInfo> refreshing;

    private volatile RevocationWatcher revocations;

    private ManagerRoutingSource(NodeContext ctx, MgmtdClient client, Duration watchWait, Duration callTimeout) {
        this.ctx = ctx;
        this.client = client;
        this.watchWait = watchWait;
        this.callTimeout = callTimeout;
    }

    /** Starts the watch; {@code current()} is EMPTY until the first answer (await {@link #refreshAsync}(0) for it). */
    public static ManagerRoutingSource start(NodeContext ctx, MgmtdClient client) {
        return start(ctx, client, Duration.ofSeconds(20), Duration.ofSeconds(5));
    }

    public static ManagerRoutingSource start(NodeContext ctx, MgmtdClient client, Duration watchWait, Duration callTimeout) {
        ManagerRoutingSource s = new ManagerRoutingSource(ctx, client, watchWait, callTimeout);
        s.watch(0, true);
        s.revocations = RevocationWatcher.start(ctx, client);
        return s;
    }

    @Override
    public RoutingInfo current() {
        return current;
    }

    @Override
    public synchronized CompletableFuture<RoutingInfo> refreshAsync(long knownVersion) {
        RoutingInfo c = current;
        if (c.version() > knownVersion) {
            return CompletableFuture.completedFuture(c);
        }
        if (refreshing != null && !refreshing.isDone()) {
            return refreshing;
        }
        CompletableFuture<RoutingInfo> f = client.call(new GetRouting(knownVersion, 0), RoutingReply.class, callTimeout,
                callTimeout.multipliedBy(3)).thenApply(r -> offer(r.routing()));
        refreshing = f;
        return f;
    }

    @Override
    public void onChange(Consumer<RoutingInfo> listener) {
        listeners.add(listener);
    }

    /** Takes {@code r} if newer; returns the newest known. */
    private RoutingInfo offer(RoutingInfo r) {
        synchronized (listeners) {
            if (r.version() <= current.version()) {
                return current;
            }
            current = r;
            listeners.tell(r, e -> LOG.warn("routing listener failed on version {}: {}", r.version(), e.toString()));
            return r;
        }
    }

    private void watch(int failures, boolean first) {
        if (closed) {
            return;
        }
        long known = current.version();
        int waitMs = first ? 0 : (int) watchWait.toMillis();
        client.call(new GetRouting(known, waitMs), RoutingReply.class, watchWait.plus(callTimeout), watchWait.plus(callTimeout))
                .whenComplete((r, e) -> {
                    if (e == null) {
                        offer(r.routing());
                        resubmit(() -> watch(0, false), 0);
                    } else {
                        if (!closed && failures % 10 == 0) {
                            LOG.info("routing watch: {} (retrying)", e.toString());
                        }
                        resubmit(() -> watch(failures + 1, first), Math.min(2000, 100L << Math.min(4, failures)));
                    }
                });
    }

    private void resubmit(Runnable r, long delayMs) {
        if (closed) {
            return;
        }
        try {
            ctx.scheduler().schedule(r, delayMs, TimeUnit.MILLISECONDS);
        } catch (RuntimeException rejected) {
            closed = true;
        }
    }

    @Override
    public void close() {
        closed = true;
        if (revocations != null) {
            revocations.close();
        }
    }
}
