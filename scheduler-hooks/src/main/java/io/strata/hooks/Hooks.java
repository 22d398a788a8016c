package io.strata.hooks;

import io.strata.client.StrataFileSystem;
import io.strata.core.NodeContext;
import io.strata.core.rpc.RpcOptions;
import io.strata.l2.pool.PrefetchClient;
import io.strata.placement.RoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.util.Optional;

/**
 * The scheduler hooks of one process: the HTTP API (HTTPS when the config has TLS) and the
 * planner behind it, over a file system client (root), routing (to find the agents), and the
 * cluster manager (where hints live). The caller keeps {@code fs}, {@code routing} and
 * {@code mgmtd}.
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
        Optional<HooksTls> tls = HooksTls.of(config.tls()); // first: a bad [tls] file stops the start before anything runs
        PrefetchClient prefetch = new PrefetchClient(ctx, routing, rpc);
        Planner planner = new Planner(new HintStore(mgmtd, config.planner().metaTimeout()), fs, routing, prefetch, config.planner(), clock,
                ctx.meters());
        planner.start();
        try {
            return new Hooks(prefetch, planner, HooksServer.start(ctx, planner, clock, config.listen(), tls));
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

    /** The API's base URL, {@code https://HOST:PORT} with TLS, else {@code http://HOST:PORT}. */
    public String url() {
        InetSocketAddress a = server.address();
        String host = a.getHostString().contains(":") ? "[" + a.getHostString() + "]" : a.getHostString();
        return (server.https() ? "https://" : "http://") + host + ":" + a.getPort();
    }

    @Override
    public void close() {
        server.close();
        planner.close();
        prefetch.close();
    }
}
