package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.strata.core.StrataException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The writes of one file in flight from this client, shared by all its open handles.
 *
 * <p><b>Gathering.</b> Contiguous writes are copied into one buffer of {@code capacity} bytes
 * (an <i>extent</i>); a write that does not continue the extent, or fills it, sends the extent
 * to the tiers (split per chunk, in parallel) and returns without waiting. So a stream of small
 * writes (the kernel's 128 KiB FUSE writes, a program's 64 KiB writes) reaches the chains as
 * large parallel chunk writes. Writes of at least {@code capacity} bytes, all writes when
 * {@code capacity} is 0 (strict directories) and writes that cannot get buffer memory from the
 * client's {@link WriteBudget} go straight through and complete when the tier has them.
 *
 * <p><b>Order.</b> An extent overlapping extents still in flight is sent only after they
 * completed, so the later bytes win as they would on a local disk; disjoint extents run in
 * parallel. At most {@link #MAX_IN_FLIGHT} extents are in flight: a write beyond waits.
 *
 * <p><b>Errors.</b> A gathered write that fails later is remembered and reported by the next
 * write, flush, fsync or close of the file (as a kernel reports a write-back error), once.
 *
 * <p>Buffer ownership: {@link #write} borrows {@code data} until its future completes (gathered
 * writes are copied at once).
 */
final class FileWrites {
    static final int MAX_IN_FLIGHT = 4;

    /** Sends [pos, pos + data) to the tiers; borrows {@code data} until the future completes. */
    interface Sender {
        CompletableFuture<Void> send(long pos, ByteBuf data);
    }

    private record Extent(long start, long end, CompletableFuture<Void> done) {
        boolean overlaps(long s, long e) {
            return start < e && s < end;
        }
    }

    private final int capacity;
    private final WriteBudget budget;
    private final ByteBufAllocator alloc;
    private final Sender sender;
    private final List<Extent> inFlight = new ArrayList<>();
    private ByteBuf buf;
    private long start;
    private StrataException error;

    FileWrites(int capacity, WriteBudget budget, ByteBufAllocator alloc, Sender sender) {
        this.capacity = capacity;
        this.budget = budget;
        this.alloc = alloc;
        this.sender = sender;
    }

    /**
     * Accepts a write; the future completes when the caller may reuse {@code data} and write
     * again (at once when gathered, else when the tiers have it). Fails with an earlier gathered
     * write's error if there is one.
     */
    synchronized CompletableFuture<Void> write(long pos, ByteBuf data) {
        StrataException e = takeError();
        if (e != null) {
            return CompletableFuture.failedFuture(e);
        }
        int n = data.readableBytes();
        if (n == 0) {
            return CompletableFuture.completedFuture(null);
        }
        if (buf != null && pos == start + buf.readableBytes() && buf.writableBytes() >= n) {
            buf.writeBytes(data, data.readerIndex(), n);
            if (!buf.isWritable()) {
                sendBuffer();
            }
            return backpressure();
        }
        sendBuffer();
        if (capacity == 0 || n >= capacity || !budget.tryAcquire(capacity)) {
            return submit(pos, pos + n, data, f -> f);
        }
        buf = alloc.directBuffer(capacity, capacity);
        start = pos;
        buf.writeBytes(data, data.readerIndex(), n);
        if (!buf.isWritable()) {
            sendBuffer();
        }
        return backpressure();
    }

    /** Sends the gathered extent if it overlaps [s, e); completes when no write overlapping [s, e) is in flight. */
    synchronized CompletableFuture<Void> settle(long s, long e) {
        if (buf != null && buf.isReadable() && start < e && s < start + buf.readableBytes()) {
            sendBuffer();
        }
        List<CompletableFuture<Void>> wait = new ArrayList<>();
        for (Extent x : inFlight) {
            if (x.overlaps(s, e)) {
                wait.add(x.done.handle((v, t) -> null));
            }
        }
        return wait.isEmpty() ? CompletableFuture.completedFuture(null) : CompletableFuture.allOf(wait.toArray(CompletableFuture[]::new));
    }

    /** Sends everything gathered and completes when all of it is at the tiers; fails with an unreported error. */
    CompletableFuture<Void> flush() {
        CompletableFuture<Void> all;
        synchronized (this) {
            sendBuffer();
            all = CompletableFuture.allOf(inFlight.stream().map(x -> x.done.handle((v, t) -> (Void) null)).toArray(CompletableFuture[]::new));
        }
        return all.thenCompose(v -> {
            StrataException e;
            synchronized (this) {
                e = takeError();
            }
            return e == null ? CompletableFuture.completedFuture(null) : CompletableFuture.failedFuture(e);
        });
    }

    /** Whether any write of [s, e) is gathered or in flight (readahead does not prefetch such ranges). */
    synchronized boolean pending(long s, long e) {
        if (buf != null && buf.isReadable() && start < e && s < start + buf.readableBytes()) {
            return true;
        }
        for (Extent x : inFlight) {
            if (x.overlaps(s, e)) {
                return true;
            }
        }
        return false;
    }

    synchronized boolean idle() {
        return (buf == null || !buf.isReadable()) && inFlight.isEmpty();
    }

    /** Drops what is gathered without sending it (the file is being closed after a failure). */
    synchronized void discard() {
        if (buf != null) {
            buf.release();
            budget.release(capacity);
            buf = null;
        }
    }

    private StrataException takeError() {
        StrataException e = error;
        error = null;
        return e;
    }

    private CompletableFuture<Void> backpressure() {
        if (inFlight.size() <= MAX_IN_FLIGHT) {
            return CompletableFuture.completedFuture(null);
        }
        return inFlight.get(0).done.handle((v, t) -> null);
    }

    private void sendBuffer() {
        if (buf == null) {
            return;
        }
        ByteBuf b = buf;
        buf = null;
        if (!b.isReadable()) {
            b.release();
            budget.release(capacity);
            return;
        }
        long s = start;
        submit(s, s + b.readableBytes(), b, f -> f.whenComplete((v, t) -> {
            b.release();
            budget.release(capacity);
            if (t != null) {
                synchronized (this) {
                    if (error == null) {
                        error = StrataException.wrap(t);
                    }
                }
            }
        }));
    }

    /** Sends [s, e) after the in-flight extents it overlaps; {@code then} decorates the send's future. */
    private CompletableFuture<Void> submit(long s, long e, ByteBuf data,
                                           Function<CompletableFuture<Void>, CompletableFuture<Void>> then) {
        List<CompletableFuture<Void>> before = new ArrayList<>();
        for (Extent x : inFlight) {
            if (x.overlaps(s, e)) {
                before.add(x.done.handle((v, t) -> null));
            }
        }
        CompletableFuture<Void> sent = before.isEmpty() ? sendNow(s, data)
                : CompletableFuture.allOf(before.toArray(CompletableFuture[]::new)).thenCompose(v -> sendNow(s, data));
        CompletableFuture<Void> done = then.apply(sent);
        Extent x = new Extent(s, e, done);
        inFlight.add(x);
        done.whenComplete((v, t) -> {
            synchronized (this) {
                inFlight.remove(x);
            }
        });
        return done;
    }

    private CompletableFuture<Void> sendNow(long s, ByteBuf data) {
        try {
            return sender.send(s, data);
        } catch (RuntimeException ex) {
            return CompletableFuture.failedFuture(ex);
        }
    }
}
