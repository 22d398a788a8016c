package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.FileChunks;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.Tier;
import io.strata.core.tier.TierKind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * A durable lower tier for L1's tests, over local files: one file per chunk
 * ({@code <dir>/<inode>/<index>}). Every change is atomic and durable: the chunk's new content is
 * written to a temporary file, fdatasync'ed (when {@code fsync}), renamed over the old one and
 * the directory synced; so after a kill -9 a chunk holds exactly the changes that completed, in
 * order. Changes and reads of one chunk are serialised, and {@link #listener} sees each change's
 * result under that lock (the model test records the history of every chunk with it).
 */
final class FileTier implements Tier {
    /** Sees the content of a chunk after each change (null content: the chunk was removed). */
    interface Listener {
        void changed(ChunkId chunk, byte[] content);
    }

    private final Path dir;
    private final boolean fsync;
    private final ExecutorService io;
    private final Object[] locks = new Object[64];
    final AtomicInteger reads = new AtomicInteger();
    final AtomicLong readBytes = new AtomicLong();
    final AtomicInteger writes = new AtomicInteger();
    volatile Listener listener;
    /** When set, each change fails with what it returns (if non-null) instead of happening. */
    volatile Supplier<StrataException> failChanges;

    FileTier(Path dir, boolean fsync) {
        this.dir = dir;
        this.fsync = fsync;
        this.io = Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "file-tier");
            t.setDaemon(true);
            return t;
        });
        for (int i = 0; i < locks.length; i++) {
            locks[i] = new Object();
        }
    }

    private Object lock(ChunkId id) {
        return locks[Math.floorMod(id.hashCode(), locks.length)];
    }

    Path file(ChunkId id) {
        return dir.resolve(Long.toString(id.inode().value())).resolve(Integer.toString(id.index()));
    }

    /** The chunk's current content (empty when missing). */
    byte[] content(ChunkId id) {
        synchronized (lock(id)) {
            try {
                return Files.readAllBytes(file(id));
            } catch (NoSuchFileException e) {
                return new byte[0];
            } catch (IOException e) {
                throw StrataException.wrap(e);
            }
        }
    }

    @Override
    public TierKind kind() {
        return TierKind.L3;
    }

    @Override
    public CompletableFuture<ByteBuf> readAsync(ChunkAddress chunk, long offset, int length, IoOptions options) {
        return CompletableFuture.supplyAsync(() -> {
            chunk.checkRange(offset, length);
            reads.incrementAndGet();
            byte[] c = content(chunk.id());
            int from = (int) Math.min(offset, c.length);
            int to = (int) Math.min(offset + length, c.length);
            readBytes.addAndGet(to - from);
            ByteBuf out = Unpooled.directBuffer(Math.max(1, to - from));
            out.writeBytes(c, from, to - from);
            return out;
        }, io);
    }

    @Override
    public CompletableFuture<Void> writeAsync(ChunkAddress chunk, long offset, ByteBuf data, IoOptions options) {
        byte[] bytes = new byte[data.readableBytes()];
        data.getBytes(data.readerIndex(), bytes);
        return change(chunk, c -> {
            chunk.checkRange(offset, bytes.length);
            byte[] n = c.length >= offset + bytes.length ? c.clone() : Arrays.copyOf(c, (int) (offset + bytes.length));
            System.arraycopy(bytes, 0, n, (int) offset, bytes.length);
            return n;
        });
    }

    @Override
    public CompletableFuture<Void> truncateAsync(ChunkAddress chunk, long length, IoOptions options) {
        return change(chunk, c -> {
            chunk.checkRange(0, length);
            return Arrays.copyOf(c, (int) length);
        });
    }

    @Override
    public CompletableFuture<Void> removeAsync(ChunkAddress chunk, IoOptions options) {
        return change(chunk, c -> null);
    }

    /** The chunk files under {@code <dir>/<inode>/} at or past {@code fromIndex}. */
    @Override
    public CompletableFuture<long[]> chunksOfAsync(FileChunks file, long fromIndex, IoOptions options) {
        return CompletableFuture.supplyAsync(() -> {
            Path d = dir.resolve(Long.toString(file.inode().value()));
            if (!Files.isDirectory(d)) {
                return new long[0];
            }
            try (var names = Files.list(d)) {
                return names.map(p -> p.getFileName().toString()).filter(n -> n.matches("[0-9]+"))
                        .mapToLong(Long::parseLong).filter(i -> i >= fromIndex).sorted().toArray();
            } catch (IOException e) {
                throw new StrataException(Status.IO_ERROR, "list " + d + ": " + e);
            }
        }, io);
    }

    private CompletableFuture<Void> change(ChunkAddress chunk, java.util.function.UnaryOperator<byte[]> f) {
        return CompletableFuture.runAsync(() -> {
            Supplier<StrataException> fail = failChanges;
            if (fail != null) {
                StrataException e = fail.get();
                if (e != null) {
                    throw e;
                }
            }
            ChunkId id = chunk.id();
            synchronized (lock(id)) {
                byte[] next = f.apply(content(id));
                try {
                    Path p = file(id);
                    if (next == null) {
                        Files.deleteIfExists(p);
                    } else {
                        Files.createDirectories(p.getParent());
                        Path tmp = p.resolveSibling(p.getFileName() + ".tmp");
                        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                                StandardOpenOption.TRUNCATE_EXISTING)) {
                            ByteBuffer b = ByteBuffer.wrap(next);
                            while (b.hasRemaining()) {
                                ch.write(b);
                            }
                            if (fsync) {
                                ch.force(false);
                            }
                        }
                        Files.move(tmp, p, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                    }
                    if (fsync) {
                        try (FileChannel d = FileChannel.open(p.getParent(), StandardOpenOption.READ)) {
                            d.force(true);
                        }
                    }
                } catch (IOException e) {
                    throw new StrataException(Status.IO_ERROR, e.getMessage(), e);
                }
                writes.incrementAndGet();
                Listener l = listener;
                if (l != null) {
                    l.changed(id, next);
                }
            }
        }, io);
    }

    @Override
    public void close() {
        io.shutdownNow();
    }
}
