package io.strata.bench;

import static io.strata.bench.L1Bench.INODE;
import static io.strata.bench.L1Bench.IO;
import static io.strata.bench.L1Bench.chunk;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.util.Futures;
import io.strata.l3.StorageClient;
import io.strata.storage.engine.EngineOptions;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.function.IntFunction;

/** What {@link L1Bench} runs against: three storage nodes in this JVM, and the working set as plain files (the baselines). */
final class L1BenchSupport {
    private L1BenchSupport() {
    }

    /** The bytes of chunk {@code c} of the working set (and of the baseline files). */
    static byte[] content(int c, int size) {
        byte[] b = new byte[size];
        new Random(c).nextBytes(b);
        return b;
    }

    // ---- baselines: the same bytes as plain files ----

    /** The working set as one file per chunk, read with positional FileChannel reads. */
    static final class FileSet implements AutoCloseable {
        private final FileChannel[] files;
        private final int chunk;

        private FileSet(FileChannel[] files, int chunk) {
            this.files = files;
            this.chunk = chunk;
        }

        static FileSet create(Path dir, int chunks, int chunk, boolean fsync) throws IOException {
            Files.createDirectories(dir);
            FileChannel[] fs = new FileChannel[chunks];
            for (int c = 0; c < chunks; c++) {
                Path p = dir.resolve("chunk-" + c);
                try (FileChannel w = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                    ByteBuffer b = ByteBuffer.wrap(content(c, chunk));
                    while (b.hasRemaining()) {
                        w.write(b);
                    }
                    if (fsync) {
                        w.force(false);
                    }
                }
                fs[c] = FileChannel.open(p, StandardOpenOption.READ);
            }
            return new FileSet(fs, chunk);
        }

        void read(long pos, int len, ByteBuffer dst) throws IOException {
            FileChannel ch = files[(int) (pos / chunk)];
            long off = pos % chunk;
            dst.clear().limit(len);
            while (dst.hasRemaining()) {
                int n = ch.read(dst, off + dst.position());
                if (n < 0) {
                    throw new IOException("short file");
                }
            }
        }

        @Override
        public void close() throws IOException {
            for (FileChannel f : files) {
                f.close();
            }
        }
    }

    // ---- L3: three storage nodes in this JVM ----

    /** Three storage nodes in this JVM with one chain ({@link L3Bench.Cluster}), loaded with the benchmark's data. */
    static final class MiniL3 implements AutoCloseable {
        static final long SAMPLE_INODE = 100_000;
        final L3Bench.Cluster cluster;
        final StorageClient client;

        MiniL3(Path dir) {
            cluster = new L3Bench.Cluster(dir, EngineOptions.DEFAULTS, true);
            client = cluster.client;
        }

        void load(int chunks, int chunk) {
            writeAll(chunks, 8, c -> chunk(INODE, c, chunk), c -> content(c, chunk));
        }

        void loadSamples(int n, int size, int chunkSize) {
            writeAll(n, 16, i -> chunk(SAMPLE_INODE + i, 0, chunkSize), i -> content(1_000_000 + i, size));
        }

        /** Writes chunks 0..n-1, {@code parallel} at a time, and waits for all of them. */
        private void writeAll(int n, int parallel, IntFunction<ChunkAddress> at, IntFunction<byte[]> content) {
            Semaphore inFlight = new Semaphore(parallel);
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                inFlight.acquireUninterruptibly();
                ByteBuf b = Unpooled.wrappedBuffer(content.apply(i));
                all.add(client.writeAsync(at.apply(i), 0, b, IO).whenComplete((v, e) -> {
                    b.release();
                    inFlight.release();
                }));
            }
            Futures.join(CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)));
        }

        @Override
        public void close() {
            cluster.close();
        }
    }
}
