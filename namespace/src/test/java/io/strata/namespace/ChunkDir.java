package io.strata.namespace;

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
 * removes the chunks the metadata knows of and scans for strays, as the contract allows.
 */
final class ChunkDir implements ChunkReclaimer {
    final Path dir;
    final AtomicInteger failNext = new AtomicInteger();

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

    @Override
    public CompletableFuture<Void> reclaimAsync(InodeId inode, Layout layout, long knownChunks) {
        if (failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            return CompletableFuture.failedFuture(new StrataException(io.strata.core.Status.CONNECTION_LOST, "storage unreachable (injected)"));
        }
        try {
            for (long i = 0; i < knownChunks; i++) {
                Files.deleteIfExists(dir.resolve(inode.value() + "-" + i));
            }
            try (Stream<Path> s = Files.list(dir)) {
                for (Path p : s.filter(p -> p.getFileName().toString().startsWith(inode.value() + "-")).toList()) {
                    Files.deleteIfExists(p);
                }
            }
            return CompletableFuture.completedFuture(null);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
