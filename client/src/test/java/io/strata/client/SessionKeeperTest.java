package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.namespace.MetaStore;
import io.strata.namespace.StaticChainTables;
import io.strata.namespace.kv.KvStore;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client keeps its open files' sessions alive on its own: over a namespace whose session lease
 * is 400 ms, a file held open for three seconds is still open at the close, while a session of
 * a client id that nobody keeps alive ends meanwhile. The client paces itself by the lease the
 * namespace answers.
 */
class SessionKeeperTest {
    static final Duration LEASE = Duration.ofMillis(400);

    @Test
    void openFilesOutliveManyLeasesWhileTheClientRuns(@TempDir Path dir) throws Exception {
        try (TestCluster c = TestCluster.start(dir.resolve("cluster"), 81);
             NodeContext metaCtx = NodeContext.seeded("meta", 81);
             KvStore kv = LmdbKvStore.open(dir.resolve("kv"), LmdbKvStore.Options.DEFAULTS.withSync(false), null);
             MetaStore meta = new MetaStore(metaCtx, kv, StaticChainTables.uniform(6), null,
                     MetaStore.Options.DEFAULTS.withGc(Duration.ZERO, Duration.ZERO).withSessionLease(LEASE));
             NodeContext ctx = NodeContext.seeded("keeper", 82);
             StrataFileSystem fs = StrataFileSystem.create(ctx, c.config().withName("keeper"), meta, c.cluster.routingSource(), List.of())) {
            StrataFile f = fs.create("/held.bin");
            long inode = fs.stat("/held.bin").inode().value();
            OpenResult orphan = Futures.join(meta.openAsync(Caller.ROOT, io.strata.core.InodeId.of(inode), OpenFlags.READ | OpenFlags.TRACK, 12345, null),
                    Duration.ofSeconds(10));
            Thread.sleep(LEASE.toMillis() * 7);
            assertThat(fs.core().keeper().interval()).as("a quarter of the lease the namespace answered").isEqualTo(LEASE.dividedBy(4));
            f.close(); // fails with STALE_HANDLE if the session had been ended
            assertThatThrownBy(() -> Futures.join(meta.closeAsync(Caller.ROOT, io.strata.core.InodeId.of(inode), orphan.sessionId(), -1,
                    false, null), Duration.ofSeconds(10)))
                    .as("a session nobody keeps alive").satisfies(e -> assertThat(StrataException.wrap(e).status()).isEqualTo(Status.STALE_HANDLE));
            assertThat(metaCtx.meters().find("strata.meta.sessions.pruned").counter().count()).isEqualTo(1);
        }
    }
}
