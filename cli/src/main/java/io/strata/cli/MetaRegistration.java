package io.strata.cli;

import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.NodeRole;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A meta service's entry in the cluster manager: registered with role {@code meta} (no targets),
 * its lease renewed by heartbeats, registered again if the lease expired. Clients started with
 * only {@code --mgmtd} find the meta service through it ({@code MetaDiscovery}), and
 * {@code strata admin nodes} lists it.
 */
final class MetaRegistration implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetaRegistration.class);

    private final NodeContext ctx;
    private final MgmtdClient client;
    private final NodeInfo node;
    private final long incarnation;
    private volatile boolean closed;
    private volatile ScheduledFuture<?> next;

    private MetaRegistration(NodeContext ctx, MgmtdClient client, NodeInfo node) {
        this.ctx = ctx;
        this.client = client;
        this.node = node;
        this.incarnation = ctx.random().nextLong() & Long.MAX_VALUE;
    }

    static MetaRegistration start(NodeContext ctx, MgmtdClient client, NodeInfo node) {
        MetaRegistration r = new MetaRegistration(ctx, client, node);
        r.register();
        return r;
    }

    private void register() {
        if (closed) {
            return;
        }
        Duration t = Duration.ofSeconds(5);
        client.call(new MgmtdMessage.RegisterNode(node, NodeRole.META, incarnation, List.of()), MgmtdMessage.LeaseGranted.class, t, t)
                .whenComplete((g, e) -> {
                    if (e != null) {
                        LOG.info("meta service {}: registration with the cluster manager failed: {} (retrying)", node.hostPort(),
                                StrataException.wrap(e));
                        schedule(this::register, 1000);
                    } else {
                        LOG.info("meta service {} registered with the cluster manager as node {}", node.hostPort(), node.id().value());
                        schedule(this::heartbeat, g.heartbeatMillis());
                    }
                });
    }

    private void heartbeat() {
        if (closed) {
            return;
        }
        Duration t = Duration.ofSeconds(5);
        client.call(new MgmtdMessage.Heartbeat(node.id(), incarnation, List.of()), MgmtdMessage.LeaseGranted.class, t, t)
                .whenComplete((g, e) -> {
                    if (e == null) {
                        schedule(this::heartbeat, g.heartbeatMillis());
                    } else if (StrataException.wrap(e).status() == Status.LEASE_EXPIRED) {
                        register();
                    } else {
                        schedule(this::heartbeat, 1000);
                    }
                });
    }

    private void schedule(Runnable r, long ms) {
        if (closed) {
            return;
        }
        try {
            next = ctx.scheduler().schedule(r, Math.max(10, ms), TimeUnit.MILLISECONDS);
        } catch (RuntimeException rejected) {
            closed = true;
        }
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
