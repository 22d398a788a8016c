package io.strata.namespace;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.namespace.kv.Transactor;
import java.time.Duration;
import java.util.List;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Frees what deleted files leave behind. Each pass: for every entry of the GC queue older than
 * {@code delay}, asks the {@link ChunkReclaimer} to remove the file's chunks and, once it has,
 * removes the entry in its own transaction (a crash in between only repeats a harmless reclaim).
 * It also drops idempotency records older than {@code idempotencyTtl}. Without a reclaimer (a
 * meta service not wired to any data tier) queue entries are kept for a collector that has one. Any meta instance may
 * run it; two instances collecting the same entry both reclaim (idempotent) and one clear wins.
 *
 * <p>Metrics: {@code strata.meta.gc.files{result=reclaimed|failed}}.
 */
final class GarbageCollector {
    private static final Logger LOG = LoggerFactory.getLogger(GarbageCollector.class);
    static final int BATCH = 32;

    private final Transactor tr;
    private final ChunkReclaimer reclaimer;
    private final Duration delay;
    private final Duration idempotencyTtl;
    private final LongSupplier nowMillis;
    private final Counter reclaimed;
    private final Counter failed;

    GarbageCollector(Transactor tr, ChunkReclaimer reclaimer, Duration delay, Duration idempotencyTtl, LongSupplier nowMillis,
                     MeterRegistry meters) {
        this.tr = tr;
        this.reclaimer = reclaimer;
        this.delay = delay;
        this.idempotencyTtl = idempotencyTtl;
        this.nowMillis = nowMillis;
        this.reclaimed = Counter.builder("strata.meta.gc.files").tag("result", "reclaimed").register(meters);
        this.failed = Counter.builder("strata.meta.gc.files").tag("result", "failed").register(meters);
    }

    /** One pass; returns how many files' chunks were freed. Runs on the caller's (worker) thread. */
    int runOnce() {
        int freed = reclaimer == null ? 0 : reclaimQueued();
        expireIdempotencyRecords();
        return freed;
    }

    private int reclaimQueued() {
        int freed = 0;
        byte[] p = KeySpace.GC_QUEUE.prefix();
        byte[] from = p;
        while (true) {
            byte[] start = from;
            List<KeyValue> batch = tr.run(tx -> tx.snapshot().getRange(start, Bytes.strinc(p), BATCH));
            for (KeyValue kv : batch) {
                NsTx.GcEntry e = NsTx.gcEntry(kv);
                if (e.enqueuedMillis() + delay.toMillis() > nowMillis.getAsLong()) {
                    continue;
                }
                try {
                    Futures.join(reclaimer.reclaimAsync(e.inode(), e.layout(), e.chunks()), Duration.ofMinutes(2));
                    tr.run(tx -> {
                        tx.clear(kv.key());
                        return null;
                    });
                    reclaimed.increment();
                    freed++;
                } catch (StrataException ex) {
                    failed.increment();
                    LOG.warn("could not free the chunks of {} ({} chunks); will retry: {}", e.inode(), e.chunks(), ex.toString());
                }
            }
            if (batch.size() < BATCH) {
                break;
            }
            from = Bytes.keyAfter(batch.get(batch.size() - 1).key());
        }
        return freed;
    }

    /**
     * Request ids start with their creation time, so every record older than the horizon lies
     * in one key range below {@code IDEM|horizon}: one range clear, however many records there
     * are. (A client whose clock is far behind sees its records expire early; the TTL is meant
     * for retries within seconds, so only a skew of the TTL's order matters.)
     */
    private void expireIdempotencyRecords() {
        long horizon = nowMillis.getAsLong() - idempotencyTtl.toMillis();
        if (horizon <= 0) {
            return;
        }
        byte[] end = KeySpace.idempotency(new RequestId(horizon << 16, 0));
        tr.run(tx -> {
            tx.clearRange(KeySpace.IDEMPOTENCY.prefix(), end);
            return null;
        });
    }

    /** Entries waiting in the GC queue (tests, metrics). */
    int queued() {
        byte[] p = KeySpace.GC_QUEUE.prefix();
        return tr.run(tx -> tx.snapshot().getRange(p, Bytes.strinc(p), 0).size());
    }
}
