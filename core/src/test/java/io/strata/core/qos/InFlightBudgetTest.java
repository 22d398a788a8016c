package io.strata.core.qos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.strata.core.tier.QosClass;
import io.strata.core.time.ManualClock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class InFlightBudgetTest {
    private static final long MIB = 1 << 20;

    private final ManualClock clock = new ManualClock();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final InFlightBudget budget = new InFlightBudget(Map.of(QosClass.CHECKPOINT, 4 * MIB), clock, meters);

    @Test
    void aClassWaitsOnceItsBytesInFlightReachTheLimitAndGoesOnAsTheyComplete() {
        CompletableFuture<InFlightBudget.Grant> a = budget.acquire(QosClass.CHECKPOINT, 3 * MIB);
        CompletableFuture<InFlightBudget.Grant> b = budget.acquire(QosClass.CHECKPOINT, MIB);
        CompletableFuture<InFlightBudget.Grant> c = budget.acquire(QosClass.CHECKPOINT, MIB);
        assertThat(a).isDone();
        assertThat(b).isDone();
        assertThat(c).as("a fifth MiB is over the 4 MiB limit").isNotDone();
        assertThat(budget.inFlight(QosClass.CHECKPOINT)).isEqualTo(4 * MIB);

        clock.advance(Duration.ofMillis(30));
        b.join().close();
        assertThat(c).isDone();
        assertThat(meters.get("strata.client.qos.queued").tag("class", "checkpoint").timer().max(TimeUnit.MILLISECONDS))
                .isEqualTo(30.0);
        assertThat(meters.get("strata.client.qos.delayed.bytes").tag("class", "checkpoint").counter().count()).isEqualTo(MIB);

        b.join().close(); // a second close returns nothing more
        assertThat(budget.inFlight(QosClass.CHECKPOINT)).isEqualTo(4 * MIB);
        a.join().close();
        c.join().close();
        assertThat(budget.inFlight(QosClass.CHECKPOINT)).isZero();
        assertThat(meters.get("strata.client.qos.in.flight").tag("class", "checkpoint").gauge().value()).isZero();
    }

    @Test
    void waitersAreAdmittedInOrderSoALargeTransferIsNotPassedForeverBySmallOnes() {
        CompletableFuture<InFlightBudget.Grant> held = budget.acquire(QosClass.CHECKPOINT, 3 * MIB);
        CompletableFuture<InFlightBudget.Grant> large = budget.acquire(QosClass.CHECKPOINT, 2 * MIB);
        CompletableFuture<InFlightBudget.Grant> small = budget.acquire(QosClass.CHECKPOINT, MIB / 2);
        assertThat(large).isNotDone();
        assertThat(small).as("fits, but a transfer waits ahead of it").isNotDone();
        held.join().close();
        assertThat(large).isDone();
        assertThat(small).isDone();
    }

    @Test
    void aTransferLargerThanTheLimitRunsAloneRatherThanNever() {
        CompletableFuture<InFlightBudget.Grant> small = budget.acquire(QosClass.CHECKPOINT, MIB);
        CompletableFuture<InFlightBudget.Grant> huge = budget.acquire(QosClass.CHECKPOINT, 64 * MIB);
        assertThat(huge).isNotDone();
        small.join().close();
        assertThat(huge).isDone();
        assertThat(budget.acquire(QosClass.CHECKPOINT, 1)).as("it holds the whole budget meanwhile").isNotDone();
    }

    @Test
    void classesWithoutALimitAndOtherClassesAreNeverHeld() {
        budget.acquire(QosClass.CHECKPOINT, 4 * MIB);
        assertThat(budget.limits(QosClass.TRAINING_READ)).isFalse();
        for (int i = 0; i < 100; i++) {
            assertThat(budget.acquire(QosClass.TRAINING_READ, 64 * MIB)).isDone();
        }
        assertThat(budget.inFlight(QosClass.TRAINING_READ)).isZero();
    }

    @Test
    void aNegativeLimitIsRefusedNamingTheClass() {
        assertThatThrownBy(() -> new InFlightBudget(Map.of(QosClass.PREFETCH, -1L), clock, meters))
                .hasMessageContaining("prefetch");
    }
}
