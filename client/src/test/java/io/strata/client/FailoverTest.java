package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.StrataException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A storage node dies: reads go to another replica; writes fail within the timeout until routing drops the node. */
class FailoverTest {
    /** Writes to a dead node give up after 3 s, each attempt after 1 s. */
    private static ClientConfig shortTimeouts(ClientConfig cfg) {
        return cfg.withIoTimeout(Duration.ofSeconds(3)).withAttemptTimeout(Duration.ofSeconds(1));
    }

    /** A client whose L3 tier is wrapped in a {@link CountingTier}, put in {@code l3[0]} (to inject write failures). */
    private static StrataFileSystem countingClient(TestCluster c, CountingTier[] l3) {
        return c.client("w", c.config(), t -> l3[0] = new CountingTier(t, c.cluster.storage().clientContext("timer").scheduler()));
    }

    @Test
    void readsAreServedByTheOtherReplicasWhenANodeDies(@TempDir Path dir) {
        try (TestCluster c = TestCluster.start(dir, 61)) {
            StrataFileSystem fs = c.client("w");
            fs.mkdirs("/d");
            byte[] data = FileSystemTest.random(6 << 20, 1);
            FileSystemTest.writeFile(fs, "/d/f", data);
            c.cluster.storage().kill(2); // a replica of every chain (3 nodes, 3 replicas)
            for (int round = 0; round < 3; round++) { // random replica choice: some reads pick the dead one first
                StrataFileSystem r = c.client("r" + round);
                assertThat(FileSystemTest.readAll(r, "/d/f")).isEqualTo(data);
            }
        }
    }

    @Test
    void writesFailWithinTheTimeoutWhileAChainMemberIsDownAndSucceedOnceRoutingDropsIt(@TempDir Path dir) {
        try (TestCluster c = TestCluster.start(dir, 62)) {
            StrataFileSystem fs = c.client("w", FailoverTest::shortTimeouts);
            fs.mkdirs("/d");
            byte[] data = FileSystemTest.random(3 << 20, 2);
            c.cluster.storage().kill(3);
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> FileSystemTest.writeFile(fs, "/d/f", data))
                    .isInstanceOf(StrataException.class)
                    .satisfies(e -> assertThat(((StrataException) e).retryable()).as(e.toString()).isTrue());
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertThat(ms).as("the failed write gave up after about the io timeout").isLessThan(12_000);
            assertThat(fs.stat("/d/f").size()).as("nothing was published").isZero();
            // the manager's move: node 3's targets offline, at the tail of their chains
            Map<Integer, List<Integer>> order = new HashMap<>();
            for (int chain = 1; chain <= 6; chain++) {
                order.put(chain, c.cluster.storage().members(chain).stream().filter(n -> n != 3).toList());
            }
            c.cluster.storage().updateRouting(r -> c.cluster.storage().routingInfo(r.version() + 1, order));
            FileSystemTest.writeFile(fs, "/d/f", data);
            assertThat(FileSystemTest.readAll(c.client("r"), "/d/f")).isEqualTo(data);
        }
    }

    @Test
    void aGatheredWriteThatFailedWhileANodeWasDownIsSentAgainAndTheClosedFileIsWhole(@TempDir Path dir) {
        try (TestCluster c = TestCluster.start(dir, 63)) {
            StrataFileSystem fs = c.client("w", FailoverTest::shortTimeouts);
            fs.mkdirs("/d");
            byte[] data = FileSystemTest.random(1 << 20, 3);
            try (StrataFile f = fs.create("/d/f")) {
                c.cluster.storage().kill(3); // a member of every chain
                for (int off = 0; off < data.length; off += 64 << 10) {
                    f.write(off, data, off, 64 << 10); // gathered: each returns at once
                }
                assertThatThrownBy(f::fsync).as("the gathered write failed while node 3 was down").isInstanceOf(StrataException.class);
                c.cluster.storage().restart(3);
            } // close sends the failed write again
            assertThat(fs.stat("/d/f").size()).isEqualTo(data.length);
            assertThat(FileSystemTest.readAll(c.client("r"), "/d/f")).isEqualTo(data);
        }
    }

    @Test
    void aWriteOverAFailedOneIsSentAgainAfterItSoTheLaterBytesWin(@TempDir Path dir) {
        CountingTier[] l3 = new CountingTier[1];
        try (TestCluster c = TestCluster.start(dir, 64)) {
            StrataFileSystem fs = countingClient(c, l3);
            fs.mkdirs("/d");
            byte[] older = FileSystemTest.random(1 << 20, 4);
            byte[] newer = FileSystemTest.random(64 << 10, 5);
            try (StrataFile f = fs.create("/d/f")) {
                l3[0].delayMs = 300;
                l3[0].failWrites.set(1); // the first extent fails after 300 ms; the tier works again at once
                for (int off = 0; off < older.length; off += 64 << 10) {
                    f.write(off, older, off, 64 << 10);
                }
                f.write(0, newer, 0, newer.length); // sends the first extent, gathers this one
                // this extent waits for the first; sent alone after its failure, the first one's retry would overwrite it
                assertThatThrownBy(f::fsync).isInstanceOf(StrataException.class);
            }
            byte[] expected = older.clone();
            System.arraycopy(newer, 0, expected, 0, newer.length);
            assertThat(FileSystemTest.readAll(c.client("r"), "/d/f")).isEqualTo(expected);
        }
    }

    @Test
    void aHandleClosingLeavesTheFilesFailedBytesToAnotherHandleThatStillWritesIt(@TempDir Path dir) {
        CountingTier[] l3 = new CountingTier[1];
        try (TestCluster c = TestCluster.start(dir, 65)) {
            StrataFileSystem fs = countingClient(c, l3);
            fs.mkdirs("/d");
            byte[] data = FileSystemTest.random(1 << 20, 6);
            StrataFile first = fs.create("/d/f"); // a writing handle that writes nothing
            try (StrataFile writer = fs.open("/d/f", java.util.EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0644)) {
                l3[0].failWrites.set(1_000); // every write fails until the tier is back
                for (int off = 0; off < data.length; off += 64 << 10) {
                    writer.write(off, data, off, 64 << 10); // gathered: each returns at once
                }
                assertThatThrownBy(first::close).as("the other handle's close reports the failure").isInstanceOf(StrataException.class);
                l3[0].failWrites.set(0);
            } // the writer's close sends its bytes again: they were kept, not dropped by the first close
            assertThat(fs.stat("/d/f").size()).isEqualTo(data.length);
            assertThat(FileSystemTest.readAll(c.client("r"), "/d/f")).isEqualTo(data);
        }
    }
}
