package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.Tier;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Layout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * File byte ranges as chunk operations (docs/design.md, "Data model"): byte {@code p} of a file is
 * byte {@code p mod chunkSize} of chunk {@code p / chunkSize}, which lives on chain
 * {@code layout.chains[index mod stripeWidth]}. A range is split at chunk boundaries and every
 * piece is issued at once, so a read or write spanning several chunks runs on several chains in
 * parallel. Reads fill what a chunk does not hold (a hole, a chunk never written) with zeros:
 * the caller has already clamped the range to the file's length.
 *
 * <p>Buffer ownership: {@link #read} returns an <b>owned</b> buffer of exactly the length asked;
 * {@link #write} <b>borrows</b> {@code data} until its future completes.
 */
final class ChunkIo {
    /** Zeros for holes: sliced, never released, never written. */
    private static final ByteBuf ZEROS = Unpooled.unreleasableBuffer(
            Unpooled.unmodifiableBuffer(Unpooled.directBuffer(1 << 20).writeZero(1 << 20)));
    /** Chunks removed or truncated at once by a truncate (each is one chain update). */
    static final int TRUNCATE_PARALLELISM = 32;

    private ChunkIo() {
    }

    static ChunkAddress address(InodeId inode, Layout layout, long index) {
        if (index > ChunkId.MAX_INDEX) {
            throw new StrataException(Status.FILE_TOO_LARGE, "chunk " + index + " of " + inode + " is past the largest file");
        }
        return new ChunkAddress(new ChunkId(inode, (int) index), layout.chainOf(index), layout.chunkSize());
    }

    /**
     * Reads {@code [pos, pos + len)}: one tier read per chunk touched, all in flight at once; the
     * result is the pieces in order, each padded with zeros to its full length. {@code onHole}
     * (may be null) runs when a piece came back shorter than asked, before it is padded.
     */
    static CompletableFuture<ByteBuf> read(Tier tier, InodeId inode, Layout layout, long pos, int len, IoOptions io,
                                           ByteBufAllocator alloc, Runnable onHole) {
        if (len == 0) {
            return CompletableFuture.completedFuture(Unpooled.EMPTY_BUFFER);
        }
        int cs = layout.chunkSize();
        List<CompletableFuture<ByteBuf>> parts = new ArrayList<>();
        long end = pos + len;
        try {
            for (long off = pos; off < end; ) {
                long index = off / cs;
                int inChunk = (int) (off % cs);
                int n = (int) Math.min(cs - inChunk, end - off);
                CompletableFuture<ByteBuf> f = tier.readAsync(address(inode, layout, index), inChunk, n, io);
                parts.add(f.thenApply(b -> {
                    if (onHole != null && b.readableBytes() < n) {
                        onHole.run();
                    }
                    return pad(b, n);
                }));
                off += n;
            }
        } catch (RuntimeException e) {
            releaseAll(parts);
            return CompletableFuture.failedFuture(e);
        }
        if (parts.size() == 1) {
            return parts.get(0);
        }
        CompletableFuture<ByteBuf> out = new CompletableFuture<>();
        CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
            if (e != null) {
                releaseAll(parts);
                out.completeExceptionally(StrataException.wrap(e));
                return;
            }
            CompositeByteBuf c = alloc.compositeDirectBuffer(parts.size());
            for (CompletableFuture<ByteBuf> p : parts) {
                c.addComponent(true, p.join());
            }
            out.complete(c);
        });
        return out;
    }

    /** {@code b} (owned) extended with zeros to {@code n} bytes. */
    private static ByteBuf pad(ByteBuf b, int n) {
        int have = b.readableBytes();
        if (have > n) {
            b.writerIndex(b.readerIndex() + n);
            return b;
        }
        if (have == n) {
            return b;
        }
        CompositeByteBuf c = Unpooled.compositeBuffer(2 + (n - have) / ZEROS.capacity());
        if (have > 0) {
            c.addComponent(true, b);
        } else {
            b.release();
        }
        for (int left = n - have; left > 0; ) {
            int k = Math.min(left, ZEROS.capacity());
            c.addComponent(true, ZEROS.slice(0, k));
            left -= k;
        }
        return c;
    }

    private static void releaseAll(List<CompletableFuture<ByteBuf>> parts) {
        for (CompletableFuture<ByteBuf> p : parts) {
            p.whenComplete((b, e) -> {
                if (b != null) {
                    b.release();
                }
            });
        }
    }

    /** Writes {@code data} (borrowed until the future completes) at {@code pos}, each chunk's piece in parallel. */
    static CompletableFuture<Void> write(Tier tier, InodeId inode, Layout layout, long pos, ByteBuf data, IoOptions io) {
        int len = data.readableBytes();
        if (len == 0) {
            return CompletableFuture.completedFuture(null);
        }
        int cs = layout.chunkSize();
        List<CompletableFuture<Void>> parts = new ArrayList<>();
        long end = pos + len;
        try {
            for (long off = pos; off < end; ) {
                long index = off / cs;
                int inChunk = (int) (off % cs);
                int n = (int) Math.min(cs - inChunk, end - off);
                ByteBuf piece = data.slice(data.readerIndex() + (int) (off - pos), n);
                parts.add(tier.writeAsync(address(inode, layout, index), inChunk, piece, io));
                off += n;
            }
        } catch (RuntimeException e) {
            parts.add(CompletableFuture.failedFuture(e));
        }
        return parts.size() == 1 ? parts.get(0) : CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new));
    }

    /**
     * Drops every byte at or past {@code size}: the chunk holding {@code size} is cut there and
     * every chunk after it that exists ({@link Tier#chunksOfAsync}: the cost follows the chunks
     * the file has, not its length) is removed, at most {@link #TRUNCATE_PARALLELISM} at a time.
     */
    static CompletableFuture<Void> cut(Tier tier, InodeId inode, Layout layout, long size, IoOptions io) {
        int cs = layout.chunkSize();
        long first = size / cs;
        int rest = (int) (size % cs);
        return tier.chunksOfAsync(layout.chunks(inode), first, io).thenCompose(existing -> {
            CompletableFuture<Void> head = CompletableFuture.completedFuture(null);
            int from = 0;
            if (rest > 0 && existing.length > 0 && existing[0] == first) {
                head = tier.truncateAsync(address(inode, layout, first), rest, io);
                from = 1;
            }
            CompletableFuture<Void> tail = removeEach(tier, inode, layout, existing, from, io);
            return CompletableFuture.allOf(head, tail);
        });
    }

    /** Removes the chunks {@code indexes[from..]}, at most {@link #TRUNCATE_PARALLELISM} at a time. */
    static CompletableFuture<Void> removeEach(Tier tier, InodeId inode, Layout layout, long[] indexes, int from, IoOptions io) {
        return Futures.bounded(from, indexes.length, TRUNCATE_PARALLELISM,
                i -> tier.removeAsync(address(inode, layout, indexes[(int) i]), io));
    }
}
