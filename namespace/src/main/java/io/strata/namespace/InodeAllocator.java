package io.strata.namespace;

import io.strata.core.InodeId;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.Transactor;

/**
 * Hands out inode ids that are unique across every meta instance sharing the store, cheaply:
 * each instance reserves a batch of {@code batch} ids with one transaction on the counter key
 * ({@code META/next-inode}) and then counts through it in memory. Ids are never reused; a batch
 * left unfinished when an instance stops is simply skipped (ids are unique, not dense).
 * A reservation retried after "maybe committed" reads the counter again, so at worst it wastes
 * a batch, never hands out an id twice.
 */
final class InodeAllocator {
    /** Ids below this are reserved (1 is the root). */
    static final long FIRST = 2;

    private final Transactor tr;
    private final int batch;
    private long next;
    private long limit;

    InodeAllocator(Transactor tr, int batch) {
        if (batch < 1) {
            throw new IllegalArgumentException("inode batch must be positive, got " + batch);
        }
        this.tr = tr;
        this.batch = batch;
    }

    /** The next id; blocks for a reservation transaction once per batch. */
    synchronized InodeId next() {
        if (next >= limit) {
            long start = tr.run(tx -> {
                long n = Math.max(FIRST, Bytes.readLe64(tx.get(KeySpace.NEXT_INODE)));
                tx.set(KeySpace.NEXT_INODE, Bytes.le64(n + batch));
                return n;
            });
            next = start;
            limit = start + batch;
        }
        return InodeId.of(next++);
    }
}
