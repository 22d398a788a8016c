package io.strata.namespace;

import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Layout;
import io.strata.core.InodeId;
import io.strata.core.StrataException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * A real {@link ChunkReclaimer} over a directory of chunk files ("inode-index", holding the
 * chain they were written to), so tests can count chunks before and after the collector. It
 * lists what the directory holds, strays past a file's length included, as the contract asks.
 */
final class ChunkDir implements ChunkReclaimer {
    final Path dir;
    final AtomicInteger failNext = new AtomicInteger();
    /** While set, listings do not answer until {@link #release}. */
    final java.util.concurrent.atomic.AtomicBoolean hang = new java.util.concurrent.atomic.AtomicBoolean();
    private final java.util.List<CompletableFuture<Void>> held = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Lets every held listing go on. */
    void release() {
        for (CompletableFuture<Void> h : held) {
            h.complete(null);
        }
    }

    ChunkDir(Path dir) throws IOException {
        this.dir = Files.createDirectories(dir);
    }

    /** What a client's write of chunk {@code index} leaves on L3. */
    void write(InodeAttrs file, long index) throws IOException {
        Files.writeString(dir.resolve(file.id().value() + "-" + index), file.layout().chainOf(index).toString());
    }

    /** Writes every chunk holding {@code length} bytes. */
    void writeLength(InodeAttrs file, long length) throws IOException {
        for (long i = 0; i < file.layout().chunksFor(length); i++) {
            write(file, i);
        }
    }

    long count() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.count();
        }
    }

    long count(InodeId inode) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(inode.value() + "-")).count();
        }
    }

    /** What a client's write of {@code bytes} bytes at the start of chunk {@code index} leaves on L3. */
    void writeBytes(InodeAttrs file, long index, int bytes) throws IOException {
        Files.write(dir.resolve(file.id().value() + "-" + index), new byte[bytes]);
    }

    /** The size of chunk {@code index}'s file, -1 when there is none. */
    long size(InodeAttrs file, long index) throws IOException {
        Path p = dir.resolve(file.id().value() + "-" + index);
        return Files.exists(p) ? Files.size(p) : -1;
    }

    @Override
    public CompletableFuture<long[]> chunksAsync(InodeId inode, Layout layout, long from) {
        if (hang.get()) {
            CompletableFuture<Void> h = new CompletableFuture<>();
            held.add(h);
            return h.thenCompose(v -> chunksAsync(inode, layout, from));
        }
        if (failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            return CompletableFuture.failedFuture(new StrataException(io.strata.core.Status.CONNECTION_LOST, "storage unreachable (injected)"));
        }
        try (Stream<Path> s = Files.list(dir)) {
            String prefix = inode.value() + "-";
            return CompletableFuture.completedFuture(s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix))
                    .mapToLong(n -> Long.parseLong(n.substring(prefix.length()))).filter(i -> i >= from).sorted().toArray());
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Void> removeAsync(InodeId inode, Layout layout, long index) {
        try {
            Files.deleteIfExists(dir.resolve(inode.value() + "-" + index));
            return CompletableFuture.completedFuture(null);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Void> truncateAsync(InodeId inode, Layout layout, long index, long length) {
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(dir.resolve(inode.value() + "-" + index).toFile(), "rw")) {
            f.setLength(length);
            return CompletableFuture.completedFuture(null);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
