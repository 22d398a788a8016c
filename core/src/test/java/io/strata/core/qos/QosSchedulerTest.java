package io.strata.core.qos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.strata.core.tier.QosClass;
import io.strata.core.time.ManualClock;
import io.strata.core.util.Eventually;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class QosSchedulerTest {
    private static final long MIB = 1L << 20;
    private final ManualClock clock = new ManualClock();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    /** Operations in the order the scheduler started them, each with the future that ends it. */
    private final List<Started> started = new ArrayList<>();

    private record Started(QosClass qos, CompletableFuture<Void> done) {
    }

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    private QosScheduler scheduler(QosShares shares) {
        return new QosScheduler("test", shares, clock, timer, meters);
    }

    private CompletableFuture<Void> submit(QosScheduler s, QosClass c, long bytes) {
        return s.submit(c, bytes, () -> {
            CompletableFuture<Void> done = new CompletableFuture<>();
            synchronized (started) {
                started.add(new Started(c, done));
            }
            return done;
        });
    }

    private Started startedAt(int i) {
        synchronized (started) {
            return started.get(i);
        }
    }

    private int startedCount() {
        synchronized (started) {
            return started.size();
        }
    }

    @Test
    void trainingReadsQueuedBehindACheckpointBurstOvertakeItByWeight() {
        QosScheduler s = scheduler(QosShares.DEFAULTS.withSlots(1));
        for (int i = 0; i < 30; i++) {
            submit(s, QosClass.CHECKPOINT, MIB);
        }
        for (int i = 0; i < 10; i++) {
            submit(s, QosClass.TRAINING_READ, 128 * 1024);
        }
        for (int i = 0; i < 40; i++) {
            assertThat(startedCount()).as("one slot: one operation at a time").isEqualTo(i + 1);
            startedAt(i).done().complete(null);
        }
        int lastRead = 0;
        for (int i = 0; i < 40; i++) {
            if (startedAt(i).qos() == QosClass.TRAINING_READ) {
                lastRead = i;
            }
        }
        assertThat(lastRead).as("all ten reads ran among the first operations, not after the 30 checkpoint writes").isLessThan(14);
        assertThat(meters.get("strata.qos.queued").tag("class", "checkpoint").timer().count()).isEqualTo(30);
    }

    @Test
    void aReservationIsServedAgainstAMuchHeavierClass() {
        QosShares shares = QosShares.DEFAULTS.withSlots(1)
                .withShare(QosClass.INTERACTIVE, new QosShares.Share(0, 1000, 0))
                .withShare(QosClass.PREFETCH, new QosShares.Share(10 * MIB, 1, 0));
        QosScheduler s = scheduler(shares);
        for (int i = 0; i < 50; i++) {
            submit(s, QosClass.INTERACTIVE, MIB);
        }
        for (int i = 0; i < 5; i++) {
            submit(s, QosClass.PREFETCH, MIB);
        }
        for (int i = 0; i < 12; i++) {
            clock.advance(Duration.ofMillis(100)); // 10 MiB/s: one 1 MiB prefetch is due every 100 ms
            startedAt(i).done().complete(null);
        }
        long prefetches = started.subList(0, 12).stream().filter(x -> x.qos() == QosClass.PREFETCH).count();
        assertThat(prefetches).as("the reserved class ran about once per 100 ms").isGreaterThanOrEqualTo(4);
    }

    @Test
    void aLimitedClassWaitsEvenOnAnIdleDevice() {
        QosShares shares = QosShares.DEFAULTS.withShare(QosClass.BACKGROUND, new QosShares.Share(0, 1, MIB));
        QosScheduler s = scheduler(shares);
        for (int i = 0; i < 3; i++) {
            submit(s, QosClass.BACKGROUND, MIB - shares.opCost());
        }
        startedAt(0).done().complete(null);
        assertThat(startedCount()).as("1 MiB/s: the second 1 MiB waits a second though 15 slots are free").isEqualTo(1);
        clock.advance(Duration.ofSeconds(1));
        Eventually.await("the timer starts the second operation", Duration.ofSeconds(10), () -> startedCount() == 2);
        assertThat(startedCount()).isEqualTo(2);
        submit(s, QosClass.INTERACTIVE, 4096);
        assertThat(startedAt(2).qos()).as("another class is not held back by the limit").isEqualTo(QosClass.INTERACTIVE);
    }

    @Test
    void switchedOffEveryOperationRunsAtOnce() {
        QosScheduler s = scheduler(QosShares.OFF.withSlots(1));
        for (int i = 0; i < 5; i++) {
            submit(s, QosClass.CHECKPOINT, MIB);
        }
        assertThat(startedCount()).isEqualTo(5);
    }

    @Test
    void aFailingOperationFailsItsCallerAndFreesItsSlot() {
        QosScheduler s = scheduler(QosShares.DEFAULTS.withSlots(1));
        CompletableFuture<Object> bad = s.submit(QosClass.INTERACTIVE, 10, () -> {
            throw new IllegalStateException("disk gone");
        });
        assertThatThrownBy(bad::join).isInstanceOf(CompletionException.class).hasRootCauseMessage("disk gone");
        CompletableFuture<Void> next = submit(s, QosClass.INTERACTIVE, 10);
        assertThat(startedCount()).isEqualTo(1);
        startedAt(0).done().complete(null);
        assertThat(next).isCompleted();
        assertThat(s.running()).isZero();
    }

    @Test
    void sharesRefuseNonsense() {
        assertThatThrownBy(() -> new QosShares.Share(10, 0, 0)).hasMessageContaining("weight");
        assertThatThrownBy(() -> new QosShares.Share(10 * MIB, 1, MIB)).hasMessageContaining("exceeds the limit");
        assertThatThrownBy(() -> QosShares.DEFAULTS.withSlots(0)).hasMessageContaining("slots");
    }

    @Test
    void aSlowOperationIsKeptUnderItsSubmittersTraceWithItsQueueAndDeviceTimes() {
        io.strata.core.trace.SlowOps slow = new io.strata.core.trace.SlowOps("storage-1", Duration.ofMillis(100), clock);
        QosScheduler s = new QosScheduler("target-101", QosShares.DEFAULTS.withSlots(1), clock, timer, meters, slow);
        CompletableFuture<Void> first = submit(s, QosClass.CHECKPOINT, MIB);
        long id = io.strata.core.trace.Trace.newId();
        CompletableFuture<Void> second;
        List<String> notes = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (io.strata.core.trace.Trace.Scope scope = io.strata.core.trace.Trace.open(id, n -> notes.add(n.get()))) {
            second = submit(s, QosClass.TRAINING_READ, 128 * 1024);
        }
        clock.advance(Duration.ofMillis(150)); // the read waits for the checkpoint's slot
        startedAt(0).done().complete(null);
        first.join();
        clock.advance(Duration.ofMillis(30)); // then takes 30 ms on the device
        startedAt(1).done().complete(null);
        second.join();
        assertThat(slow.recent()).hasSize(2);
        io.strata.core.trace.SlowOps.Op read = slow.recent().get(1);
        assertThat(read.trace()).isEqualTo(id);
        assertThat(read.hop()).isEqualTo("disk");
        assertThat(read.what()).isEqualTo("training-read 131072 bytes on target-101");
        assertThat(read.millis()).isEqualTo(180.0);
        assertThat(read.detail()).isEqualTo("queued 150.0 ms for a slot, device 30.0 ms");
        assertThat(slow.recent().get(0).trace()).as("submitted outside any operation").isZero();
        assertThat(notes).as("the request it served is told, slow or not").containsExactly(
                "target-101: queued 150.0 ms for a slot, device 30.0 ms");
    }
}
