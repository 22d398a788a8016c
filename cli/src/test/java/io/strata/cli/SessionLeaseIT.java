package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.strata.config.ConfigNode;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.core.util.JavaProcess;
import io.strata.fuse.FuseMount;
import io.strata.harness.LocalCluster;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.namespace.MetaStore;
import io.strata.namespace.TierChunkReclaimer;
import io.strata.namespace.service.MetaConfig;
import io.strata.namespace.service.MetaServer;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.testing.Slow;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A FUSE mount killed with SIGKILL in the middle of a write leaves nothing behind: on a local
 * cluster whose meta service has a 3 s session lease, mount A (its own process, as
 * {@code strata mount}) holds a file open that mount B then removes, and writes 16 MiB past the
 * published end of another file without closing it; then its process is killed. Once the lease has passed, the
 * unlinked file is gone with its chunks, and the chunks past the other file's length are gone
 * too: mount B (another process, whose keep-alives keep its own files open through several
 * leases) writes far past the end, leaving a hole over where A's bytes were, and then extends the
 * file with ftruncate, and reads zeros in both places and the published bytes unchanged.
 */
@Slow
class SessionLeaseIT {
    static final Duration LEASE = Duration.ofSeconds(3);
    static final int PUBLISHED = (1 << 20) + 300_000;
    static final IoOptions IO = new IoOptions(0, QosClass.BACKGROUND, Duration.ofSeconds(30));

    @Test
    void aKilledMountsSessionsEndAndBytesItNeverPublishedNeverReappear(@TempDir Path dir) throws Exception {
        Optional<String> noFuse = FuseMount.unavailable();
        assumeTrue(noFuse.isEmpty(), () -> "FUSE is not available: " + noFuse.orElse(""));
        try (LocalCluster c = LocalCluster.builder(dir.resolve("cluster"), 17).storageNodes(3).chains(6).metaSync(false)
                .metaInProcess().start()) {
            // the harness's meta service, replaced by one on the same address and store with a short lease
            c.killMeta();
            Path metaToml = Files.writeString(dir.resolve("meta-lease.toml"),
                    c.metaToml().replace("[meta]\n", "[meta]\nsession-lease = \"" + LEASE.toSeconds() + "s\"\n"));
            MetaConfig cfg = MetaConfig.read(ConfigNode.load(metaToml));
            assertThat(cfg.options().sessionLease()).isEqualTo(LEASE);
            try (NodeContext ctx = NodeContext.seeded("meta", 17);
                 StorageClient storage = new StorageClient(ctx, c.routingSource(), cfg.node().rpc(), StorageClientOptions.DEFAULTS);
                 MetaServer server = MetaServer.start(ctx, cfg, null, new TierChunkReclaimer(storage, Duration.ofSeconds(30)))) {
                run(c, dir, server.meta(), storage, ctx.meters());
            }
        }
    }

