package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.StrataException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * Sequential readahead of one open file (one handle).
 *
 * <p>The file is read in <i>units</i> of {@code min(chunk size, 1 MiB)}, aligned, so a unit never
 * spans two chunks. A read that starts exactly where the previous one ended is sequential; from
 * the second sequential read on, the reads are served from units and the handle keeps a window
 * of units in flight ahead of the reader (and, while it does, tolerates reads arriving slightly
 * out of order: the kernel's readahead sends concurrent FUSE reads). The window starts at two units and doubles with every sequential
 * read up to {@code maxWindow}; any other read is random: it drops the window and its units and
 * reads exactly what was asked. Units behind the reader are released at once, so a handle holds
 * at most the window plus two units.
 *
 * <p>Units are never served stale: each remembers the file's write epoch when it was fetched and
 * is dropped if a local write or truncate happened since; ranges with local writes pending are
 * not prefetched (see {@link FileWrites#pending}).
 */
final class Readahead {
    /** Fetches [pos, pos + len) (clamped to the file) into an owned buffer. */
    interface Fetcher {
        CompletableFuture<ByteBuf> fetch(long pos, int len);
    }

    /** A fetched (or fetching) unit; released when neither the window nor a read holds it. */
    private static final class Unit {
        final long epoch;
        final CompletableFuture<ByteBuf> data;
        private int holders = 1; // the window

        Unit(long epoch, CompletableFuture<ByteBuf> data) {
            this.epoch = epoch;
            this.data = data;
        }

        synchronized void hold() {
            holders++;
        }

        synchronized void unhold() {
            if (--holders == 0) {
                data.whenComplete((b, e) -> {
                    if (b != null) {
                        b.release();
                    }
                });
            }
        }
    }

    private final int unit;
    private final long maxWindow;
    private final Fetcher fetcher;
    private final ByteBufAllocator alloc;
    private final TreeMap<Long, Unit> units = new TreeMap<>();
    private long nextExpected;
    private long window;
    private int streak;
    private long prefetched;
    private long hits;
    private long misses;

    Readahead(int chunkSize, long maxWindow, Fetcher fetcher, ByteBufAllocator alloc) {
        this.unit = Math.min(chunkSize, 1 << 20);
        this.maxWindow = maxWindow;
        this.fetcher = fetcher;
        this.alloc = alloc;
    }

    /**
     * Reads [pos, pos + n) of a file of {@code length} bytes whose write epoch is {@code epoch};
     * {@code pending} tells which ranges have local writes in flight. Returns an owned buffer.
     */
    synchronized CompletableFuture<ByteBuf> read(long pos, int n, long length, long epoch, PendingWrites pending) {
        // entering the sequential mode takes an exact continuation; once in it, reads may arrive
        // slightly out of order (concurrent FUSE requests of the kernel's readahead)
        boolean sequential = window == 0 ? pos == nextExpected
                : pos >= nextExpected - 2L * unit && pos <= nextExpected + window;
        nextExpected = sequential ? Math.max(nextExpected, pos + n) : pos + n;
        if (!sequential || maxWindow == 0) {
            streak = 0;
            window = 0;
            dropAll();
            return fetcher.fetch(pos, n);
        }
        if (++streak < 2) {
            return fetcher.fetch(pos, n);
        }
        window = window == 0 ? Math.min(maxWindow, 2L * unit) : Math.min(maxWindow, window * 2);
        dropStale(epoch);
        // the units this read needs, fetched now if missing
        long first = pos / unit;
        long last = (pos + n - 1) / unit;
        for (long u = first; u <= last; u++) {
            long s = u * unit;
            if (!units.containsKey(u) && pending.pending(s, Math.min(length, s + unit))) {
                // a local write to this unit outside [pos, pos + n) is still gathered or in flight:
                // a unit fetched now would miss it and serve it stale later; read exactly what was
                // asked (the caller settled the writes overlapping it)
                return fetcher.fetch(pos, n);
            }
        }
        List<Unit> parts = new ArrayList<>();
        for (long u = first; u <= last; u++) {
            Unit x = units.get(u);
            if (x == null) {
                misses++;
                x = fetchUnit(u, length, epoch);
                units.put(u, x);
            } else {
                hits++;
            }
            x.hold();
            parts.add(x);
        }
        // release what lies behind the reader, prefetch the window ahead
        long keepFrom = Math.max(0, first - 2);
        Iterator<Map.Entry<Long, Unit>> it = units.headMap(keepFrom).entrySet().iterator();
        while (it.hasNext()) {
            it.next().getValue().unhold();
            it.remove();
        }
        long ahead = Math.min(length, pos + n + window);
        for (long u = Math.max(last + 1, prefetched); u * unit < ahead; u++) {
            long s = u * unit;
            if (!units.containsKey(u) && !pending.pending(s, Math.min(length, s + unit))) {
                units.put(u, fetchUnit(u, length, epoch));
            }
            prefetched = u + 1;
        }
        return assemble(parts, pos, n, first);
    }

    /** What the readahead served from units already fetched, and what it had to fetch on demand. */
    synchronized long[] counts() {
        return new long[] {hits, misses};
    }

    synchronized void close() {
        dropAll();
    }

    private Unit fetchUnit(long u, long length, long epoch) {
        long s = u * unit;
        int len = (int) Math.max(0, Math.min(unit, length - s));
        return new Unit(epoch, fetcher.fetch(s, len));
    }

    /** Slices [pos, pos+n) out of the units (retained slices, so the units stay releasable). */
    private CompletableFuture<ByteBuf> assemble(List<Unit> parts, long pos, int n, long first) {
        CompletableFuture<Void> all = CompletableFuture.allOf(parts.stream().map(x -> x.data).toArray(CompletableFuture[]::new));
        return all.handle((v, e) -> {
            if (e != null) {
                parts.forEach(Unit::unhold);
                synchronized (this) {
                    dropAll();
                }
                throw StrataException.wrap(e);
            }
            CompositeByteBuf out = alloc.compositeDirectBuffer(parts.size());
            try {
                long cursor = pos;
                long end = pos + n;
                for (int i = 0; i < parts.size(); i++) {
                    long unitStart = (first + i) * unit;
                    ByteBuf b = parts.get(i).data.join();
                    int from = (int) (cursor - unitStart);
                    int to = (int) Math.min(b.readableBytes(), end - unitStart);
                    if (to > from) {
                        out.addComponent(true, b.retainedSlice(b.readerIndex() + from, to - from));
                        cursor = unitStart + to;
                    }
                }
                if (out.readableBytes() < n) {
                    // a unit came back shorter than the file's length says (the file shrank under us)
                    out.addComponent(true, Unpooled.directBuffer(n - out.readableBytes()).writeZero(n - out.readableBytes()));
                }
                return (ByteBuf) out;
            } catch (RuntimeException ex) {
                out.release();
                throw ex;
            } finally {
                parts.forEach(Unit::unhold);
            }
        });
    }

    private void dropStale(long epoch) {
        Iterator<Map.Entry<Long, Unit>> it = units.entrySet().iterator();
        boolean dropped = false;
        while (it.hasNext()) {
            Unit x = it.next().getValue();
            if (x.epoch != epoch) {
                x.unhold();
                it.remove();
                dropped = true;
            }
        }
        if (dropped) {
            prefetched = 0;
        }
    }

    private void dropAll() {
        for (Unit x : units.values()) {
            x.unhold();
        }
        units.clear();
        prefetched = 0;
    }

    /** Which ranges have local writes gathered or in flight. */
    interface PendingWrites {
        boolean pending(long s, long e);
    }
}
