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
            StrataFileSystem fs = c.client("w", cfg -> cfg.withIoTimeout(Duration.ofSeconds(3)).withAttemptTimeout(Duration.ofSeconds(1)));
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
}
