package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.TargetId;
import io.strata.l3.StorageNode;
import io.strata.l3.engine.ChunkMeta;
import io.strata.testing.Eventually;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Deleted files' chunks are freed on every replica by the meta service's collector through
 * {@link L3ChunkReclaimer}, counted in the storage nodes' own chunk stores; an unlinked file
 * that is still open keeps its chunks until it is closed. (cli's GcIT does the same with the
 * real {@code strata meta} and storage node processes.)
 */
class GarbageTest {
    static long liveChunks(TestCluster c, InodeId inode) {
        long n = 0;
        for (int i = 1; i <= c.cluster.storage().nodeCount(); i++) {
            StorageNode node = c.cluster.storage().node(i);
            for (TargetId t : node.targets()) {
                for (ChunkMeta m : node.engine(t).scan()) {
                    if (m.id().inode().equals(inode) && m.committed() != null && !m.committed().removed() && m.committed().length() > 0) {
                        n++;
                    }
                }
            }
        }
        return n;
    }

    @Test
    void deletedFilesLeaveNoChunksBehind(@TempDir Path dir) {
        try (TestCluster c = TestCluster.start(dir, 71)) {
            StrataFileSystem fs = c.client("gc");
            fs.mkdirs("/g");
            List<InodeId> files = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                FileSystemTest.writeFile(fs, "/g/f" + i, FileSystemTest.random((i + 1) * 900_000, i));
                files.add(fs.stat("/g/f" + i).inode());
            }
            // 1, 2, 3 and 4 chunks of 1 MiB, three replicas each (commit records at non-tail replicas land with their next group commit)
            Eventually.await("all chunks committed on every replica", Duration.ofSeconds(20),
                    () -> java.util.Arrays.equals(files.stream().mapToLong(f -> liveChunks(c, f)).toArray(), new long[] {3, 6, 9, 12}));
            StrataFile open = fs.openRead("/g/f3");
            fs.delete("/g/f0");
            fs.delete("/g/f3");
            fs.rename("/g/f1", "/g/f2"); // replaces f2: its chunks go too
            c.collectGarbage();
            Eventually.await("chunks of the deleted files freed", Duration.ofSeconds(20),
                    () -> liveChunks(c, files.get(0)) == 0 && liveChunks(c, files.get(2)) == 0);
            assertThat(liveChunks(c, files.get(1))).as("the renamed file keeps its chunks").isEqualTo(6);
            assertThat(liveChunks(c, files.get(3))).as("an unlinked file still open keeps its chunks").isEqualTo(12);
            open.close();
            c.collectGarbage();
            Eventually.await("chunks of the closed unlinked file freed", Duration.ofSeconds(20), () -> liveChunks(c, files.get(3)) == 0);
            // truncating frees the chunks past the new length too
            fs.truncate("/g/f2", 100);
            Eventually.await("chunk 1 of the truncated file removed on every replica", Duration.ofSeconds(20),
                    () -> liveChunks(c, files.get(1)) == 3);
        }
    }
}
