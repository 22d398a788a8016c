package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Many reads at once, for dataloaders: {@code (file, offset, length)} requests are issued in
 * the order given while their bytes fit in a <b>byte budget</b>, and delivered in the order they
 * complete ({@link #take}). A delivered {@link Result} holds its bytes (and its share of the
 * budget) until it is closed, so memory never exceeds the budget however many requests there
 * are and however slowly the caller consumes them. A request longer than the whole budget fails
 * with INVALID_ARGUMENT (as its result) instead of being read.
 *
 * <p>Each path is resolved once per batch (a read-only namespace call, no session); a file in an
 * {@code immutable} directory is resolved once per client. Reads are clamped to the file's
 * length, holes read as zeros, a failed replica is retried on another; a read that fails
 * anyway is delivered as a result carrying the error, and the batch goes on.
 *
 * <pre>{@code
 * try (BatchRead batch = fs.readBatch(requests, 256L << 20)) {
 *     for (BatchRead.Result next; (next = batch.take()) != null; ) {
 *         try (BatchRead.Result r = next) { consume(r.request().tag(), r.data()); }
 *     }
 * }
 * }</pre>
 */
public final class BatchRead implements AutoCloseable {
    /** The reads issued at once at most, whatever the budget. */
    static final int MAX_IN_FLIGHT = 256;

    /**
     * One completed read: {@code data} (owned by the result: valid until {@link #close}) or the
     * {@code error}. Closing it releases the bytes and their share of the budget.
     */
    public final class Result implements AutoCloseable {
        private final ReadRequest request;
        private final ByteBuf data;
        private final StrataException error;
        private final long reserved;
        private boolean closed;

        private Result(ReadRequest request, ByteBuf data, StrataException error, long reserved) {
            this.request = request;
            this.data = data;
            this.error = error;
            this.reserved = reserved;
        }

        public ReadRequest request() {
            return request;
        }

        /** The bytes read (shorter than asked only at the end of the file); throws the error if the read failed. */
        public ByteBuf data() {
            if (error != null) {
                throw error;
            }
            return data;
        }

        public boolean failed() {
            return error != null;
        }

        public StrataException error() {
            return error;
        }

        @Override
        public void close() {
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
            }
            if (data != null) {
                data.release();
            }
            returned(reserved);
        }
    }

    private final ClientCore core;
    private final Caller caller;
    private final List<ReadRequest> requests;
    private final long budget;
    private final LinkedBlockingQueue<Result> done = new LinkedBlockingQueue<>();
    private final Map<String, CompletableFuture<InodeAttrs>> resolved = new HashMap<>();
    private int next;
    private int inFlight;
    private long reserved;
    private int delivered;
    private boolean closed;

    BatchRead(ClientCore core, Caller caller, List<ReadRequest> requests, long budget) {
        if (budget <= 0) {
            throw new StrataException(Status.INVALID_ARGUMENT, "a batch needs a positive byte budget, got " + budget);
        }
        this.core = core;
        this.caller = caller;
        this.requests = List.copyOf(requests);
        this.budget = budget;
        pump();
    }

    /** Requests in the batch. */
    public int size() {
        return requests.size();
    }

    /** The next completed read, waiting for it; null once every request was delivered. */
    public Result take() {
        Result r = poll(Duration.ofDays(365));
        return r;
    }

    /** The next completed read within {@code timeout}; null if all were delivered, TIMEOUT if none came in time. */
    public Result poll(Duration timeout) {
        synchronized (this) {
            if (delivered == requests.size()) {
                return null;
            }
        }
        try {
            Result r = done.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
            if (r == null) {
                throw new StrataException(Status.TIMEOUT, "no read of the batch completed within " + timeout.toMillis() + " ms");
            }
            synchronized (this) {
                delivered++;
            }
            return r;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StrataException(Status.CANCELLED, "interrupted while waiting for a batch read");
        }
    }

    /** Bytes currently reserved by reads in flight and results not yet closed (never above the budget). */
    public synchronized long reservedBytes() {
        return reserved;
    }

    private void returned(long n) {
        synchronized (this) {
            reserved -= n;
        }
        pump();
    }

    /** Issues requests in order while they fit in the budget and the in-flight cap. */
    private void pump() {
        while (true) {
            ReadRequest r;
            long need;
            synchronized (this) {
                if (closed || next >= requests.size() || inFlight >= MAX_IN_FLIGHT) {
                    return;
                }
                r = requests.get(next);
                need = r.length();
                if (need > budget) {
                    next++;
                    done.add(new Result(r, null, new StrataException(Status.INVALID_ARGUMENT, "a read of " + need
                            + " bytes does not fit the batch budget of " + budget + " bytes"), 0));
                    continue;
                }
                if (reserved + need > budget) {
                    return;
                }
                next++;
                inFlight++;
                reserved += need;
            }
            core.metrics().batchRead();
            issue(r, need);
        }
    }

    private void issue(ReadRequest r, long need) {
        CompletableFuture<ByteBuf> f;
        try {
            f = attrs(r.path()).thenCompose(a -> read(a, r));
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((b, e) -> {
            boolean keep;
            synchronized (this) {
                inFlight--;
                keep = !closed;
            }
            Result res = e == null ? new Result(r, b, null, need) : new Result(r, null, StrataException.wrap(e), need);
            if (keep) {
                done.add(res);
            } else {
                res.close();
            }
            pump();
        });
    }

    private CompletableFuture<InodeAttrs> attrs(String path) {
        String p = PathNames.normalize(path);
        InodeAttrs cached = core.immutables().get(caller.uid(), p);
        if (cached != null) {
            return CompletableFuture.completedFuture(cached);
        }
        synchronized (this) {
            return resolved.computeIfAbsent(p, k -> core.meta().resolveAsync(caller, k).thenApply(a -> {
                core.immutables().offer(caller.uid(), k, a);
                return a;
            }));
        }
    }

    private CompletableFuture<ByteBuf> read(InodeAttrs a, ReadRequest r) {
        if (!a.isFile()) {
            throw new StrataException(a.isDirectory() ? Status.IS_A_DIRECTORY : Status.INVALID_ARGUMENT,
                    "\"" + r.path() + "\" is not a regular file");
        }
        FileState open = core.open(a.id());
        CompletableFuture<Void> settled = open == null ? CompletableFuture.completedFuture(null)
                : open.writes.settle(r.offset(), r.offset() + r.length());
        return settled.thenCompose(v -> {
            long length = open == null ? a.length() : open.length();
            if (r.offset() >= length) {
                return CompletableFuture.completedFuture(Unpooled.EMPTY_BUFFER);
            }
            int n = (int) Math.min(r.length(), length - r.offset());
            FilePolicy policy = FilePolicy.of(a.policy());
            long version = open == null ? a.dataVersion() : open.dataVersion();
            core.metrics().read(n);
            // A file open here knows where a prefetch put its chunks; one read without an open does not.
            return ChunkIo.read(core.tiers().tierFor(policy), a.id(), a.layout(), r.offset(), n,
                    open != null ? open.io() : policy.io(version, core.config().ioTimeout(), core.config().jobQos()), core.alloc(), null);
        });
    }

    /** Stops issuing; releases results not taken yet (reads in flight release theirs when they land). */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        for (Result r; (r = done.poll()) != null; ) {
            r.close();
        }
    }
}
