package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.ChainId;
import io.strata.core.InodeId;
import io.strata.core.TargetId;
import io.strata.storage.StorageNode;
import io.strata.storage.engine.ChunkMeta;
import io.strata.protocol.meta.Layout;
import io.strata.core.util.Eventually;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Striping: chunk i of a file lands on {@code layout.chains[i % width]} (checked on the storage
 * nodes' own chunk stores), and a large read or write is split per chunk and issued at once
 * (with each tier call delayed, the calls overlap).
 */
class StripingTest {
    @TempDir
    static Path dir;
    static TestCluster cluster;
    static CountingTier[] l3 = new CountingTier[1];
    static StrataFileSystem fs;

    @BeforeAll
    static void start() {
        cluster = TestCluster.start(dir, 21);
        fs = cluster.client("striping", cluster.config(), t -> l3[0] = new CountingTier(t, cluster.cluster.storage().clientContext("timer").scheduler()));
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    /** chunk index -> chains holding a live copy of it, over every target of every node. */
    static Map<Integer, List<ChainId>> where(InodeId inode) {
        Map<Integer, List<ChainId>> out = new HashMap<>();
        for (int n = 1; n <= cluster.cluster.storage().nodeCount(); n++) {
            StorageNode node = cluster.cluster.storage().node(n);
            for (TargetId t : node.targets()) {
                for (ChunkMeta m : node.engine(t).scan()) {
                    if (m.id().inode().equals(inode) && m.committed() != null && !m.committed().removed()) {
                        out.computeIfAbsent(m.id().index(), k -> new ArrayList<>()).add(ChainId.of((int) (t.value() % 1000)));
                    }
                }
            }
        }
        return out;
    }

    @Test
    void chunkIGoesToChainIModWidthOnEveryReplica() {
        fs.mkdirs("/stripe");
        fs.setPolicy("/stripe", "stripe.width=4", "stripe.chunk-size=1MiB");
        byte[] data = FileSystemTest.random(10 << 20, 7);
        FileSystemTest.writeFile(fs, "/stripe/f", data);
        FileStatus st = fs.stat("/stripe/f");
        Layout layout = st.layout();
        assertThat(layout.stripeWidth()).isEqualTo(4);
        assertThat(layout.chains()).doesNotHaveDuplicates();
        // the head answers the client before it records the commit (craq.md, head step 5): wait
        // until every replica shows every chunk committed
        Eventually.await("3 committed copies of each chunk", Duration.ofSeconds(10),
                () -> where(st.inode()).values().stream().filter(l -> l.size() == 3).count() == 10);
        Map<Integer, List<ChainId>> where = where(st.inode());
        assertThat(where.keySet()).containsExactlyInAnyOrder(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
        for (int i = 0; i < 10; i++) {
            // three replicas, all on the chain the layout names for chunk i
            assertThat(where.get(i)).as("chunk " + i).hasSize(3).containsOnly(layout.chainOf(i));
        }
        assertThat(FileSystemTest.readAll(fs, "/stripe/f")).isEqualTo(data);
    }

    @Test
    void aLargeWriteAndALargeReadRunOnSeveralChainsAtOnce() {
        fs.mkdirs("/parallel");
        byte[] data = FileSystemTest.random(8 << 20, 8);
        l3[0].delayMs = 100;
        try (StrataFile f = fs.create("/parallel/f")) {
            l3[0].reset();
            f.write(0, data, 0, data.length); // one 8 MiB write: 8 chunk writes
            f.fsync();
            assertThat(l3[0].writes.get()).isEqualTo(8);
            assertThat(l3[0].maxInFlight.get()).as("chunk writes in flight at once").isGreaterThanOrEqualTo(4);
            l3[0].reset();
            ByteBuffer b = ByteBuffer.allocate(8 << 20);
            assertThat(f.read(0, b)).isEqualTo(8 << 20);
            assertThat(b.array()).isEqualTo(data);
            assertThat(l3[0].maxInFlight.get()).as("chunk reads in flight at once").isGreaterThanOrEqualTo(4);
        } finally {
            l3[0].delayMs = 0;
        }
    }

    @Test
    void smallSequentialWritesAreGatheredIntoChunkWrites() {
        fs.mkdirs("/gather");
        byte[] data = FileSystemTest.random(4 << 20, 9);
        try (StrataFile f = fs.create("/gather/f")) {
            l3[0].reset();
            for (int off = 0; off < data.length; off += 128 << 10) {
                f.write(off, data, off, 128 << 10); // what FUSE sends with big_writes
            }
            f.fsync();
            // 32 writes of 128 KiB became one 4 MiB extent: four whole-chunk writes
            assertThat(l3[0].writes.get()).isEqualTo(4);
        }
        assertThat(Arrays.equals(FileSystemTest.readAll(fs, "/gather/f"), data)).isTrue();
    }
}
