package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.core.DataSize;
import io.strata.core.tier.QosClass;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client's in-flight budget per class ({@code [client.in-flight]}), on a real cluster: a
 * checkpoint written faster than its budget lets through waits for it (and says so in its
 * metrics), is stored whole all the same, and a class without a budget is never held.
 */
class ClientQosTest {
    @TempDir
    static Path dir;
    static TestCluster cluster;

    @BeforeAll
    static void start() {
        cluster = TestCluster.start(dir, 57);
        StrataFileSystem admin = cluster.client("admin");
        admin.mkdirs("/ckpt");
        admin.setPolicy("/ckpt", "qos=checkpoint");
        admin.mkdirs("/data");
        admin.setPolicy("/data", "qos=training-read");
        admin.mkdirs("/plain"); // no class named: interactive
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    private static double delayed(StrataFileSystem fs, QosClass c) {
        Counter n = meters(fs).find("strata.client.qos.delayed.bytes").tag("class", c.policyName()).counter();
        return n == null ? -1 : n.count();
    }

    private static MeterRegistry meters(StrataFileSystem fs) {
        return fs.core().ctx().meters();
    }

    @Test
    void aCheckpointBeyondItsInFlightBudgetWaitsForItAndIsStoredWhole() {
        StrataFileSystem fs = cluster.client("tight", c -> c.withInFlight(Map.of(QosClass.CHECKPOINT, DataSize.ofMiB(1).bytes())));
        byte[] data = FileSystemTest.random(24 << 20, 5); // 24 chunks of 1 MiB, sent in parallel extents
        FileSystemTest.writeFile(fs, "/ckpt/shard-0", data);
        assertThat(FileSystemTest.readAll(fs, "/ckpt/shard-0")).isEqualTo(data);

        assertThat(delayed(fs, QosClass.CHECKPOINT)).as("bytes that waited for the 1 MiB budget").isPositive();
        assertThat(meters(fs).find("strata.client.qos.queued").tag("class", "checkpoint").timer().count())
                .as("every chunk write and read went through the budget").isGreaterThanOrEqualTo(48);
        assertThat(meters(fs).find("strata.client.qos.in.flight").tag("class", "checkpoint").gauge().value()).isZero();
    }

    @Test
    void aClassWithoutABudgetIsNeverHeld() {
        StrataFileSystem fs = cluster.client("free", c -> c.withInFlight(Map.of(QosClass.CHECKPOINT, 0L)));
        byte[] data = FileSystemTest.random(8 << 20, 6);
        FileSystemTest.writeFile(fs, "/ckpt/shard-1", data);
        FileSystemTest.writeFile(fs, "/data/sample", data);
        assertThat(FileSystemTest.readAll(fs, "/data/sample")).isEqualTo(data);
        assertThat(delayed(fs, QosClass.CHECKPOINT)).as("no checkpoint budget: no meter").isEqualTo(-1);
        assertThat(delayed(fs, QosClass.TRAINING_READ)).isEqualTo(-1);
    }

    /** Operations of class {@code c} the storage nodes scheduled, summed over the nodes. */
    private static long scheduled(QosClass c) {
        long n = 0;
        for (int i = 1; i <= cluster.cluster.storage().nodeCount(); i++) {
            for (io.micrometer.core.instrument.Timer t : cluster.cluster.storage().context(i).meters().find("strata.qos.queued")
                    .tag("class", c.policyName()).timers()) {
                n += t.count();
            }
        }
        return n;
    }

    @Test
    void aJobsClassReplacesInteractiveButNotAClassTheDirectoryNames() {
        StrataFileSystem plain = cluster.client("no-job");
        StrataFileSystem job = cluster.client("loader", c -> c.withJobQos(QosClass.TRAINING_READ));
        byte[] data = FileSystemTest.random(4 << 20, 8);
        FileSystemTest.writeFile(plain, "/plain/sample", data);
        FileSystemTest.writeFile(plain, "/ckpt/step-1", data);

        long reads = scheduled(QosClass.TRAINING_READ);
        long interactive = scheduled(QosClass.INTERACTIVE);
        assertThat(FileSystemTest.readAll(job, "/plain/sample")).isEqualTo(data);
        assertThat(scheduled(QosClass.TRAINING_READ) - reads).as("the job's reads of an interactive directory ran as training-read")
                .isGreaterThanOrEqualTo(4);
        assertThat(scheduled(QosClass.INTERACTIVE)).isEqualTo(interactive);

        long checkpoint = scheduled(QosClass.CHECKPOINT);
        assertThat(FileSystemTest.readAll(job, "/ckpt/step-1")).isEqualTo(data);
        assertThat(scheduled(QosClass.CHECKPOINT) - checkpoint).as("a directory that names its class keeps it").isGreaterThanOrEqualTo(4);

        reads = scheduled(QosClass.TRAINING_READ);
        assertThat(FileSystemTest.readAll(plain, "/plain/sample")).isEqualTo(data);
        assertThat(scheduled(QosClass.TRAINING_READ)).as("a client without a job class reads as interactive").isEqualTo(reads);
    }
}
