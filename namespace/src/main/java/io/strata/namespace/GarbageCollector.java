package io.strata.namespace;

import io.strata.core.InodeId;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Layout;
import io.strata.protocol.meta.RequestId;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.core.StrataException;
import io.strata.core.time.StrataClock;
import io.strata.core.util.Futures;
import io.strata.core.util.RateLimiter;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.namespace.kv.Transactor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Frees what deleted files leave behind, as background work that never competes with requests
 * for their threads.
 *
 * <p>Each pass runs on the collector's own thread (one thread, one pass at a time). It reads the GC queue in batches of {@link #BATCH}; for each entry older than
 * {@code delay} it asks the {@link ChunkReclaimer} which chunks the file has (a cost that
 * follows the chunks that exist: a 1 PB sparse file with three chunks costs three removals,
 * not 10^9), removes them with at most {@link #REMOVALS_IN_FLIGHT} in flight and
 * {@link #FILES_IN_FLIGHT} files at once, paced by {@link Pace}: at most
 * {@code chunksPerSecond} started per second while clients leave the namespace alone, and
 * {@code busyChunksPerSecond} while they change it (each removal is a chained write with a
 * commit on every replica, on the disks the clients' own commits wait for), except for a file
 * due longer than {@code busyMaxWait}, which goes at the full pace whatever the load. Once
 * a batch's files are freed their queue entries are cleared in one transaction (a crash in
 * between only repeats a harmless reclaim). It also drops idempotency records older than
 * {@code idempotencyTtl}.
 *
 * <p>It also works through the trim queue ({@code TRIM} keys, queued when a dead client's write
 * session was ended): for a file that has no write session (checked in a transaction; the same
 * condition fences opens for writing, see {@code NamespaceOps.awaitTrim}) it lists the chunks from
 * the one holding the file's length on, cuts that one at the length and removes the others, at
 * the same pace as deleted files' chunks, then clears the key. A file someone writes waits for
 * the next pass; a failure leaves the key for the next pass. Without a reclaimer (a meta service not wired to any data tier) queue
 * entries are kept for a collector that has one. Any meta instance may run it; two instances
 * collecting the same entry both reclaim (idempotent) and one clear wins.
 *
 * <p>Metrics: {@code strata.meta.gc.files{result=reclaimed|failed}},
 * {@code strata.meta.gc.chunks} (chunks removed), {@code strata.meta.trims{result=trimmed|failed}}.
 */
final class GarbageCollector {
    private static final Logger LOG = LoggerFactory.getLogger(GarbageCollector.class);
    static final int BATCH = 32;
    static final int FILES_IN_FLIGHT = 8;
    static final int REMOVALS_IN_FLIGHT = 16;
    /** The longest one file's reclaim may take before the pass moves on (it is retried next pass). */
    private static final Duration FILE_TIMEOUT = Duration.ofMinutes(10);

    private final Transactor tr;
    private final ChunkReclaimer reclaimer;
    private final Duration delay;
    private final Duration idempotencyTtl;
    private final LongSupplier nowMillis;
    private final ScheduledExecutorService timer;
    private final Pace pace;
    private final Counter reclaimed;
    private final Counter failed;
    private final Counter chunks;
    private final Counter busyChunks;
    /** Queued entries the last pass left (not due yet, or failed). */
    private final AtomicLong backlog = new AtomicLong();
    private final Counter trimmed;
    private final Counter trimFailed;

    /**
     * Passes run on the caller's thread (the collector's own, see {@link MetaStore}); {@code timer}
     * starts a removal that had to wait for the rate limit (a short task: it only sends a request).
     */
    GarbageCollector(Transactor tr, ChunkReclaimer reclaimer, Duration delay, Duration idempotencyTtl, Pace pace,
                     LongSupplier nowMillis, ScheduledExecutorService timer, MeterRegistry meters) {
        this.tr = tr;
        this.reclaimer = reclaimer;
        this.delay = delay;
        this.idempotencyTtl = idempotencyTtl;
        this.nowMillis = nowMillis;
        this.timer = timer;
        this.pace = pace;
        this.reclaimed = Counter.builder("strata.meta.gc.files").tag("result", "reclaimed").register(meters);
        this.failed = Counter.builder("strata.meta.gc.files").tag("result", "failed").register(meters);
        this.chunks = Counter.builder("strata.meta.gc.chunks").description("chunks removed by the collector").register(meters);
        this.busyChunks = Counter.builder("strata.meta.gc.busy.chunks")
                .description("chunk removals started at the busy pace (clients were changing the namespace)").register(meters);
        io.micrometer.core.instrument.Gauge.builder("strata.meta.gc.backlog", backlog, AtomicLong::get)
                .description("deleted files whose chunks the last pass left queued (not due yet, or failed)").register(meters);
        this.trimmed = Counter.builder("strata.meta.trims").tag("result", "trimmed")
                .description("files cut back to their length after a writer died").register(meters);
        this.trimFailed = Counter.builder("strata.meta.trims").tag("result", "failed").register(meters);
    }

    /** One pass; returns how many files' chunks were freed. Runs on the collector's thread (it blocks there). */
    int runOnce() {
        int freed = reclaimer == null ? 0 : reclaimQueued();
        trimQueued();
        expireIdempotencyRecords();
        return freed;
    }

    /** A queued trim as its check found it: {@code layout} null when there is nothing to cut now. */
    private record Trim(InodeId inode, long length, Layout layout) {
    }

    /**
     * One pass over the trim queue; returns how many files were cut back to their length. Without
     * a reclaimer nothing is done (the keys wait for an instance that has one).
     */
    int trimQueued() {
        if (reclaimer == null) {
            return 0;
        }
        int done = 0;
        byte[] p = KeySpace.TRIM.prefix();
        byte[] from = p;
        while (true) {
            byte[] start = from;
            List<KeyValue> batch = tr.run(tx -> tx.snapshot().getRange(start, Bytes.strinc(p), BATCH));
            for (KeyValue kv : batch) {
                InodeId inode = KeySpace.idAt(kv.key());
                Trim t = tr.run(tx -> check(tx, inode));
                if (t.layout() == null) {
                    continue;
                }
                try {
                    long removed = Futures.join(cut(t), FILE_TIMEOUT);
                    tr.run(tx -> {
                        tx.clear(KeySpace.trim(inode));
                        return null;
                    });
                    trimmed.increment();
                    done++;
                    LOG.info("cut {} back to its length {}: {} chunk(s) past it removed or cut (a writer died without publishing)",
                            inode, t.length(), removed);
                } catch (RuntimeException e) {
                    trimFailed.increment();
                    LOG.warn("could not trim {} past its length {}; will retry: {}", inode, t.length(), StrataException.wrap(e).toString());
                }
            }
            if (batch.size() < BATCH) {
                break;
            }
            from = Bytes.keyAfter(batch.get(batch.size() - 1).key());
        }
        return done;
    }

    /**
     * Whether {@code inode}'s trim may run now, in a transaction: the key is still queued, the file
     * exists (a deleted file's chunks all go through the GC queue: the key is dropped) and nobody
     * has it open for writing (conflict-checked: a writer's open commits first and the trim waits,
     * or the trim's check commits first and the open waits for the key to go).
     */
    private Trim check(io.strata.namespace.kv.KvTransaction tx, InodeId inode) {
        byte[] k = KeySpace.trim(inode);
        if (tx.get(k) == null) {
            return new Trim(inode, 0, null);
        }
        NsTx t = new NsTx(tx, false, nowMillis.getAsLong() * 1_000_000);
        InodeAttrs a = t.inode(inode);
        if (a == null || !a.isFile() || a.layout() == null) {
            tx.clear(k);
            return new Trim(inode, 0, null);
        }
        if (t.hasWriteSessions(inode)) {
            return new Trim(inode, a.length(), null);
        }
        return new Trim(inode, a.length(), a.layout());
    }

    /** Cuts the chunk holding the length there and removes every chunk after it that exists; completes with how many it touched. */
    private CompletableFuture<Long> cut(Trim t) {
        int cs = t.layout().chunkSize();
        long first = t.length() / cs;
        long rest = t.length() % cs;
        return reclaimer.chunksAsync(t.inode(), t.layout(), first).thenCompose(existing -> {
            AtomicLong touched = new AtomicLong();
            CompletableFuture<Void> head = CompletableFuture.completedFuture(null);
            int skip = 0;
            if (rest > 0 && existing.length > 0 && existing[0] == first) {
                head = paced(0, () -> reclaimer.truncateAsync(t.inode(), t.layout(), first, rest).thenRun(touched::incrementAndGet));
                skip = 1;
            }
            CompletableFuture<Void> tail = Futures.bounded(skip, existing.length, REMOVALS_IN_FLIGHT, i -> paced(0, () ->
                    reclaimer.removeAsync(t.inode(), t.layout(), existing[(int) i]).thenRun(() -> {
                        touched.incrementAndGet();
                        chunks.increment();
                    })));
            return CompletableFuture.allOf(head, tail).thenApply(v -> touched.get());
        });
    }

    /** Files waiting for a trim (tests, metrics). */
    int trimsQueued() {
        byte[] p = KeySpace.TRIM.prefix();
        return tr.run(tx -> tx.snapshot().getRange(p, Bytes.strinc(p), 0).size());
    }

    private int reclaimQueued() {
        int freed = 0;
        long seen = 0;
        byte[] p = KeySpace.GC_QUEUE.prefix();
        byte[] from = p;
        while (true) {
            byte[] start = from;
            List<KeyValue> batch = tr.run(tx -> tx.snapshot().getRange(start, Bytes.strinc(p), BATCH));
            seen += batch.size();
            List<NsTx.GcEntry> due = new ArrayList<>();
            List<byte[]> keys = new ArrayList<>();
            for (KeyValue kv : batch) {
                NsTx.GcEntry e = NsTx.gcEntry(kv);
                if (e.enqueuedMillis() + delay.toMillis() <= nowMillis.getAsLong()) {
                    due.add(e);
                    keys.add(kv.key());
                }
            }
            boolean[] ok = new boolean[due.size()];
            CompletableFuture<Void> all = Futures.bounded(0, due.size(), FILES_IN_FLIGHT, i -> {
                NsTx.GcEntry e = due.get((int) i);
                return free(e).handle((n, err) -> {
                    if (err == null) {
                        ok[(int) i] = true;
                    } else {
                        failed.increment();
                        LOG.warn("could not free the chunks of {}; will retry: {}", e.inode(), StrataException.wrap(err).toString());
                    }
                    return null;
                });
            });
            Futures.join(all, FILE_TIMEOUT.multipliedBy(Math.max(1, (due.size() + FILES_IN_FLIGHT - 1) / FILES_IN_FLIGHT)));
            List<byte[]> clear = new ArrayList<>();
            for (int i = 0; i < due.size(); i++) {
                if (ok[i]) {
                    clear.add(keys.get(i));
                }
            }
            if (!clear.isEmpty()) {
                tr.run(tx -> {
                    for (byte[] k : clear) {
                        tx.clear(k);
                    }
                    return null;
                });
                reclaimed.increment(clear.size());
                freed += clear.size();
            }
            if (batch.size() < BATCH) {
                break;
            }
            from = Bytes.keyAfter(batch.get(batch.size() - 1).key());
        }
        backlog.set(seen - freed);
        return freed;
    }

    /** Lists the file's chunks and removes each, rate-limited; completes with how many were removed. */
    private CompletableFuture<Long> free(NsTx.GcEntry e) {
        return reclaimer.chunksAsync(e.inode(), e.layout()).thenCompose(indexes -> {
            AtomicLong removed = new AtomicLong();
            long due = e.enqueuedMillis() + delay.toMillis();
            return Futures.bounded(0, indexes.length, REMOVALS_IN_FLIGHT, i -> paced(due, () ->
                    reclaimer.removeAsync(e.inode(), e.layout(), indexes[(int) i]).thenRun(() -> {
                        removed.incrementAndGet();
                        chunks.increment();
                    }))).thenApply(v -> removed.get());
        });
    }

    /**
     * Starts {@code task}, a removal for a file due since {@code dueMillis} (a trim:
     * 0: due since the epoch, never held back), once its pace allows one more. The busy pace
     * books no slot more than {@link Pace#RECHECK} ahead: a removal that finds none that soon
     * asks again then, so that once the clients stop, what is left goes at the full pace instead
     * of waiting out slots booked while they were busy.
     */
    private CompletableFuture<Void> paced(long dueMillis, java.util.function.Supplier<CompletableFuture<Void>> task) {
        RateLimiter rate = pace.limiter(nowMillis.getAsLong() - dueMillis);
        long wait;
        if (rate == pace.busy) {
            wait = rate.reserveWithin(1, Pace.RECHECK.toNanos());
            if (wait < 0) {
                return later(Pace.RECHECK.toNanos(), () -> paced(dueMillis, task));
            }
            busyChunks.increment();
        } else {
            wait = rate.reserve(1);
        }
        return wait <= 0 ? task.get() : later(wait, task);
    }

    /** Starts {@code task} on the timer after {@code nanos}; completes as the future it returns does. */
    private CompletableFuture<Void> later(long nanos, java.util.function.Supplier<CompletableFuture<Void>> task) {
        CompletableFuture<Void> started = new CompletableFuture<>();
        try {
            timer.schedule(() -> {
                CompletableFuture<Void> f;
                try {
                    f = task.get();
                } catch (RuntimeException e) {
                    f = CompletableFuture.failedFuture(e);
                }
                f.whenComplete((v, e) -> {
                    if (e != null) {
                        started.completeExceptionally(e);
                    } else {
                        started.complete(null);
                    }
                });
            }, nanos, TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            started.completeExceptionally(new StrataException(io.strata.core.Status.CANCELLED, "the collector is stopping"));
        }
        return started;
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

    /**
     * How fast the collector removes chunks: {@code idle} while clients leave the namespace
     * alone, {@code busy} while {@code changing} says they change it, except for a file due for
     * {@code busyMaxWait} or longer (a backlog no load may hold back for longer).
     */
    static final class Pace {
        /** The furthest ahead the busy pace books a removal; one that finds no slot that soon asks again after it. */
        static final Duration RECHECK = Duration.ofSeconds(1);
        final RateLimiter idle;
        final RateLimiter busy;
        private final long busyMaxWaitMillis;
        private final java.util.function.BooleanSupplier changing;

        Pace(StrataClock clock, long chunksPerSecond, long busyChunksPerSecond, Duration busyMaxWait,
             java.util.function.BooleanSupplier changing) {
            this.idle = new RateLimiter(clock, chunksPerSecond);
            this.busy = new RateLimiter(clock, busyChunksPerSecond);
            this.busyMaxWaitMillis = busyMaxWait.toMillis();
            this.changing = changing;
        }

        RateLimiter limiter(long dueForMillis) {
            return dueForMillis < busyMaxWaitMillis && changing.getAsBoolean() ? busy : idle;
        }
    }

    /** Entries waiting in the GC queue (tests, metrics). */
    int queued() {
        byte[] p = KeySpace.GC_QUEUE.prefix();
        return tr.run(tx -> tx.snapshot().getRange(p, Bytes.strinc(p), 0).size());
    }
}
