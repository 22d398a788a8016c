package io.strata.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.MgmtdMessage.Space;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Storage nodes report their disks with their heartbeats and the cluster manager sums them for
 * clients ({@code df} on a mount) and admins: three nodes on one machine share one file system,
 * which counts once, and a dead node's targets drop out.
 */
class SpaceReportTest {
    static final Duration T = Duration.ofSeconds(30);
    /** Other programs write on this machine while the test runs. */
    static final long SLACK = 2L << 30;

    @TempDir
    Path dir;

    /** What df's use percentage divides by: the bytes in use plus those still usable. */
    static long capacity(FileStore disk) throws java.io.IOException {
        return disk.getTotalSpace() - disk.getUnallocatedSpace() + disk.getUsableSpace();
    }

    @Test
    void theManagerCountsTheNodesSharedFileSystemOnceAndDropsADeadNodesTargets() throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir, 71).nodes(3).chains(1).managed(Duration.ofSeconds(3)).start()) {
            cluster.awaitServing(T);
            FileStore disk = Files.getFileStore(dir);
            Space s = Eventually.value("every serving target reports its space", T, () -> {
                Space x = cluster.manager().leader(T).space();
                return x.targets() == 3 && x.reporting() == 3 ? x : null;
            });
            assertThat(s.capacityBytes()).as("one file system under all three nodes, counted once").isBetween(capacity(disk) - SLACK,
                    capacity(disk) + SLACK);
            assertThat(s.freeBytes()).isBetween(disk.getUsableSpace() - SLACK, disk.getUsableSpace() + SLACK);
            for (MgmtdMessage.TargetStatus t : cluster.manager().leader(T).status().targets()) {
                assertThat(t.spaceKnown()).as("%s reported", t.target()).isTrue();
                assertThat(t.capacityBytes()).isBetween(capacity(disk) - SLACK, capacity(disk) + SLACK);
            }

            try (MgmtdClient c = new MgmtdClient(cluster.clientContext("df"), cluster.manager().addresses())) {
                Space asked = Futures.join(c.call(new MgmtdMessage.GetSpace(), Space.class, T, T), T);
                assertThat(asked.capacityBytes()).as("what a client is told over RPC").isBetween(capacity(disk) - SLACK, capacity(disk) + SLACK);
                assertThat(asked.reporting()).isEqualTo(3);
            }

            cluster.kill(3);
            Space two = Eventually.value("node 3's target drops out", T, () -> {
                Space x = cluster.manager().leader(T).space();
                return x.targets() == 2 ? x : null;
            });
            assertThat(two.reporting()).isEqualTo(2);
            assertThat(two.capacityBytes()).as("the disk is still under nodes 1 and 2, counted once").isBetween(capacity(disk) - SLACK,
                    capacity(disk) + SLACK);
        }
    }
}
