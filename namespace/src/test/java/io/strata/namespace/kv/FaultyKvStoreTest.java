package io.strata.namespace.kv;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

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
        increment(null);
    }

    /** Adds one to the counter; with a request id, only the first time a body with that id commits. */
    private void increment(String request) {
        store.run(tx -> {
            if (request != null) {
                if (tx.get(b(request)) != null) {
                    return null; // already applied by an earlier attempt
                }
                tx.set(b(request), b("done"));
            }
            tx.set(b("c"), Bytes.le64(Bytes.readLe64(tx.get(b("c"))) + 1));
            return null;
        });
    }

    /** Arms {@code point} to fail the next {@code times} commits with {@code status}. */
    private FaultInjector.Rule fail(FaultPoint point, Status status, int times) {
        return faults.arm(point, new Fault.Fail(new StrataException(status, "injected"))).times(times);
    }

    /** Injected conflicts, and maybe-committed answers of commits that did not commit, are retried until the commit lands. */
    @ParameterizedTest(name = "{0} x{1}")
    @CsvSource({"TXN_CONFLICT, 3", "TXN_MAYBE_COMMITTED, 2"})
    void failuresBeforeTheCommitAreRetriedUntilItLands(Status status, int times) {
        var rule = fail(FaultyKvStore.BEFORE_COMMIT, status, times);
        increment();
        assertThat(rule.fired()).isEqualTo(times);
        assertThat(counter()).isEqualTo(1);
    }

    @Test
    void aMaybeCommittedThatDidCommitRunsTheBodyTwiceUnlessItIsIdempotent() {
        fail(FaultyKvStore.AFTER_COMMIT, Status.TXN_MAYBE_COMMITTED, 1);
        increment();
        // the naive body was applied twice: this is why namespace operations record request ids
        assertThat(counter()).isEqualTo(2);

        fail(FaultyKvStore.AFTER_COMMIT, Status.TXN_MAYBE_COMMITTED, 1);
        increment("req-1");
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
