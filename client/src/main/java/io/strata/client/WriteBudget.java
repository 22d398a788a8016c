package io.strata.client;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes all files of one client may hold in write buffers. A file that cannot get a buffer
 * writes straight through instead of waiting, so the budget bounds memory without ever
 * blocking a writer.
 */
final class WriteBudget {
    private final long limit;
    private final AtomicLong used = new AtomicLong();

    WriteBudget(long limit) {
        this.limit = limit;
    }

    boolean tryAcquire(long n) {
        while (true) {
            long u = used.get();
            if (u + n > limit) {
                return false;
            }
            if (used.compareAndSet(u, u + n)) {
                return true;
            }
        }
    }

    void release(long n) {
        used.addAndGet(-n);
    }

    long used() {
        return used.get();
    }
}
