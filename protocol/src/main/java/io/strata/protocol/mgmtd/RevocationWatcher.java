package io.strata.protocol.mgmtd;

import io.strata.core.NodeContext;
import io.strata.core.auth.TokenVerifier;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a daemon's {@link TokenVerifier} up to date with the cluster manager's revoked tokens:
 * asks every {@link #PERIOD} and hands the ids to the verifier, which then refuses new
 * connections with them and the next request of connections they authenticated. A revocation
 * thus takes effect on this daemon within one period of being committed, plus the time the
 * manager takes to answer; while the manager cannot be reached the last list stays in force.
 */
public final class RevocationWatcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RevocationWatcher.class);
    /** How often the list is asked for: the bound on how long a revoked token keeps working. */
    public static final Duration PERIOD = Duration.ofSeconds(5);

    private final NodeContext ctx;
    private final MgmtdClient mgmtd;
    private final TokenVerifier verifier;
    private final Duration period;
    private volatile ScheduledFuture<?> next;
    private volatile boolean closed;
    private boolean warned;

    private RevocationWatcher(NodeContext ctx, MgmtdClient mgmtd, TokenVerifier verifier, Duration period) {
        this.ctx = ctx;
        this.mgmtd = mgmtd;
        this.verifier = verifier;
        this.period = period;
    }

    /**
     * Starts watching for the verifier of {@code ctx}; null when it has none (authentication is
     * off, nothing to revoke). The first ask is made at once.
     */
    public static RevocationWatcher start(NodeContext ctx, MgmtdClient mgmtd) {
        return start(ctx, mgmtd, PERIOD);
    }

    /** {@link #start(NodeContext, MgmtdClient)} asking every {@code period} (tests). */
    public static RevocationWatcher start(NodeContext ctx, MgmtdClient mgmtd, Duration period) {
        TokenVerifier v = ctx.verifier().orElse(null);
        if (v == null) {
            return null;
        }
        RevocationWatcher w = new RevocationWatcher(ctx, mgmtd, v, period);
        w.poll();
        return w;
    }

    private void poll() {
        if (closed) {
            return;
        }
        mgmtd.revokedAsync(period, period).whenComplete((list, error) -> {
            if (error == null) {
                Set<String> ids = new HashSet<>();
                list.forEach(r -> ids.add(r.tokenId()));
                if (!ids.equals(verifier.revoked())) {
                    LOG.info("{}: {} revoked token(s) known", ctx.name(), ids.size());
                }
                verifier.revoked(ids);
                warned = false;
            } else if (!warned) {
                warned = true;
                LOG.warn("{}: cannot read the revoked tokens from the cluster manager (the last list stays in force): {}",
                        ctx.name(), error.toString());
            }
            if (!closed) {
                try {
                    next = ctx.schedule(this::poll, period);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    closed = true; // the process is shutting down
                }
            }
        });
    }

    @Override
    public void close() {
        closed = true;
        ScheduledFuture<?> n = next;
        if (n != null) {
            n.cancel(false);
        }
    }
}
