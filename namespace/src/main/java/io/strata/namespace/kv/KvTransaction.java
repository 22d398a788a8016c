package io.strata.namespace.kv;

/**
 * One serializable transaction: reads from one snapshot plus its own writes, buffered writes
 * applied atomically by {@link #commit()}. Commit fails with status {@code TXN_CONFLICT} when a
 * transaction that committed after this one's snapshot wrote a key this one read (keys and
 * ranges read outside {@link #snapshot()}), and with {@code TXN_MAYBE_COMMITTED} when the
 * outcome is unknown. Both are retryable: {@link KvStore#runAsync} re-runs the whole body, so
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

    /** Ends the transaction; uncommitted writes are dropped. */
    @Override
    void close();
}
