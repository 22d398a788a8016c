package io.strata.core.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.time.ManualClock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SlowOpsTest {
    private final ManualClock clock = new ManualClock();
    private final SlowOps slow = new SlowOps("storage-1", Duration.ofMillis(100), clock);

    @Test
    void onlyOperationsAtTheThresholdOrOverAreKeptOldestFirst() {
        slow.record(1, "serve", "ReadChunk from a", TimeUnit.MILLISECONDS.toNanos(99), "OK");
        slow.record(2, "serve", "ReadChunk from b", TimeUnit.MILLISECONDS.toNanos(100), "OK");
        slow.record(3, "disk", "training-read 131072 bytes on target-101", TimeUnit.MILLISECONDS.toNanos(250), "queued 240.0 ms");
        assertThat(slow.recent()).extracting(SlowOps.Op::trace).containsExactly(2L, 3L);
        SlowOps.Op op = slow.recent().get(1);
        assertThat(op.process()).isEqualTo("storage-1");
        assertThat(op.toString()).isEqualTo("slow disk: trace 0000000000000003 training-read 131072 bytes on target-101 took 250.0 ms "
                + "(queued 240.0 ms)");
    }

    @Test
    void theRingKeepsTheLatestOnly() {
        for (int i = 1; i <= SlowOps.CAPACITY + 10; i++) {
            slow.record(i, "call", "x", TimeUnit.SECONDS.toNanos(1), "");
        }
        assertThat(slow.recent()).hasSize(SlowOps.CAPACITY);
        assertThat(slow.recent().get(0).trace()).isEqualTo(11);
        assertThat(slow.recent().get(SlowOps.CAPACITY - 1).trace()).isEqualTo(SlowOps.CAPACITY + 10);
    }

    @Test
    void traceIdsFormatAsSixteenHexDigitsAndParseBack() {
        long id = Trace.newId();
        assertThat(Trace.format(id)).hasSize(16);
        assertThat(Trace.parse(Trace.format(id))).isEqualTo(id);
        assertThat(Trace.parse("ffffffffffffffff")).isEqualTo(-1L);
        assertThatThrownBy(() -> Trace.parse("12")).hasMessageContaining("16 hex digits");
        assertThatThrownBy(() -> Trace.parse("zzzzzzzzzzzzzzzz")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aScopeRestoresTheTraceBeforeIt() {
        assertThat(Trace.current()).isZero();
        try (Trace.Scope outer = Trace.open(5)) {
            try (Trace.Scope inner = Trace.begin()) {
                assertThat(Trace.current()).isEqualTo(inner.id()).isNotZero().isNotEqualTo(5);
            }
            assertThat(Trace.current()).isEqualTo(5);
        }
        assertThat(Trace.current()).isZero();
    }

    @Test
    void aNegativeThresholdIsRefused() {
        assertThatThrownBy(() -> new SlowOps("x", Duration.ofMillis(-1), clock)).hasMessageContaining("must not be negative");
    }
}
