package io.strata.client;

import io.strata.protocol.meta.MetaMessages;
import io.strata.core.NodeContext;
import io.strata.core.rpc.RpcClient;
import io.strata.core.tier.Tier;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.MetaClient;
import io.strata.namespace.service.MetaServer;
import io.strata.harness.LocalCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The harness's local cluster for client tests (storage nodes and the meta service in this JVM)
 * and clients that share the cluster's routing source, so a test can change routing as a manager
 * would.
 */
final class TestCluster implements AutoCloseable {
    final LocalCluster cluster;
    private final long seed;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    private TestCluster(LocalCluster.Builder b, long seed) {
        this.seed = seed;
        this.cluster = b.metaInProcess().start();
    }

    static TestCluster start(Path dir, long seed) {
        return start(dir, seed, b -> b);
    }

    static TestCluster start(Path dir, long seed, UnaryOperator<LocalCluster.Builder> settings) {
        return new TestCluster(settings.apply(LocalCluster.builder(dir, seed).storageNodes(3).chains(6).metaSync(false)), seed);
    }

    MetaServer meta() {
        return cluster.meta();
    }

    ClientConfig config() {
        return ClientConfig.of(List.of(cluster.metaAddress()), cluster.routing()).withIoTimeout(Duration.ofSeconds(20));
    }

    /** A client named {@code name} over the cluster's shared routing, L3 wrapped by {@code wrap}. */
    StrataFileSystem client(String name, ClientConfig cfg, UnaryOperator<Tier> wrap) {
        NodeContext ctx = NodeContext.seeded(name, seed);
        RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, cfg.rpc());
        MetaClient mc = new MetaClient(ctx, rpc, cfg.meta(), Duration.ofSeconds(10), 4);
        StrataFileSystem fs = StrataFileSystem.create(ctx, cfg.withName(name), mc, cluster.routingSource(), List.of(rpc, ctx), wrap);
        synchronized (closeables) {
            closeables.add(fs);
        }
        return fs;
    }

    StrataFileSystem client(String name) {
        return client(name, config(), t -> t);
    }

    StrataFileSystem client(String name, UnaryOperator<ClientConfig> cfg) {
        return client(name, cfg.apply(config()), t -> t);
    }

    /** Runs the collector once now; the number of files whose chunks were freed. */
    int collectGarbage() {
        return Futures.join(cluster.meta().meta().collectGarbageAsync(), Duration.ofSeconds(60));
    }

    @Override
    public void close() {
        synchronized (closeables) {
            for (int i = closeables.size() - 1; i >= 0; i--) {
                try {
                    closeables.get(i).close();
                } catch (Exception ignored) {
                    // best effort
                }
            }
            closeables.clear();
        }
        cluster.close();
    }
}
