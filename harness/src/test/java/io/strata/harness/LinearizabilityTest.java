package io.strata.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.testing.Seeded;
import io.strata.harness.History.Op;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The register checker accepts linearizable histories and rejects the ones that are not. */
class LinearizabilityTest {
    static final long NEVER = Op.NEVER;
    int ids;

    Op w(int client, long v, long from, long to) {
        return new Op(++ids, client, "k", true, v, from, to);
    }

    Op r(int client, long v, long from, long to) {
        return new Op(++ids, client, "k", false, v, from, to);
    }

    static boolean ok(Op... ops) {
        return Linearizability.checkKey("k", List.of(ops), 0).ok();
    }

    @Test
    void sequentialHistories() {
        assertThat(ok(w(1, 1, 0, 10), r(2, 1, 20, 30), w(1, 2, 40, 50), r(2, 2, 60, 70))).isTrue();
        assertThat(ok(r(1, 0, 0, 5), w(1, 1, 10, 20))).as("initial value before any write").isTrue();
        assertThat(ok(w(1, 1, 0, 10), r(2, 0, 20, 30))).as("stale read after a completed write").isFalse();
        assertThat(ok(r(2, 5, 0, 10))).as("a value nobody wrote").isFalse();
    }

    @Test
    void concurrentOperationsMayTakeEffectInEitherOrder() {
        // the read overlaps the write: old or new value are both fine
        assertThat(ok(w(1, 1, 0, 100), r(2, 1, 10, 20))).isTrue();
        assertThat(ok(w(1, 1, 0, 100), r(2, 0, 10, 20))).isTrue();
        // two overlapping writes, then reads agree on the last one
        assertThat(ok(w(1, 1, 0, 100), w(2, 2, 0, 100), r(3, 1, 200, 210), r(3, 1, 220, 230))).isTrue();
        assertThat(ok(w(1, 1, 0, 100), w(2, 2, 0, 100), r(3, 2, 200, 210))).isTrue();
    }

    @Test
    void rejectsReadsThatGoBackInTime() {
        // W1 then W2 sequential; a read sees 2, a later read sees 1 again: not linearizable
        assertThat(ok(w(1, 1, 0, 10), w(1, 2, 20, 30), r(2, 2, 40, 50), r(3, 1, 60, 70))).isFalse();
        // the classic CRAQ bug: one replica already serves the new value, a later read elsewhere the old one,
        // while the write is still in flight
        assertThat(ok(w(1, 1, 0, 10), w(1, 2, 20, 500), r(2, 2, 30, 40), r(3, 1, 50, 60))).isFalse();
        // and the same with the reads overlapping each other is fine
        assertThat(ok(w(1, 1, 0, 10), w(1, 2, 20, 500), r(2, 2, 30, 60), r(3, 1, 50, 70))).isTrue();
    }

    @Test
    void writesWithUnknownOutcome() {
        // a write that timed out may show up later ...
        assertThat(ok(w(1, 1, 0, 10), w(1, 2, 20, NEVER), r(2, 2, 100, 110))).isTrue();
        // ... or never
        assertThat(ok(w(1, 1, 0, 10), w(1, 2, 20, NEVER), r(2, 1, 100, 110))).isTrue();
        // but once seen, it cannot be un-seen
        assertThat(ok(w(1, 1, 0, 10), w(1, 2, 20, NEVER), r(2, 2, 100, 110), r(2, 1, 120, 130))).isFalse();
        // and it cannot take effect before it was invoked
        assertThat(ok(w(1, 1, 0, 10), r(2, 2, 12, 15), w(1, 2, 20, NEVER))).isFalse();
    }

    /** Random sequential-register executions with jittered intervals are linearizable; corrupting one read breaks it. */
    @Seeded
    @Test
    void randomHistoriesOfARealRegister(long seed) {
        Random rnd = new Random(seed);
        for (int round = 0; round < 50; round++) {
            History h = new History();
            long value = 0;
            long t = 0;
            List<Op> ops = new ArrayList<>();
            long nextValue = 1;
            for (int i = 0; i < 60; i++) {
                // each op takes effect at time t, its interval is stretched around t
                long from = t - rnd.nextInt(30);
                long to = t + rnd.nextInt(30);
                boolean write = rnd.nextBoolean();
                if (write) {
                    value = nextValue++;
                }
                ops.add(new Op(i, rnd.nextInt(4), "k", write, value, from, to));
                t += 10;
            }
            ops.forEach(h::add);
            assertThat(Linearizability.check(h, 0).ok()).as("seed %d round %d", seed, round).isTrue();
            // a read that returns a value two writes back, long after both completed, is caught
            Op last = ops.get(ops.size() - 1);
            long stale = -1;
            for (Op op : ops) {
                if (op.write() && op.completed() < last.invoked() - 400) {
                    stale = op.value();
                }
            }
            if (stale > 0 && stale != value) {
                History bad = new History();
                ops.forEach(bad::add);
                bad.add(new Op(999, 9, "k", false, stale, t + 1000, t + 1010));
                assertThat(Linearizability.check(bad, 0).ok()).as("stale read, seed %d round %d", seed, round).isFalse();
            }
        }
    }

    @Test
    void keysAreIndependentRegisters() {
        History h = new History();
        h.add(new Op(1, 1, "a", true, 1, 0, 10));
        h.add(new Op(2, 1, "b", true, 2, 0, 10));
        h.add(new Op(3, 2, "a", false, 1, 20, 30));
        h.add(new Op(4, 2, "b", false, 2, 20, 30));
        assertThat(Linearizability.check(h, 0).ok()).isTrue();
        h.add(new Op(5, 2, "b", false, 1, 40, 50));
        Linearizability.Result r = Linearizability.check(h, 0);
        assertThat(r.ok()).isFalse();
        assertThat(r.key()).isEqualTo("b");
    }
}
