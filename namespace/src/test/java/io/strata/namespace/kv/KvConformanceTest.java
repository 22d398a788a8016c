package io.strata.namespace.kv;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link KvStore} backend honours. A backend's test class extends this and
 * says how to open a fresh, empty store.
 */
abstract class KvConformanceTest {
    protected KvStore store;

    /** A fresh, empty store for one test. */
    protected abstract KvStore open() throws Exception;

    @BeforeEach
    void setUp() throws Exception {
        store = open();
    }

    @AfterEach
    void tearDown() {
        if (store != null) {
            store.close();
        }
    }

    static byte[] b(String s) {
        return s.getBytes(UTF_8);
    }

    static String s(byte[] b) {
        return b == null ? null : new String(b, UTF_8);
    }

    static List<String> keys(List<KeyValue> kvs) {
        List<String> out = new ArrayList<>();
        for (KeyValue kv : kvs) {
            out.add(s(kv.key()));
        }
        return out;
    }

    private void put(String... kv) {
        store.run(tx -> {
            for (int i = 0; i < kv.length; i += 2) {
                tx.set(b(kv[i]), b(kv[i + 1]));
            }
            return null;
        });
    }

    private String read(String k) {
        return store.run(tx -> s(tx.get(b(k))));
    }

    @Test
    void setGetClearAndAbsentKeys() {
        put("a", "1", "b", "2");
        assertThat(read("a")).isEqualTo("1");
        assertThat(read("zz")).isNull();
        store.run(tx -> {
            tx.clear(b("a"));
            tx.set(b("empty"), new byte[0]);
            return null;
        });
        assertThat(read("a")).isNull();
        assertThat(store.<byte[]>run(tx -> tx.get(b("empty")))).isEmpty();
    }

    @Test
    void readsSeeTheTransactionsOwnWrites() {
        put("a", "1", "c", "3", "e", "5");
        store.run(tx -> {
            tx.set(b("b"), b("2"));
            tx.clear(b("c"));
            tx.set(b("a"), b("one"));
            assertThat(s(tx.get(b("b")))).isEqualTo("2");
            assertThat(tx.get(b("c"))).isNull();
            assertThat(keys(tx.getRange(b("a"), b("z"), 0))).containsExactly("a", "b", "e");
            assertThat(s(tx.getRange(b("a"), b("z"), 0).get(0).value())).isEqualTo("one");
            assertThat(keys(tx.getRange(b("a"), b("z"), 0, true))).containsExactly("e", "b", "a");
            tx.clearRange(b("a"), b("d"));
            tx.set(b("b2"), b("x"));
            assertThat(keys(tx.getRange(b("a"), b("z"), 0))).containsExactly("b2", "e");
            assertThat(keys(tx.snapshot().getRange(b("a"), b("z"), 0))).containsExactly("b2", "e");
            return null;
        });
        assertThat(store.<List<String>>run(tx -> keys(tx.getRange(b("a"), b("z"), 0)))).containsExactly("b2", "e");
    }

    @Test
    void keysAreOrderedAsUnsignedBytesShorterFirst() {
        byte[][] ks = {{0x01}, {0x01, 0x00}, {0x7F}, {(byte) 0x80}, {(byte) 0xFF}, {(byte) 0xFF, 0x01}};
        store.run(tx -> {
            for (int i = ks.length - 1; i >= 0; i--) {
                tx.set(ks[i], new byte[] {(byte) i});
            }
            return null;
        });
        List<KeyValue> all = store.run(tx -> tx.getRange(new byte[] {0x00}, new byte[] {(byte) 0xFF, (byte) 0xFF}, 0));
        assertThat(all).hasSize(ks.length);
        for (int i = 0; i < ks.length; i++) {
            assertThat(all.get(i).key()).isEqualTo(ks[i]);
            assertThat(all.get(i).value()).containsExactly((byte) i);
        }
    }

