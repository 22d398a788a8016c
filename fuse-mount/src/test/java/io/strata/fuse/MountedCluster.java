package io.strata.fuse;

import io.strata.client.ClientConfig;
import io.strata.client.StrataFileSystem;
import io.strata.core.NodeContext;
import io.strata.harness.LocalCluster;
import io.strata.harness.StorageCluster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
                .metaInProcess().start();
        NodeContext ctx = null;
        StrataFileSystem f = null;
        try {
            ctx = NodeContext.seeded("mount", seed);
            ClientConfig cfg = settings.apply(ClientConfig.of(List.of(c.metaAddress()), c.routing()).withName("mount"));
            f = StrataFileSystem.connect(ctx, cfg);
            Path m = Files.createDirectories(dir.resolve("mnt"));
            this.mount = FuseMount.mount(f, opts == null ? FuseUnderTest.at(m) : opts, ctx.meters());
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

    /** A cluster mounted through {@code libfuse} (whatever {@link FuseUnderTest} says). */
    static MountedCluster start(Path dir, long seed, MountOptions.Libfuse libfuse) {
        return new MountedCluster(dir, seed, StorageCluster.Mode.IN_PROCESS, c -> c, MountOptions.at(dir.resolve("mnt")).withFuse(libfuse));
    }

    static MountedCluster start(Path dir, long seed, StorageCluster.Mode mode, UnaryOperator<ClientConfig> settings) {
        return new MountedCluster(dir, seed, mode, settings, null);
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
