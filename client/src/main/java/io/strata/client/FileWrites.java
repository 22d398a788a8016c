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
 * completed, so the later bytes win as they would on a local disk (if one of those failed, the
 * later extent fails with it, unsent); disjoint extents run in parallel. At most
 * {@link #MAX_IN_FLIGHT} extents are in flight: a write beyond waits.
 *
 * <p><b>Errors.</b> A gathered write that fails later (a chain member down past the I/O timeout)
 * keeps its bytes and is sent again, in order, by the next write, read, flush or fsync of the
 * file; its error is reported once, by the next write (as a kernel reports a write-back error).
 * A flush or fsync succeeds only when no failed write is left. Closing a handle while failed
 * writes are left fails; closing the file's last writing handle also drops them (after one more
 * try), while another writing handle keeps them to send again. So a write that failed while a
 * node restarted is not lost when the node comes back before the file is closed, and no handle's
 * close succeeds over bytes another handle's close gave up.
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
    /** Gathered writes that failed, kept (with their budget) to be sent again, oldest first. */
    private final List<Failed> failed = new ArrayList<>();
    private StrataException lastFailure;
    /** Set when the file's last handle here closed: a write that fails after it is not kept. */
    private boolean discarded;

    private record Failed(long start, ByteBuf data) {
        boolean overlaps(long s, long e) {
            return start < e && s < start + data.readableBytes();
        }
    }

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
        resendFailed();
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
        resendFailed();
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

    /**
     * Sends everything gathered (and the failed writes again) and completes when all of it is at
     * the tiers; fails while a write is still failing. With {@code last} (the close of the file's
     * last writing handle), what still fails is dropped.
     */
    CompletableFuture<Void> flush(boolean last) {
        CompletableFuture<Void> all;
        synchronized (this) {
            resendFailed();
            sendBuffer();
            all = CompletableFuture.allOf(inFlight.stream().map(x -> x.done.handle((v, t) -> (Void) null)).toArray(CompletableFuture[]::new));
        }
        return all.thenCompose(v -> {
            StrataException e;
            synchronized (this) {
                e = takeError();
                if (!failed.isEmpty()) {
                    if (e == null) {
                        e = lastFailure;
                    }
                    if (last) {
                        discardFailed();
                    }
                }
            }
            return e == null ? CompletableFuture.completedFuture(null) : CompletableFuture.failedFuture(e);
        });
    }

    /** Whether any write of [s, e) is gathered or in flight (readahead does not prefetch such ranges). */
    synchronized boolean pending(long s, long e) {
        if (buf != null && buf.isReadable() && start < e && s < start + buf.readableBytes()) {
            return true;
        }
        for (Failed f : failed) {
            if (f.overlaps(s, e)) {
                return true;
            }
        }
        for (Extent x : inFlight) {
            if (x.overlaps(s, e)) {
                return true;
            }
        }
        return false;
    }

    synchronized boolean idle() {
        return (buf == null || !buf.isReadable()) && inFlight.isEmpty() && failed.isEmpty();
    }

    /** Sends the failed writes again, oldest first (each after the in-flight writes it overlaps). */
    private void resendFailed() {
        if (failed.isEmpty()) {
            return;
        }
        List<Failed> again = new ArrayList<>(failed);
        failed.clear();
        for (Failed f : again) {
            sendExtent(f.start, f.data);
        }
    }

    /**
     * The file's last handle here closed: drops what is still failing (every writing handle's close
     * that saw it failed) and what fails from now on. A late failure can only come from a close
     * that gave up waiting for its flush, and that close failed.
     */
    synchronized void discard() {
        discarded = true;
        discardFailed();
    }

    private void discardFailed() {
        for (Failed f : failed) {
            f.data.release();
            budget.release(capacity);
        }
        failed.clear();
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
        sendExtent(start, b);
    }

    /** Sends gathered extent {@code b} (holding {@code capacity} of the budget) at {@code s}; a failure keeps it in {@link #failed}. */
    private void sendExtent(long s, ByteBuf b) {
        submit(s, s + b.readableBytes(), b, f -> f.whenComplete((v, t) -> {
            if (t == null) {
                b.release();
                budget.release(capacity);
                return;
            }
            synchronized (this) {
                StrataException e = StrataException.wrap(t);
                lastFailure = e;
                if (error == null) {
                    error = e;
                }
                if (discarded) {
                    b.release();
                    budget.release(capacity);
                } else {
                    failed.add(new Failed(s, b));
                }
            }
        }));
    }

    /**
     * Sends [s, e) after the in-flight extents it overlaps; {@code then} decorates the send's
     * future. If one of those fails, [s, e) is not sent and fails too: sent alone it would be
     * overwritten by the older bytes when they are sent again.
     */
    private CompletableFuture<Void> submit(long s, long e, ByteBuf data,
                                           Function<CompletableFuture<Void>, CompletableFuture<Void>> then) {
        List<CompletableFuture<Void>> before = new ArrayList<>();
        for (Extent x : inFlight) {
            if (x.overlaps(s, e)) {
                before.add(x.done);
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