    @Test
    void rangeScansHonourLimitsBoundsAndDirection() {
        for (int i = 0; i < 50; i++) {
            put(String.format("k%03d", i), "v" + i);
        }
        put("j", "before", "l", "after");
        store.run(tx -> {
            assertThat(keys(tx.getRange(b("k"), b("l"), 3))).containsExactly("k000", "k001", "k002");
            assertThat(keys(tx.getRange(b("k"), b("l"), 3, true))).containsExactly("k049", "k048", "k047");
            assertThat(tx.getRange(b("k"), b("l"), 0)).hasSize(50);
            assertThat(keys(tx.getRange(b("k010"), b("k013"), 0))).containsExactly("k010", "k011", "k012");
            assertThat(keys(tx.getRange(b("k010"), b("k013"), 0, true))).containsExactly("k012", "k011", "k010");
            assertThat(tx.getRange(b("k013"), b("k010"), 0)).isEmpty();
            assertThat(tx.getRange(b("k005"), b("k005"), 0)).isEmpty();
            assertThat(tx.getPrefix(b("k04"), 0)).hasSize(10);
            assertThat(keys(tx.getRange(b("a"), b("k000"), 0, true))).containsExactly("j");
            return null;
        });
    }

    @Test
    void aTransactionReadsOneSnapshot() {
        put("x", "old");
        try (KvTransaction a = store.begin()) {
            assertThat(s(a.get(b("x")))).isEqualTo("old");
            put("x", "new", "y", "added");
            assertThat(s(a.get(b("x")))).isEqualTo("old");
            assertThat(a.get(b("y"))).isNull();
            assertThat(keys(a.getRange(b("a"), b("z"), 0))).containsExactly("x");
        }
        assertThat(read("x")).isEqualTo("new");
    }