    private static void run(LocalCluster c, Path dir, MetaStore meta, StorageClient storage, MeterRegistry meters) throws Exception {
        Path mntA = Files.createDirectories(dir.resolve("mnt-a"));
        Path mntB = Files.createDirectories(dir.resolve("mnt-b"));
        JavaProcess a = mount(c, dir, "mount-a", mntA);
        mount(c, dir, "mount-b", mntB);
        FileChannel held = null;
        FileChannel writer = null;
        FileChannel heldHidden = null;
        try {
            byte[] published = new byte[PUBLISHED];
            new Random(3).nextBytes(published);
            Files.write(mntA.resolve("keep.bin"), published);
            Files.write(mntA.resolve("gone.bin"), new byte[3 << 20]);
            InodeAttrs keep = meta.resolveAsync(Caller.ROOT, "/keep.bin").join();
            InodeAttrs gone = meta.resolveAsync(Caller.ROOT, "/gone.bin").join();
            int cs = keep.layout().chunkSize();
            long firstPast = PUBLISHED / cs + 1; // the first chunk wholly past the published length

            // through mount A: gone.bin held open (for writing as well: a read-only open holds nothing against another
            // mount's unlink); keep.bin written 16 MiB past its end, never closed. This JVM holds the descriptors (a shell
            // would publish: every close(2) of a duplicated descriptor is a FUSE flush)
            held = FileChannel.open(mntA.resolve("gone.bin"), StandardOpenOption.READ, StandardOpenOption.WRITE);
            writer = FileChannel.open(mntA.resolve("keep.bin"), StandardOpenOption.WRITE);
            ByteBuffer junk = ByteBuffer.allocate(16 << 20);
            new Random(4).nextBytes(junk.array());
            while (junk.hasRemaining()) {
                writer.write(junk, PUBLISHED + junk.position());
            }
            assertThat(Futures.join(storage.chunksOfAsync(keep.layout().chunks(keep.id()), firstPast, IO), Duration.ofSeconds(30)))
                    .as("chunks past the published length on the storage nodes").isNotEmpty();
            // another node removes the file A holds open
            Files.delete(mntB.resolve("gone.bin"));
            // and A removes a file it holds open (read-only) itself: libfuse only renames it (.fuse_hidden*) and removes that
            // name at the release; the mount pins it with a session first, which ends with the mount's lease
            Files.write(mntA.resolve("hidden.bin"), new byte[1 << 20]);
            InodeAttrs hidden = meta.resolveAsync(Caller.ROOT, "/hidden.bin").join();
            heldHidden = FileChannel.open(mntA.resolve("hidden.bin"), StandardOpenOption.READ);
            Files.delete(mntA.resolve("hidden.bin"));
            assertThat(hiddenNames(mntB)).as("libfuse's hidden name, seen from B").hasSize(1);
            assertThat(meta.getattrAsync(Caller.ROOT, gone.id()).join().nlink()).as("unlinked, kept for A's session").isZero();
            assertThat(meta.getattrAsync(Caller.ROOT, keep.id()).join().length()).isEqualTo(PUBLISHED);

            // mount A dies mid-write
            long killedAt = System.nanoTime();
            a.kill();
            assertThat(a.waitFor(Duration.ofSeconds(10))).isTrue();
            FuseMount.unmount(mntA, true);

            Eventually.await("the unlinked file A held is freed", Duration.ofSeconds(20), () -> notFound(meta, gone));
            Eventually.await("the file A removed while it held it is freed, hidden name and all", Duration.ofSeconds(20),
                    () -> notFound(meta, hidden) && hiddenNames(mntB).isEmpty());
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            assertThat(ms).as("not before the lease has passed").isGreaterThanOrEqualTo(LEASE.toMillis() - 1000);
            Eventually.await("gone.bin's chunks removed", Duration.ofSeconds(20), () -> {
                Futures.join(meta.collectGarbageAsync(), Duration.ofSeconds(30));
                return Futures.join(storage.chunksOfAsync(gone.layout().chunks(gone.id()), 0, IO), Duration.ofSeconds(30)).length == 0;
            });
            Eventually.await("keep.bin cut back to its length", Duration.ofSeconds(20), () -> meta.trimQueueLengthAsync().join() == 0
                    && Futures.join(storage.chunksOfAsync(keep.layout().chunks(keep.id()), firstPast, IO), Duration.ofSeconds(30)).length == 0);
            assertThat(meta.getattrAsync(Caller.ROOT, keep.id()).join().length()).as("nothing A wrote was published").isEqualTo(PUBLISHED);

            // mount B extends the file: a write far past the end leaves a hole where A's bytes were, then ftruncate grows it more
            Path keepB = mntB.resolve("keep.bin");
            long holeEnd = PUBLISHED + (20L << 20);
            try (RandomAccessFile f = new RandomAccessFile(keepB.toFile(), "rw")) {
                f.seek(holeEnd);
                f.write(new byte[] {1, 2, 3, 4});
                Thread.sleep(LEASE.toMillis() * 2); // B's session outlives two leases: its keep-alives hold it
                f.setLength(holeEnd + (8L << 20));
            }
            assertThat(Files.size(keepB)).isEqualTo(holeEnd + (8L << 20));
            byte[] back = Files.readAllBytes(keepB);
            assertThat(Arrays.copyOfRange(back, 0, PUBLISHED)).as("the published bytes").isEqualTo(published);
            assertThat(firstNonZero(back, PUBLISHED, (int) holeEnd)).as("the hole over A's unpublished bytes").isEqualTo(-1);
            assertThat(Arrays.copyOfRange(back, (int) holeEnd, (int) holeEnd + 4)).containsExactly(1, 2, 3, 4);
            assertThat(firstNonZero(back, (int) holeEnd + 4, back.length)).as("the ftruncate extension").isEqualTo(-1);
            assertThat(meters.find("strata.meta.sessions.pruned").counter().count()).as("the sessions pruned: A's three").isEqualTo(3);
        } finally {
            closeQuietly(held);
            closeQuietly(writer);
            closeQuietly(heldHidden);
            if (FuseMount.isMounted(mntA)) {
                FuseMount.unmount(mntA, true);
            }
        }
    }

    /** A descriptor on the dead mount: its close fails, and no flush reaches anyone. */
    private static void closeQuietly(FileChannel ch) {
        try {
            if (ch != null) {
                ch.close();
            }
        } catch (java.io.IOException e) {
            // the mount is gone
        }
    }

    /** The names libfuse gave files unlinked while open, in the mount's root. */
    private static List<String> hiddenNames(Path mnt) {
        try (var names = Files.list(mnt)) {
            return names.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(".fuse_hidden")).toList();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static boolean notFound(MetaStore meta, InodeAttrs f) {
        try {
            meta.getattrAsync(Caller.ROOT, f.id()).join();
            return false;
        } catch (RuntimeException e) {
            return StrataException.wrap(e).status() == Status.NOT_FOUND;
        }
    }

    private static int firstNonZero(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] != 0) {
                return i;
            }
        }
        return -1;
    }

    /** {@code strata mount --config} as its own process, as a compute node runs it. */
    private static JavaProcess mount(LocalCluster c, Path dir, String name, Path mnt) throws Exception {
        Path data = Files.createDirectories(dir.resolve(name));
        String toml = c.clientToml("", "[mount]\ndir = \"" + mnt + "\"\n\n[node]\nname = \"" + name + "\"\ndata = \"" + data + "\"\n");
        Path config = Files.writeString(data.resolve(name + ".toml"), toml);
        return c.startProcess(name, StrataMain.class.getName(), List.of("mount", "--config", config.toString()),
                data.resolve(DaemonRuntime.READY_FILE));
    }
}
