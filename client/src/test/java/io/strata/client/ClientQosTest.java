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
}
