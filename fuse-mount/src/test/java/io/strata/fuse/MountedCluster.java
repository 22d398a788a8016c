package io.strata.fuse;

import io.strata.client.ClientConfig;
import io.strata.namespace.TierChunkReclaimer;
import io.strata.client.StrataFileSystem;
import io.strata.config.ConfigNode;
import io.strata.core.NodeContext;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.namespace.service.MetaConfig;
import io.strata.namespace.service.MetaServer;
import io.strata.placement.StaticRoutingSource;
import io.strata.testing.TestNodes;
import io.strata.harness.LocalCluster;
import io.strata.harness.StorageCluster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * A local cluster (storage nodes in this JVM or as processes, the meta service in this JVM) with
 * a client and a FUSE mount of it in this JVM, at {@link #mnt}. Closing unmounts first.
 */
final class MountedCluster implements AutoCloseable {
    final LocalCluster cluster;
    final StrataFileSystem fs;
    final FuseMount mount;
    final Path mnt;
    private final NodeContext clientCtx;

    private MountedCluster(Path dir, long seed, StorageCluster.Mode mode, UnaryOperator<ClientConfig> settings, MountOptions opts) {
        LocalCluster c = LocalCluster.builder(dir, seed).storageNodes(3).chains(6).metaSync(false).storageMode(mode)
                .metaInProcess(cfg -> startMeta(cfg, seed)).start();
        NodeContext ctx = null;
        StrataFileSystem f = null;
        try {
            ctx = TestNodes.context("mount", seed);
            ClientConfig cfg = settings.apply(ClientConfig.of(List.of(c.metaAddress()), c.routing()).withName("mount"));
            f = StrataFileSystem.connect(ctx, cfg);
            Path m = Files.createDirectories(dir.resolve("mnt"));
            this.mount = FuseMount.mount(f, opts == null ? MountOptions.at(m) : opts, ctx.meters());
            this.mnt = m;
        } catch (RuntimeException | IOException e) {
            if (f != null) {
                f.close();
            }
            if (ctx != null) {
                ctx.close();
            }
            c.close();
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
        this.cluster = c;
        this.fs = f;
        this.clientCtx = ctx;
    }

    static MountedCluster start(Path dir, long seed) {
        return new MountedCluster(dir, seed, StorageCluster.Mode.IN_PROCESS, c -> c, null);
    }

    static MountedCluster start(Path dir, long seed, StorageCluster.Mode mode, UnaryOperator<ClientConfig> settings) {
        return new MountedCluster(dir, seed, mode, settings, null);
    }

    private static LocalCluster.Started startMeta(Path configFile, long seed) {
        ConfigNode root = ConfigNode.load(configFile);
        MetaConfig cfg = MetaConfig.read(root);
        StaticRoutingSource routing = StaticRoutingSource.fromConfig(root.section("routing"));
        NodeContext ctx = TestNodes.context("meta", seed);
        StorageClient gc = new StorageClient(ctx, routing, cfg.node().rpc(), StorageClientOptions.DEFAULTS);
        MetaServer meta = MetaServer.start(ctx, cfg, null, new TierChunkReclaimer(gc, Duration.ofSeconds(30)));
        return new LocalCluster.Started(meta.address(), () -> {
            meta.close();
            gc.close();
            ctx.close();
        });
    }

    /** Another client of the same cluster (its own context), e.g. to check what the mount published. */
    io.micrometer.core.instrument.MeterRegistry meters() {
        return clientCtx.meters();
    }

    StrataFileSystem client(String name) {
        return StrataFileSystem.connect(ClientConfig.of(List.of(cluster.metaAddress()), cluster.routing()).withName(name));
    }

    @Override
    public void close() {
        try {
            mount.close();
        } finally {
            fs.close();
            clientCtx.close();
            cluster.close();
        }
    }
}
