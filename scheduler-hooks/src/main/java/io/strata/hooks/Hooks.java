package io.strata.hooks;

import io.strata.client.StrataFileSystem;
import io.strata.core.NodeContext;
import io.strata.core.rpc.RpcOptions;
import io.strata.l2.pool.PrefetchClient;
import io.strata.placement.RoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.net.InetSocketAddress;
import java.time.Clock;

/**
 * The scheduler hooks of one process: the HTTP API and the planner behind it, over a file system
 * client (root), routing (to find the agents), and the cluster manager (where hints live). The
 * caller keeps {@code fs}, {@code routing} and {@code mgmtd}.
 */
public final class Hooks implements AutoCloseable {
    private final PrefetchClient prefetch;
    private final Planner planner;
    private final HooksServer server;

    private Hooks(PrefetchClient prefetch, Planner planner, HooksServer server) {
        this.prefetch = prefetch;
        this.planner = planner;
        this.server = server;
    }

    public static Hooks start(NodeContext ctx, HooksConfig config, StrataFileSystem fs, RoutingSource routing, MgmtdClient mgmtd,
                              RpcOptions rpc, Clock clock) {
        PrefetchClient prefetch = new PrefetchClient(ctx, routing, rpc);
        Planner planner = new Planner(new HintStore(mgmtd, config.planner().metaTimeout()), fs, routing, prefetch, config.planner(), clock,
                ctx.meters());
        planner.start();
        try {
            return new Hooks(prefetch, planner, HooksServer.start(ctx, planner, clock, config.listen()));
        } catch (RuntimeException e) {
            planner.close();
            prefetch.close();
            throw e;
        }
    }

    /** Where the API listens. */
    public InetSocketAddress address() {
        return server.address();
    }

    @Override
    public void close() {
        server.close();
        planner.close();
        prefetch.close();
    }
}
