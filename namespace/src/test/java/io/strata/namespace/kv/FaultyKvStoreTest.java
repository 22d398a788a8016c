package io.strata.namespace.kv;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The conformance suite through the fault wrapper (nothing armed), then its retry paths. */
class FaultyKvStoreTest extends KvConformanceTest {
    @TempDir
    Path dir;
    private int n;
    private final FaultInjector faults = new FaultInjector(42);

    @Override
    protected KvStore open() {
        return new FaultyKvStore(LmdbKvStore.open(dir.resolve("kv" + (n++)), LmdbKvStore.Options.DEFAULTS.withSync(false), null), faults);
    }

    private long counter() {
        return store.<Long>run(tx -> Bytes.readLe64(tx.get(b("c"))));
    }

    private void increment() {
        store.run(tx -> {
            tx.set(b("c"), Bytes.le64(Bytes.readLe64(tx.get(b("c"))) + 1));
            return null;
        });
    }

    @Test
    void injectedConflictsAreRetriedUntilTheCommitLands() {
        var rule = faults.arm(FaultyKvStore.BEFORE_COMMIT, new Fault.Fail(new StrataException(Status.TXN_CONFLICT, "injected"))).times(3);
        increment();
        assertThat(rule.fired()).isEqualTo(3);
        assertThat(counter()).isEqualTo(1);
    }

    @Test
    void aMaybeCommittedThatDidNotCommitIsRetried() {
        var rule = faults.arm(FaultyKvStore.BEFORE_COMMIT, new Fault.Fail(new StrataException(Status.TXN_MAYBE_COMMITTED, "injected"))).times(2);
        increment();
        assertThat(rule.fired()).isEqualTo(2);
        assertThat(counter()).isEqualTo(1);
    }

    @Test
    void aMaybeCommittedThatDidCommitRunsTheBodyTwiceUnlessItIsIdempotent() {
        faults.arm(FaultyKvStore.AFTER_COMMIT, new Fault.Fail(new StrataException(Status.TXN_MAYBE_COMMITTED, "injected"))).times(1);
        increment();
        // the naive body was applied twice: this is why namespace operations record request ids
        assertThat(counter()).isEqualTo(2);

        faults.arm(FaultyKvStore.AFTER_COMMIT, new Fault.Fail(new StrataException(Status.TXN_MAYBE_COMMITTED, "injected"))).times(1);
        store.run(tx -> {
            if (tx.get(b("req-1")) != null) {
                return null; // already applied by an earlier attempt
            }
            tx.set(b("req-1"), b("done"));
            tx.set(b("c"), Bytes.le64(Bytes.readLe64(tx.get(b("c"))) + 1));
            return null;
        });
        assertThat(counter()).isEqualTo(3);
    }

    @Test
    void slowCommitsDelayButSucceed() {
        faults.arm(FaultyKvStore.BEFORE_COMMIT, new Fault.Delay(Duration.ofMillis(200))).times(1);
        long t0 = System.nanoTime();
        increment();
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThanOrEqualTo(Duration.ofMillis(200));
        assertThat(counter()).isEqualTo(1);
    }
}
