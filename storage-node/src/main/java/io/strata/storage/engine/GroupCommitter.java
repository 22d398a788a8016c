package io.strata.storage.engine;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.DistributionSummary;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.fault.FaultPoint;
import io.strata.core.fault.FaultScope;
import io.strata.store.IndexEnv;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.lmdbjava.Dbi;
import org.lmdbjava.Env;
import org.lmdbjava.LmdbException;
import org.lmdbjava.LmdbNativeException;
import org.lmdbjava.Txn;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies chunk-metadata changes to LMDB in batches: one thread takes every change queued while
 * the previous batch was being written and commits them in one write transaction. A batch with
 * any durable change is then flushed ({@code mdb_env_sync}), so concurrent writes share one
 * metadata flush instead of paying one each. The environment runs with {@code MDB_NOMETASYNC}:
 * every commit flushes its data pages (LMDB stays consistent after a power loss), and only
 * durable batches also flush the meta page.
 *
 * <p>Data files that a change stops referencing are deleted only after a flush has made that
 * change durable; until then an older metadata state that still names them could come back.
 */
final class GroupCommitter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GroupCommitter.class);

    /** Before each metadata batch is written. */
    static final FaultPoint META_COMMIT = FaultPoint.of("chunk.meta-commit");

    /** The batch was committed but its flush failed: the changes stand, their durability is unknown. */
    static final class FlushFailed extends StrataException {
        private static final long serialVersionUID = 1L;

        FlushFailed(StrataException cause) {
            super(cause.status(), cause.getMessage(), cause);
        }
    }

    /** One change: put {@code meta} (or delete the key when it has no versions). */
    record Op(ChunkMeta meta, boolean durable, long[] freeAfter, CompletableFuture<Void> done) {
    }

    /** How long a batch of only non-durable changes waits for a durable one to share its transaction. */
    private static final long LAZY_WAIT_MILLIS = 20;

    private final TargetId target;
    private final NodeContext ctx;
    private final IndexEnv env;
    private final Dbi<ByteBuffer> dbi;
    private final FilePool files;
    private final int maxBatch;
    private final LinkedBlockingQueue<Op> queue = new LinkedBlockingQueue<>();
    private final List<Long> unsyncedFrees = new ArrayList<>();
    private final Thread thread;
    private final Counter batches;
    private final DistributionSummary batchOps;
    private final Timer commitTime;
    private final ByteBuffer key = ByteBuffer.allocateDirect(12);
    private ByteBuffer value = ByteBuffer.allocateDirect(16 * 1024);
    private volatile boolean closed;

    GroupCommitter(TargetId target, NodeContext ctx, IndexEnv env, Dbi<ByteBuffer> dbi, FilePool files, int maxBatch) {
        this.target = target;
        this.ctx = ctx;
        this.env = env;
        this.dbi = dbi;
        this.files = files;
        this.maxBatch = maxBatch;
        this.batches = Counter.builder("strata.storage.fsync.batches").description("metadata group commits (one LMDB transaction each)")
                .tag("target", String.valueOf(target.value())).register(ctx.meters());
        this.batchOps = DistributionSummary.builder("strata.storage.fsync.batch.size").description("changes per metadata group commit")
                .tag("target", String.valueOf(target.value())).register(ctx.meters());
        this.commitTime = Timer.builder("strata.storage.engine.commit")
                .description("one metadata group commit: LMDB transaction and, for durable batches, its flush")
                .tag("target", String.valueOf(target.value())).register(ctx.meters());
        this.thread = new Thread(this::run, ctx.name() + "-" + target + "-commit");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /** Queues a change; the future completes once it is committed (and flushed when durable). */
    CompletableFuture<Void> submit(ChunkMeta meta, boolean durable, long... freeAfter) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        if (closed) {
            f.completeExceptionally(new StrataException(Status.SHUTTING_DOWN, target + " is closed"));
            return f;
        }
        queue.add(new Op(meta, durable, freeAfter, f));
        return f;
    }

    private void run() {
        List<Op> batch = new ArrayList<>();
        while (!closed || !queue.isEmpty()) {
            Op first;
            try {
                first = queue.poll(500, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                if (closed) {
                    continue;
                }
                continue;
            }
            if (first == null) {
                if (!unsyncedFrees.isEmpty()) {
                    flushAndFree();
                }
                continue;
            }
            batch.clear();
            batch.add(first);
            queue.drainTo(batch, maxBatch - 1);
            if (batch.stream().noneMatch(Op::durable) && batch.size() < maxBatch) {
                // only commit records: give a durable change a moment to share the transaction
                try {
                    Op more = queue.poll(LAZY_WAIT_MILLIS, TimeUnit.MILLISECONDS);
                    if (more != null) {
                        batch.add(more);
                        queue.drainTo(batch, maxBatch - batch.size());
                    }
                } catch (InterruptedException e) {
                    // closing: commit what we have
                }
            }
            long t0 = ctx.clock().nanoTime();
            commit(batch);
            commitTime.record(ctx.clock().nanoTime() - t0, TimeUnit.NANOSECONDS);
        }
    }

    private void commit(List<Op> batch) {
        boolean durable = false;
        boolean written = false;
        try {
            ctx.faults().fire(META_COMMIT, FaultScope.detail(target.toString()));
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                for (Op op : batch) {
                    ChunkMeta.key(op.meta().id(), key);
                    if (op.meta().committed() == null && op.meta().pending() == null) {
                        dbi.delete(txn, key);
                    } else {
                        int n = op.meta().encodedSize();
                        if (value.capacity() < n) {
                            value = ByteBuffer.allocateDirect(Integer.highestOneBit(n) * 2);
                        }
                        value.clear();
                        op.meta().encode(value);
                        value.flip();
                        dbi.put(txn, key, value);
                    }
                    durable |= op.durable();
                }
                txn.commit();
            }
            written = true;
            if (durable) {
                env.flush();
            }
        } catch (RuntimeException e) {
            StrataException se = mapError(e, written);
            if (written) {
                // committed but not flushed: the changes stand; report the flush failure
                LOG.error("{}: metadata flush failed after commit: {}", target, e.toString());
            } else {
                LOG.warn("{}: metadata batch of {} failed: {}", target, batch.size(), e.toString());
            }
            for (Op op : batch) {
                if (written) {
                    for (long f : op.freeAfter()) {
                        unsyncedFrees.add(f);
                    }
                }
                op.done().completeExceptionally(written ? new FlushFailed(se) : se);
            }
            return;
        }
        batches.increment();
        batchOps.record(batch.size());
        for (Op op : batch) {
            for (long f : op.freeAfter()) {
                if (f != 0) {
                    unsyncedFrees.add(f);
                }
            }
        }
        if (durable) {
            freeSynced();
        }
        for (Op op : batch) {
            op.done().complete(null);
        }
    }

    private void flushAndFree() {
        try {
            env.flush();
            freeSynced();
        } catch (RuntimeException e) {
            LOG.warn("{}: metadata flush failed: {}", target, e.toString());
        }
    }

    private void freeSynced() {
        for (long f : unsyncedFrees) {
            files.delete(f);
        }
        unsyncedFrees.clear();
    }

    static StrataException mapError(Throwable t, boolean afterCommit) {
        Throwable c = StrataException.unwrapCompletion(t);
        if (c instanceof StrataException se) {
            return se;
        }
        if (c instanceof Env.MapFullException) {
            return new StrataException(Status.NO_SPACE, "chunk metadata map is full (raise [storage] meta-map-size)", c);
        }
        if (c instanceof LmdbNativeException n && n.getResultCode() == 28) {
            return new StrataException(Status.NO_SPACE, "no space left for chunk metadata", c);
        }
        if (c instanceof LmdbException) {
            return new StrataException(Status.IO_ERROR, "chunk metadata " + (afterCommit ? "flush" : "commit") + " failed: " + c.getMessage(), c);
        }
        return StrataException.wrap(c);
    }

    /** Stops after committing what is queued. */
    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Op op;
        while ((op = queue.poll()) != null) {
            op.done().completeExceptionally(new StrataException(Status.SHUTTING_DOWN, target + " is closed"));
        }
        if (!unsyncedFrees.isEmpty()) {
            flushAndFree();
        }
    }
}
