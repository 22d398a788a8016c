package io.strata.storage;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.qos.QosShares;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Futures;
import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
import io.strata.storage.engine.EngineOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Storage nodes order each target's reads and writes by the QoS class the client sends. */
class QosStorageTest {
    static final int SIZE = 256 * 1024;
    static final long MIB = 1L << 20;
    static final QosShares BACKGROUND_AT_1MIB = QosShares.DEFAULTS.withShare(QosClass.BACKGROUND, new QosShares.Share(0, 1, MIB));

    @TempDir
    Path dir;

    private static IoOptions io(QosClass c) {
        return new IoOptions(0, c, Duration.ofSeconds(30));
    }

    @Test
    void aLimitedClassIsHeldToItsRateWhileAnotherClassPassesIt() {
        try (StorageCluster f = StorageCluster.builder(dir, 7).nodes(2).chains(1).replicas(2).engine(EngineOptions.DEFAULTS)
                .qos(BACKGROUND_AT_1MIB).start()) {
            StorageClient c = f.client("c");
            ByteBuf data = Unpooled.wrappedBuffer(new byte[SIZE]);
            long start = System.nanoTime();
            List<CompletableFuture<Long>> background = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                background.add(c.writeAsync(StorageCluster.chunk(70, i, 1, SIZE), 0, data, io(QosClass.BACKGROUND))
                        .thenApply(x -> System.nanoTime()));
            }
            long interactiveDone = Futures.join(c.writeAsync(StorageCluster.chunk(71, 0, 1, SIZE), 0, data, io(QosClass.INTERACTIVE))
                    .thenApply(x -> System.nanoTime()), Duration.ofSeconds(30));
            long lastBackground = 0;
            for (CompletableFuture<Long> b : background) {
                lastBackground = Math.max(lastBackground, Futures.join(b, Duration.ofSeconds(60)));
            }
            data.release();
            // each write costs 256 KiB + 64 KiB at 1 MiB/s: the eighth starts 7 x 0.31 s after the first
            assertThat(TimeUnit.NANOSECONDS.toMillis(lastBackground - start)).as("background writes held to 1 MiB/s").isGreaterThan(2000);
            assertThat(interactiveDone).as("the interactive write did not wait behind the limited class").isLessThan(lastBackground);
            double delayed = 0;
            for (int n = 1; n <= 2; n++) {
                delayed += f.context(n).meters().get("strata.qos.delayed.bytes").tag("class", "background").counter().count();
            }
            assertThat(delayed).as("the chain's head counts the background bytes it held back").isGreaterThanOrEqualTo(6.0 * SIZE);
        }
    }

    @Test
    void switchedOffTheLimitIsNotApplied() {
        try (StorageCluster f = StorageCluster.builder(dir, 8).nodes(1).chains(1).replicas(1).engine(EngineOptions.DEFAULTS)
                .qos(BACKGROUND_AT_1MIB.withEnabled(false)).start()) {
            StorageClient c = f.client("c");
            ByteBuf data = Unpooled.wrappedBuffer(new byte[SIZE]);
            List<CompletableFuture<Void>> writes = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                writes.add(c.writeAsync(StorageCluster.chunk(72, i, 1, SIZE), 0, data, io(QosClass.BACKGROUND)));
            }
            Futures.join(CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)), Duration.ofSeconds(60));
            data.release();
            assertThat(f.context(1).meters().get("strata.qos.delayed.bytes").tag("class", "background").counter().count()).isZero();
            assertThat(f.context(1).meters().get("strata.qos.queued").tag("class", "background").timer().count())
                    .as("nothing went through the scheduler").isZero();
        }
    }
}
