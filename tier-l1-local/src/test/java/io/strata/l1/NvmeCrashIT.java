package io.strata.l1;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Futures;
import io.strata.core.util.JavaProcess;
import io.strata.l3.StorageClient;
import io.strata.harness.StorageCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The NVMe tier survives its process: a client (a real child process, L1 over the real L3
 * storage client, storage nodes in this JVM) fills the NVMe tier and is killed with SIGKILL, or
 * halts itself in the middle of writing a block file, before fsync, or before the index commit.
 * Reopened on the same directory, L1 serves every block that was cached before the crash
 * without asking L3 again, serves every other block correctly (never a torn or unindexed file),
 * counts no corruption, and leaves no orphan or temporary file behind.
 */
class NvmeCrashIT {
    @TempDir
    static Path shared;
    static StorageCluster cluster;

    @BeforeAll
    static void startStorage() {
        cluster = StorageCluster.builder(shared.resolve("storage"), 77).nodes(3).chains(1).start();
        StorageClient w = cluster.client("loader");
        for (int c = 0; c < 8; c++) {
            ByteBuf b = Unpooled.wrappedBuffer(CrashChild.fillData(c));
            Futures.join(w.writeAsync(CrashChild.fillChunk(c), 0, b, IoOptions.DEFAULT));
            b.release();
        }
    }

    @AfterAll
    static void stopStorage() {
        cluster.close();
    }

    @ParameterizedTest(name = "client killed at {0}")
    @ValueSource(strings = {"none", NvmeStoreFaults.BLOCK_WRITE, NvmeStoreFaults.BLOCK_SYNC, NvmeStoreFaults.INDEX_COMMIT})
    void theCacheSurvivesAKilledClient(String point, @TempDir Path dir) throws Exception {
        CrashChild.writeRouting(cluster.routing().current(), dir);
        try (JavaProcess p = JavaProcess.start("l1-client", CrashChild.class.getName(), List.of("fill", dir.toString(), point),
                List.of("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), Map.of(), dir.resolve("child.log"))) {
            if (point.equals("none")) {
                p.awaitReady(() -> Files.exists(dir.resolve("done")), Duration.ofSeconds(60));
                p.kill();
            } else {
                assertThat(p.waitFor(Duration.ofSeconds(60))).as("the child halts at %s", point).isTrue();
                assertThat(p.exitValue()).as("halted by the armed crash; log:\n%s", p.tail(30)).isEqualTo(137);
            }
        }
        assertThat(dir.resolve("filled")).exists();
        NodeContext ctx = NodeContext.seeded("l1-after", 78);
        CountingTier below = new CountingTier(cluster.client("after-" + point));
        IoOptions io = new IoOptions(1, QosClass.INTERACTIVE, Duration.ofSeconds(20));
        try (L1Tier l1 = new L1Tier(ctx, CrashChild.config(dir.resolve("nvme")), below)) {
            for (int c = 0; c < 4; c++) {
                assertThat(Fixture.read(l1, CrashChild.fillChunk(c), 0, CrashChild.CHUNK, io)).isEqualTo(CrashChild.fillData(c));
            }
            assertThat(below.reads.get()).as("blocks cached before the crash are served without asking L3").isZero();
            for (int c = 4; c < 8; c++) {
                assertThat(Fixture.read(l1, CrashChild.fillChunk(c), 0, CrashChild.CHUNK, io)).isEqualTo(CrashChild.fillData(c));
            }
            if (point.equals("none")) {
                assertThat(below.reads.get()).isZero();
            }
            assertThat(l1.stats().corruptions()).isZero();
            Futures.join(l1.nvme().barrier());
            try (var files = Files.walk(dir.resolve("nvme").resolve("blocks"))) {
                List<Path> all = files.filter(Files::isRegularFile).toList();
                assertThat(all).allSatisfy(f -> assertThat(f.toString()).endsWith(".blk"));
                assertThat(all).hasSize(l1.nvme().blockCount()); // every file indexed, every entry a file
            }
        } finally {
            ctx.close();
        }
    }
}
