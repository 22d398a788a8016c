package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.FaultPoint;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Write-back of small writes: absorbed per file (inode) in arrival order, kept in memory only,
 * and written to the tier below in that order by a flusher per file.
 *
 * <p><b>Ordering.</b> A file's writes reach the tier below one batch at a time, each after the
 * previous one succeeded; a batch merges consecutive writes of one chunk whose union is one
 * contiguous range (so applying the batch equals applying its writes in order). The tier below
 * therefore always holds a <em>prefix</em> of the file's absorbed writes: never a later write
 * without an earlier one. Files flush in parallel (at most {@code flush-concurrency} at once).
 *
 * <p><b>Triggers.</b> A file flushes when its absorbed bytes reach the policy's
 * {@code write-back.max-bytes}, when its oldest absorbed write reaches {@code write-back.max-age},
 * on {@link #flush} (fsync, close of the file) and when the cache closes.
 *
 * <p><b>Failures.</b> A failed batch is retried ({@code retries} attempts, backoff doubling from
 * {@code retry-backoff}); when every attempt failed the writes stay queued (never dropped), the
 * error is kept, pending {@link #flush} calls fail with it, and the next trigger or {@link #flush}
 * tries again. {@link #flush} succeeds only once every write absorbed before it is at the tier
 * below.
 *
 * <p><b>What a crash loses.</b> Absorbed writes are not journaled: a crash of the client process
 * loses the writes absorbed since the file's last completed flush, and nothing else (see
 * docs/internals/l1-cache.md for why they are not replayed).
 */
final class WriteBack {
    private static final Logger LOG = LoggerFactory.getLogger(WriteBack.class);

    /** Before each batch is sent to the tier below. */
    static final FaultPoint FLUSH = FaultPoint.of("l1.writeback.flush");

    /** Applies one (merged) write to the tier below, keeping the cache consistent around it. {@code data} is borrowed. */
    interface Sink {
        CompletableFuture<Void> write(ChunkAddress chunk, long offset, ByteBuf data, IoOptions io);
    }

    /** An absorbed write. {@code data} is never modified after it is queued. */
    record Pending(long seq, ChunkAddress chunk, long offset, byte[] data, IoOptions io, long enqueuedNanos) {
        long end() {
            return offset + data.length;
        }
    }

    private record Waiter(long seq, CompletableFuture<Void> done) {
    }

    private record Batch(ChunkAddress chunk, long offset, byte[] data, IoOptions io, int count, long bytes, long lastSeq) {
    }

    /** One file's absorbed writes; guarded by itself. */
    private static final class FileQueue {
        final long inode;
        final ArrayDeque<Pending> ops = new ArrayDeque<>();
        final List<Waiter> waiters = new ArrayList<>();
        long bytes;
        long nextSeq = 1;
        long landed;
        boolean flushing;
        boolean dead;
        StrataException error;
        ScheduledFuture<?> timer;

        FileQueue(long inode) {
            this.inode = inode;
        }
    }

    private final NodeContext ctx;
    private final L1Config.WriteBack config;
    private final L1Metrics metrics;
    private final Sink sink;
    private final Map<Long, FileQueue> queues = new ConcurrentHashMap<>();
    private final AtomicLong buffered = new AtomicLong();
    private final ArrayDeque<FileQueue> waitingForPermit = new ArrayDeque<>();
    private int running;
    private volatile boolean closed;

    WriteBack(NodeContext ctx, L1Config.WriteBack config, L1Metrics metrics, Sink sink) {
        this.ctx = ctx;
        this.config = config;
        this.metrics = metrics;
        this.sink = sink;
        metrics.gauge("strata.l1.writeback.queue.bytes", "absorbed bytes not yet at the tier below", buffered, AtomicLong::get);
        metrics.gauge("strata.l1.writeback.queue.writes", "absorbed writes not yet at the tier below", this, w -> w.pendingWrites());
        metrics.gauge("strata.l1.writeback.queue.files", "files with absorbed writes not yet at the tier below", queues, Map::size);
        metrics.gauge("strata.l1.writeback.oldest.age", "age in seconds of the oldest absorbed write not yet at the tier below",
                this, w -> w.oldestAge().toNanos() / 1e9);
    }

    /**
     * Absorbs a write of {@code data} (borrowed; copied) if the node's write-back buffer has room;
     * returns false (nothing absorbed) when it has not, after starting flushes to make room.
     */
    boolean absorb(ChunkAddress chunk, long offset, ByteBuf data, IoOptions io) {
        if (closed) {
            throw new StrataException(Status.SHUTTING_DOWN, "L1 cache is closed");
        }
        int n = data.readableBytes();
        if (buffered.addAndGet(n) > config.buffer().bytes()) {
            buffered.addAndGet(-n);
            queues.values().forEach(this::startFlush);
            return false;
        }
        byte[] copy = new byte[n];
        data.getBytes(data.readerIndex(), copy);
        long inode = chunk.id().inode().value();
        boolean full;
        FileQueue q;
        while (true) {
            q = queues.computeIfAbsent(inode, FileQueue::new);
            synchronized (q) {
                if (q.dead) {
                    continue;
                }
                q.ops.add(new Pending(q.nextSeq++, chunk, offset, copy, io, ctx.clock().nanoTime()));
                q.bytes += n;
                full = q.bytes >= io.cache().writeBackMaxBytes();
                if (q.ops.size() == 1) {
                    scheduleTimer(q, io.cache().writeBackMaxAge());
                }
                break;
            }
        }
        metrics.absorbedBytes.increment(n);
        if (full) {
            startFlush(q);
        }
        return true;
    }

    /** The absorbed writes of one chunk not yet known to be at the tier below, oldest first. */
    List<Pending> pendingWrites(long inode, int chunkIndex) {
        FileQueue q = queues.get(inode);
        if (q == null) {
            return List.of();
        }
        synchronized (q) {
            if (q.ops.isEmpty()) {
                return List.of();
            }
            List<Pending> out = new ArrayList<>();
            for (Pending p : q.ops) {
                if (p.chunk().id().index() == chunkIndex) {
                    out.add(p);
                }
            }
            return out;
        }
    }

    boolean hasPending(long inode) {
        FileQueue q = queues.get(inode);
        if (q == null) {
            return false;
        }
        synchronized (q) {
            return !q.ops.isEmpty();
        }
    }

    /** Completes once every write of {@code inode} absorbed before this call is at the tier below. */
    CompletableFuture<Void> flush(long inode) {
        FileQueue q = queues.get(inode);
        if (q == null) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> f = new CompletableFuture<>();
        synchronized (q) {
            long target = q.nextSeq - 1;
            if (q.ops.isEmpty() || target <= q.landed) {
                return CompletableFuture.completedFuture(null);
            }
            q.waiters.add(new Waiter(target, f));
        }
        startFlush(q);
        return f;
    }

    /** Flushes every file; completes when all writes absorbed before the call are at the tier below. */
    CompletableFuture<Void> flushAll() {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (Long inode : queues.keySet()) {
            all.add(flush(inode));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
    }

    // ---- the flusher ----

    private void scheduleTimer(FileQueue q, Duration delay) {
        // caller holds q
        if (q.timer != null || closed) {
            return;
        }
        try {
            q.timer = ctx.scheduler().schedule(() -> {
                synchronized (q) {
                    q.timer = null;
                }
                startFlush(q);
            }, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException shuttingDown) {
            q.timer = null;
        }
    }

    private void startFlush(FileQueue q) {
        synchronized (q) {
            if (q.flushing || q.ops.isEmpty()) {
                return;
            }
            q.flushing = true;
        }
        synchronized (waitingForPermit) {
            if (running >= config.flushConcurrency()) {
                waitingForPermit.add(q);
                return;
            }
            running++;
        }
        runBatch(q, 1);
    }

    private void releasePermit() {
        FileQueue next;
        synchronized (waitingForPermit) {
            next = waitingForPermit.poll();
            if (next == null) {
                running--;
                return;
            }
        }
        dispatch(() -> runBatch(next, 1));
    }

    private void dispatch(Runnable r) {
        try {
            ctx.scheduler().execute(r);
        } catch (RejectedExecutionException shuttingDown) {
            r.run();
        }
    }

    private void runBatch(FileQueue q, int attempt) {
        Batch b;
        synchronized (q) {
            b = coalesce(q);
            if (b == null) {
                q.flushing = false;
                retire(q);
            }
        }
        if (b == null) {
            releasePermit();
            return;
        }
        CompletableFuture<Void> sent;
        ByteBuf data = Unpooled.wrappedBuffer(b.data());
        try {
            ctx.faults().fire(FLUSH);
            sent = sink.write(b.chunk(), b.offset(), data, b.io());
        } catch (RuntimeException e) {
            sent = CompletableFuture.failedFuture(e);
        }
        sent.whenComplete((v, err) -> {
            data.release();
            if (err == null) {
                landed(q, b);
                dispatch(() -> runBatch(q, 1));
            } else {
                failed(q, b, attempt, StrataException.wrap(err));
            }
        });
    }

    /** The next batch: the oldest write merged with the following ones of the same chunk while their union stays contiguous. */
    private Batch coalesce(FileQueue q) {
        Pending first = q.ops.peekFirst();
        if (first == null) {
            return null;
        }
        long lo = first.offset();
        long hi = first.end();
        List<Pending> parts = new ArrayList<>();
        parts.add(first);
        Iterator<Pending> it = q.ops.iterator();
        it.next();
        while (it.hasNext()) {
            Pending p = it.next();
            if (!p.chunk().equals(first.chunk()) || p.io().dataVersion() != first.io().dataVersion()
                    || p.offset() > hi || p.end() < lo) {
                break;
            }
            lo = Math.min(lo, p.offset());
            hi = Math.max(hi, p.end());
            parts.add(p);
        }
        long bytes = 0;
        byte[] merged;
        if (parts.size() == 1) {
            merged = first.data();
            bytes = merged.length;
        } else {
            merged = new byte[(int) (hi - lo)];
            for (Pending p : parts) {
                System.arraycopy(p.data(), 0, merged, (int) (p.offset() - lo), p.data().length);
                bytes += p.data().length;
            }
        }
        Pending last = parts.get(parts.size() - 1);
        return new Batch(first.chunk(), lo, merged, last.io(), parts.size(), bytes, last.seq());
    }

    private void landed(FileQueue q, Batch b) {
        List<Waiter> done = new ArrayList<>();
        synchronized (q) {
            for (int i = 0; i < b.count(); i++) {
                q.ops.pollFirst();
            }
            q.bytes -= b.bytes();
            q.landed = b.lastSeq();
            q.error = null;
            for (Iterator<Waiter> it = q.waiters.iterator(); it.hasNext(); ) {
                Waiter w = it.next();
                if (w.seq() <= q.landed) {
                    done.add(w);
                    it.remove();
                }
            }
        }
        buffered.addAndGet(-b.bytes());
        metrics.flushedBytes.increment(b.bytes());
        metrics.flushes.increment();
        for (Waiter w : done) {
            w.done().complete(null);
        }
    }

    private void failed(FileQueue q, Batch b, int attempt, StrataException e) {
        metrics.flushFailures.increment();
        if (attempt < config.retries() && !closed) {
            long backoff = Math.min(TimeUnit.SECONDS.toNanos(1), config.retryBackoff().toNanos() << Math.min(20, attempt - 1));
            LOG.debug("L1: write-back of inode {} failed (attempt {} of {}): {}; retrying", q.inode, attempt, config.retries(), e.toString());
            try {
                ctx.scheduler().schedule(() -> runBatch(q, attempt + 1), backoff, TimeUnit.NANOSECONDS);
                return;
            } catch (RejectedExecutionException shuttingDown) {
                // fall through: give up this round
            }
        }
        LOG.warn("L1: write-back of inode {} failed after {} attempts ({} bytes kept, will retry on the next flush): {}",
                q.inode, attempt, q.bytes, e.toString());
        List<Waiter> fail;
        synchronized (q) {
            q.error = e;
            q.flushing = false;
            fail = new ArrayList<>(q.waiters);
            q.waiters.clear();
            if (!closed) {
                scheduleTimer(q, max(b.io().cache().writeBackMaxAge(), Duration.ofSeconds(1)));
            }
        }
        releasePermit();
        StrataException surfaced = new StrataException(e.status(), "write-back of inode " + q.inode
                + " could not reach the tier below (writes kept, retried on the next flush): " + e.getMessage(), e);
        for (Waiter w : fail) {
            w.done().completeExceptionally(surfaced);
        }
    }

    /** Forgets an idle, empty queue (caller holds q). */
    private void retire(FileQueue q) {
        if (q.ops.isEmpty() && q.waiters.isEmpty() && !q.flushing) {
            if (q.timer != null) {
                q.timer.cancel(false);
                q.timer = null;
            }
            q.dead = true;
            queues.remove(q.inode, q);
        } else if (!q.ops.isEmpty() && q.timer == null && !closed) {
            Pending oldest = q.ops.peekFirst();
            long age = ctx.clock().nanoTime() - oldest.enqueuedNanos();
            scheduleTimer(q, oldest.io().cache().writeBackMaxAge().minusNanos(age));
        }
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    // ---- views ----

    long bufferedBytes() {
        return buffered.get();
    }

    long pendingWrites() {
        long n = 0;
        for (FileQueue q : queues.values()) {
            synchronized (q) {
                n += q.ops.size();
            }
        }
        return n;
    }

    int pendingFiles() {
        int n = 0;
        for (FileQueue q : queues.values()) {
            synchronized (q) {
                n += q.ops.isEmpty() ? 0 : 1;
            }
        }
        return n;
    }

    /** [writes, bytes] absorbed and not yet at the tier below for one file. */
    long[] pending(long inode) {
        FileQueue q = queues.get(inode);
        if (q == null) {
            return new long[]{0, 0};
        }
        synchronized (q) {
            return new long[]{q.ops.size(), q.bytes};
        }
    }

    Duration oldestAge() {
        long now = ctx.clock().nanoTime();
        long oldest = Long.MAX_VALUE;
        for (FileQueue q : queues.values()) {
            synchronized (q) {
                Pending p = q.ops.peekFirst();
                if (p != null) {
                    oldest = Math.min(oldest, p.enqueuedNanos());
                }
            }
        }
        return oldest == Long.MAX_VALUE ? Duration.ZERO : Duration.ofNanos(Math.max(0, now - oldest));
    }

    /**
     * Stops absorbing, flushes every file and waits up to {@code close-timeout}; returns a line per
     * file whose writes could not be flushed (those writes are lost), empty when all landed.
     */
    List<String> close() {
        closed = true;
        List<Long> inodes = new ArrayList<>(queues.keySet());
        List<CompletableFuture<Void>> flushes = new ArrayList<>();
        for (Long inode : inodes) {
            flushes.add(flush(inode));
        }
        long deadline = ctx.clock().nanoTime() + config.closeTimeout().toNanos();
        List<String> lost = new ArrayList<>();
        for (int i = 0; i < inodes.size(); i++) {
            try {
                flushes.get(i).get(Math.max(1, deadline - ctx.clock().nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                lost.add("inode " + inodes.get(i) + ": interrupted");
            } catch (TimeoutException e) {
                lost.add("inode " + inodes.get(i) + ": not flushed within " + config.closeTimeout().toSeconds() + " s");
            } catch (java.util.concurrent.ExecutionException e) {
                lost.add("inode " + inodes.get(i) + ": " + StrataException.wrap(e.getCause()).getMessage());
            }
        }
        for (FileQueue q : queues.values()) {
            synchronized (q) {
                if (!q.ops.isEmpty() && lost.stream().noneMatch(s -> s.startsWith("inode " + q.inode + ":"))) {
                    lost.add("inode " + q.inode + ": " + q.ops.size() + " writes still queued");
                }
                if (q.timer != null) {
                    q.timer.cancel(false);
                }
            }
        }
        return lost;
    }
}
