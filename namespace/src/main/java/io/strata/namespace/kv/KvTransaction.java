package io.strata.namespace.kv;

import java.util.concurrent.CompletableFuture;

/**
 * One serializable transaction: reads from one snapshot plus its own writes, buffered writes
 * applied atomically by {@link #commit()}. Commit fails with status {@code TXN_CONFLICT} when a
 * transaction that committed after this one's snapshot wrote a key this one read (keys and
 * ranges read outside {@link #snapshot()}), and with {@code TXN_MAYBE_COMMITTED} when the
 * outcome is unknown. Both are retryable: {@link Transactor} re-runs the whole body, so
 * a body must be safe to run again (see docs/internals/keyspace.md, "Idempotency").
 *
 * <p>Not thread-safe: one thread uses a transaction at a time. {@link #close()} without a
 * commit discards the writes. Arrays passed in are copied or only read during the call.
 */
public interface KvTransaction extends KvReader, AutoCloseable {
    /** A view whose reads see the same data but add no read conflicts. */
    KvReader snapshot();

    void set(byte[] key, byte[] value);

    void clear(byte[] key);

    /** Clears every key in [begin, end). */
    void clearRange(byte[] begin, byte[] end);

    /**
     * Adds {@code delta} to the 8-byte little-endian integer at {@code key} (absent reads as 0)
     * without reading it: concurrent adds never conflict.
     */
    void atomicAdd(byte[] key, long delta);

    /**
     * Stores {@code value} at {@code key} if it is larger (as an unsigned 8-byte little-endian
     * integer) than what is there; never conflicts with other atomic max operations.
     */
    void atomicMax(byte[] key, long value);

    /** Makes a concurrent write of {@code key} conflict with this transaction, as a read would. */
    void addReadConflictKey(byte[] key);

    /** Applies every write atomically, or throws (nothing applied unless TXN_MAYBE_COMMITTED). */
    void commit();

    /**
     * Starts the commit and returns at once; the future completes when {@link #commit()} would
     * have returned (for a store that syncs: after the sync that holds this transaction's
     * writes) or fails as it would have thrown. The caller's thread is free meanwhile: this is
     * how many transactions share one write and one sync (group commit). The transaction may be
     * closed as soon as this returns. By default the commit runs in the call.
     */
    default CompletableFuture<Void> commitAsync() {
        try {
            commit();
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Ends the transaction; uncommitted writes are dropped. */
    @Override
    void close();
}
