package io.strata.namespace.kv;

import java.util.function.Function;

/**
 * An ordered key-value store with serializable transactions: the one thing the namespace needs
 * from its backend. Two implementations: {@link LmdbKvStore} (embedded, one process) and
 * {@link FdbKvStore} (FoundationDB, shared by any number of meta services). Keys are byte
 * strings ordered as unsigned bytes, at most {@value Bytes#MAX_KEY} bytes; values at most
 * {@value Bytes#MAX_VALUE} bytes.
 *
 * <p>Run work through a {@link Transactor}, which retries conflicts and unknown commit results.
 */
public interface KvStore extends AutoCloseable {
    /** "lmdb", "fdb", ... for logs and metric tags. */
    String name();

    /** Starts a transaction at the newest committed snapshot. The caller closes it. */
    KvTransaction begin();

    /**
     * Whether a short read-only transaction is cheap enough to run on the thread that asks (a
     * network event loop): no network round trip, no wait for a lock. False by default.
     */
    default boolean readsInline() {
        return false;
    }

    /**
     * Runs {@code body} in a transaction on the calling thread, retrying with the default policy
     * on the system clock (tools and tests; services use their node's {@link Transactor}).
     */
    default <T> T run(Function<KvTransaction, T> body) {
        return new Transactor(this, Runnable::run, RetryPolicy.DEFAULT, null, io.strata.core.time.StrataClock.system(),
                java.util.random.RandomGenerator.getDefault()).run(body);
    }

    @Override
    void close();
}
