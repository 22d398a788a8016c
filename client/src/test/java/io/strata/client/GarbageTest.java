package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.storage.StorageNode;
import io.strata.storage.engine.ChunkMeta;
import io.strata.core.util.Eventually;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Deleted files' chunks are freed on every replica by the meta service's collector through
 * {@link TierChunkReclaimer}, counted in the storage nodes' own chunk stores; an unlinked file
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

    /**
     * A read-only open holds nothing in the namespace. A file unlinked or renamed over by the
     * client that reads it keeps its chunks until that client closes it (the client pins it
     * before the removal); a file another client unlinks goes at once, and once the collector
     * removed its chunks a read fails with STALE_HANDLE: never zeros in place of its bytes.
     */
    @Test
    void aReaderKeepsAFileItsOwnClientRemovesButNotOneRemovedElsewhere(@TempDir Path dir) {
        try (TestCluster c = TestCluster.start(dir, 73)) {
            StrataFileSystem writer = c.client("writer");
            StrataFileSystem here = c.client("here");
            writer.mkdirs("/r");
            byte[] a = FileSystemTest.random(1_500_000, 1);
            byte[] b = FileSystemTest.random(1_500_000, 2);
            byte[] x = FileSystemTest.random(1_500_000, 3);
            FileSystemTest.writeFile(writer, "/r/a", a);
            FileSystemTest.writeFile(writer, "/r/b", b);
            FileSystemTest.writeFile(writer, "/r/x", x);
            FileSystemTest.writeFile(writer, "/r/new", new byte[10]);
            InodeId ai = writer.stat("/r/a").inode();
            InodeId bi = writer.stat("/r/b").inode();
            InodeId xi = writer.stat("/r/x").inode();
            // 2 chunks of 1 MiB, three replicas each
            Eventually.await("all chunks committed on every replica", Duration.ofSeconds(20),
                    () -> liveChunks(c, ai) == 6 && liveChunks(c, bi) == 6 && liveChunks(c, xi) == 6);
            try (StrataFile ra = here.openRead("/r/a"); StrataFile rb = here.openRead("/r/b"); StrataFile rx = here.openRead("/r/x")) {
                here.delete("/r/a");
                here.rename("/r/new", "/r/b");
                writer.delete("/r/x");
                c.collectGarbage();
                Eventually.await("the file removed by the other client freed", Duration.ofSeconds(20), () -> liveChunks(c, xi) == 0);
                assertThat(liveChunks(c, ai)).as("unlinked here while open here").isEqualTo(6);
                assertThat(liveChunks(c, bi)).as("renamed over here while open here").isEqualTo(6);
                assertThat(FileSystemTest.readAll(ra)).isEqualTo(a);
                assertThat(FileSystemTest.readAll(rb)).isEqualTo(b);
                assertThatThrownBy(() -> rx.read(0, java.nio.ByteBuffer.allocate(4096))).isInstanceOf(StrataException.class)
                        .satisfies(e -> assertThat(((StrataException) e).status()).as(e.getMessage()).isEqualTo(Status.STALE_HANDLE));
            }
            c.collectGarbage();
            Eventually.await("the closed files freed", Duration.ofSeconds(20), () -> liveChunks(c, ai) == 0 && liveChunks(c, bi) == 0);
        }
    }

    /**
     * pjdfstest's ftruncate/12.t: a file truncated to 999,999,999,999,999 bytes (953,674,317
     * chunks of 1 MiB by length) and then unlinked. Truncate and the collector cost what the
     * file holds (here two real chunks, one near the end), never one call per chunk index of its
     * length: both finish in seconds, and the meta service answers requests all along.
     */
    @Test
    void aPetabyteSparseFileIsTruncatedAndFreedByTheChunksItHas(@TempDir Path dir) {
        try (TestCluster c = TestCluster.start(dir, 72)) {
            StrataFileSystem fs = c.client("sparse");
            long huge = 999_999_999_999_999L;
            try (StrataFile f = fs.create("/sparse")) {
                f.write(0, new byte[] {1, 2, 3}, 0, 3);
                f.truncate(huge);
                f.write(huge - 4096, new byte[4096], 0, 4096);
            }
            InodeId inode = fs.stat("/sparse").inode();
            assertThat(fs.stat("/sparse").size()).isEqualTo(huge);
            Eventually.await("both chunks committed on every replica", Duration.ofSeconds(20), () -> liveChunks(c, inode) == 6);
            fs.truncate("/sparse", 1 << 20); // drops the chunk near the end, keeps chunk 0
            Eventually.await("the far chunk removed on every replica", Duration.ofSeconds(20), () -> liveChunks(c, inode) == 3);
            fs.truncate("/sparse", huge);
            fs.delete("/sparse");
            long t0 = System.nanoTime();
            // the periodic pass may free it first (it yields to the client's changes just made, so it can still be running)
            assertThat(c.collectGarbage()).isLessThanOrEqualTo(1);
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("one pass over a petabyte sparse file").isLessThan(Duration.ofSeconds(30));
            Eventually.await("every chunk freed", Duration.ofSeconds(20), () -> liveChunks(c, inode) == 0);
            fs.mkdirs("/after");
            assertThat(fs.stat("/after").isDirectory()).isTrue();
        }
    }
}