    @Test
    void aWriteToAKeyReadConflicts() {
        put("x", "0");
        try (KvTransaction a = store.begin()) {
            a.get(b("x"));
            put("x", "1");
            a.set(b("y"), b("from a"));
            assertThatThrownBy(a::commit).isInstanceOf(StrataException.class)
                    .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.TXN_CONFLICT));
        }
        assertThat(read("y")).isNull();
    }

    @Test
    void snapshotReadsAndBlindWritesDoNotConflict() {
        put("x", "0");
        try (KvTransaction a = store.begin()) {
            assertThat(s(a.snapshot().get(b("x")))).isEqualTo("0");
            a.snapshot().getRange(b("a"), b("z"), 0);
            put("x", "1", "q", "new");
            a.set(b("x"), b("from a"));
            a.commit();
        }
        assertThat(read("x")).isEqualTo("from a");
    }

    @Test
    void aKeyInsertedIntoARangeReadConflicts() {
        put("a", "1", "c", "3");
        try (KvTransaction t = store.begin()) {
            assertThat(t.getRange(b("a"), b("d"), 0)).hasSize(2);
            put("b", "phantom");
            t.set(b("sum"), b("2"));
            assertThatThrownBy(t::commit).satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.TXN_CONFLICT));
        }
        // a limited read covers only up to the last key it returned
        try (KvTransaction t = store.begin()) {
            assertThat(keys(t.getRange(b("a"), b("z"), 1))).containsExactly("a");
            put("y", "outside what was read");
            t.set(b("first"), b("a"));
            t.commit();
        }
        // a cleared range covering a read key conflicts too
        try (KvTransaction t = store.begin()) {
            t.get(b("c"));
            store.run(tx -> {
                tx.clearRange(b("b"), b("d"));
                return null;
            });
            t.set(b("z"), b("1"));
            assertThatThrownBy(t::commit).satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.TXN_CONFLICT));
        }
    }

    @Test
    void writeSkewIsPrevented() {
        put("x", "1", "y", "1");
        try (KvTransaction t1 = store.begin(); KvTransaction t2 = store.begin()) {
            // each reads both and zeroes one if the other is still set: serializably only one may win
            assertThat(s(t1.get(b("x"))) + s(t1.get(b("y")))).isEqualTo("11");
            assertThat(s(t2.get(b("x"))) + s(t2.get(b("y")))).isEqualTo("11");
            t1.set(b("x"), b("0"));
            t2.set(b("y"), b("0"));
            t1.commit();
            assertThatThrownBy(t2::commit).satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.TXN_CONFLICT));
        }
        assertThat(read("x") + read("y")).isEqualTo("01");
    }

    @Test
    void uncommittedWritesAreDiscarded() {
        try (KvTransaction t = store.begin()) {
            t.set(b("ghost"), b("1"));
        }
        assertThat(read("ghost")).isNull();
    }

    @Test
    void atomicAddsNeverConflictAndAreVisibleToTheirTransaction() {
        byte[] ctr = b("counter");
        try (KvTransaction t1 = store.begin(); KvTransaction t2 = store.begin()) {
            t1.atomicAdd(ctr, 5);
            t2.atomicAdd(ctr, 7);
            assertThat(Bytes.readLe64(t1.get(ctr))).isEqualTo(5);
            t1.commit();
            t2.commit();
        }
        assertThat(store.<Long>run(tx -> Bytes.readLe64(tx.get(ctr)))).isEqualTo(12);
        store.run(tx -> {
            tx.atomicAdd(ctr, -2);
            tx.atomicAdd(ctr, -1);
            return null;
        });
        assertThat(store.<Long>run(tx -> Bytes.readLe64(tx.get(ctr)))).isEqualTo(9);
        byte[] hi = b("high");
        store.run(tx -> {
            tx.atomicMax(hi, 10);
            return null;
        });
        store.run(tx -> {
            tx.atomicMax(hi, 3);
            return null;
        });
        assertThat(store.<Long>run(tx -> Bytes.readLe64(tx.get(hi)))).isEqualTo(10);
        store.run(tx -> {
            tx.atomicMax(hi, 42);
            assertThat(Bytes.readLe64(tx.get(hi))).isEqualTo(42);
            return null;
        });
        assertThat(store.<Long>run(tx -> Bytes.readLe64(tx.get(hi)))).isEqualTo(42);
    }

    @Test
    void retriedReadModifyWritesLoseNoUpdate() throws Exception {
        byte[] ctr = b("rmw");
        int threads = 4;
        int each = 50;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            Transactor tr = new Transactor(store, pool, RetryPolicy.DEFAULT, null, io.strata.core.time.StrataClock.system(), new java.util.Random(1));
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < each; i++) {
                        tr.run(tx -> {
                            long v = Bytes.readLe64(tx.get(ctr));
                            tx.set(ctr, Bytes.le64(v + 1));
                            return null;
                        });
                    }
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(store.<Long>run(tx -> Bytes.readLe64(tx.get(ctr)))).isEqualTo((long) threads * each);
    }

    @Test
    void badKeysAndValuesAreRefusedAndNothingIsWritten() {
        assertThatThrownBy(() -> store.run(tx -> {
            tx.set(b("ok"), b("1"));
            tx.set(new byte[Bytes.MAX_KEY + 1], b("x"));
            return null;
        })).satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.INVALID_ARGUMENT));
        assertThatThrownBy(() -> store.run(tx -> {
            tx.set(b("big"), new byte[Bytes.MAX_VALUE + 1]);
            return null;
        })).satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.INVALID_ARGUMENT));
        assertThat(read("ok")).isNull();
        assertThat(read("big")).isNull();
    }

    @Test
    void transactorGivesUpOnlyAfterItsPolicy() {
        KvStore always = new KvStore() {
            @Override
            public String name() {
                return "conflicting";
            }

            @Override
            public KvTransaction begin() {
                throw new StrataException(Status.TXN_CONFLICT, "always");
            }

            @Override
            public void close() {
            }
        };
        RetryPolicy p = new RetryPolicy(3, Duration.ZERO, Duration.ofMillis(1), Duration.ofSeconds(5));
        assertThatThrownBy(() -> new Transactor(always, Runnable::run, p, null, io.strata.core.time.StrataClock.system(), new java.util.Random(1)).run(tx -> null))
                .hasMessageContaining("gave up after 3 attempts");
    }
}
