package io.strata.namespace.kv;

import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.core.fault.FaultScope;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Wraps a store and fires fault points around every commit of a transaction that wrote
 * something, so tests exercise the retry paths without FoundationDB:
 * <ul>
 *   <li>{@link #BEFORE_COMMIT}: arm with {@code Fault.Fail(TXN_CONFLICT)} for a conflict,
 *       {@code Fail(TXN_MAYBE_COMMITTED)} for an unknown result that did <i>not</i> commit, or
 *       {@code Fault.Delay} for a slow commit;</li>
 *   <li>{@link #AFTER_COMMIT}: arm with {@code Fail(TXN_MAYBE_COMMITTED)} for the hard case, a
 *       commit that <i>did</i> happen but whose caller hears "maybe" and runs the body again.</li>
 * </ul>
 * The scope's detail is the inner store's name.
 */
public final class FaultyKvStore implements KvStore {
    public static final FaultPoint BEFORE_COMMIT = FaultPoint.of("kv.before-commit");
    public static final FaultPoint AFTER_COMMIT = FaultPoint.of("kv.after-commit");

    private final KvStore inner;
    private final FaultInjector faults;
    private final FaultScope scope;

    public FaultyKvStore(KvStore inner, FaultInjector faults) {
        this.inner = inner;
        this.faults = faults;
        this.scope = FaultScope.detail(inner.name());
    }

    @Override
    public String name() {
        return inner.name();
    }

    public KvStore inner() {
        return inner;
    }

    @Override
    public KvTransaction begin() {
        return new Txn(inner.begin());
    }

    @Override
    public void close() {
        inner.close();
    }

    private final class Txn implements KvTransaction {
        private final KvTransaction tx;
        private boolean wrote;

        Txn(KvTransaction tx) {
            this.tx = tx;
        }

        @Override
        public byte[] get(byte[] key) {
            return tx.get(key);
        }

        @Override
        public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
            return tx.getRange(begin, end, limit, reverse);
        }

        @Override
        public KvReader snapshot() {
            return tx.snapshot();
        }

        @Override
        public void set(byte[] key, byte[] value) {
            tx.set(key, value);
            wrote = true;
        }

        @Override
        public void clear(byte[] key) {
            tx.clear(key);
            wrote = true;
        }

        @Override
        public void clearRange(byte[] begin, byte[] end) {
            tx.clearRange(begin, end);
            wrote = true;
        }

        @Override
        public void atomicAdd(byte[] key, long delta) {
            tx.atomicAdd(key, delta);
            wrote = true;
        }

        @Override
        public void atomicMax(byte[] key, long value) {
            tx.atomicMax(key, value);
            wrote = true;
        }

        @Override
        public void addReadConflictKey(byte[] key) {
            tx.addReadConflictKey(key);
        }

        @Override
        public void commit() {
            if (wrote) {
                faults.fire(BEFORE_COMMIT, scope);
            }
            tx.commit();
            if (wrote) {
                faults.fire(AFTER_COMMIT, scope);
            }
        }

        @Override
        public CompletableFuture<Void> commitAsync() {
            if (!wrote) {
                return tx.commitAsync();
            }
            try {
                faults.fire(BEFORE_COMMIT, scope);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
            return tx.commitAsync().thenRun(() -> faults.fire(AFTER_COMMIT, scope));
        }

        @Override
        public void close() {
            tx.close();
        }
    }
}
