package io.strata.l2;

import static io.strata.l2.L2Cluster.T;
import static io.strata.l2.L2Cluster.chunk;
import static io.strata.l2.L2Cluster.staged;
import static io.strata.l2.L2Cluster.write;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l2.pool.L2Tier;
import io.strata.protocol.meta.InodeAttrs;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * A microbenchmark of the L2 read path against L3, in one JVM (agents, storage nodes, meta
 * service and client), without a mount: what the agents cost per read, from the disk and from
 * the page cache. Off unless {@code -Dstrata.l2.bench=true}:
 *
 * <pre>
 * bin/mvn -o test -pl tier-l2-pool -am -Dsurefire.failIfNoSpecifiedTests=false -Dtest=L2ReadBench \
 *     -Dstrata.l2.bench=true -Dstrata.test.argLine="-Xmx2g --add-opens java.base/java.nio=ALL-UNNAMED"
 * </pre>
 *
 * Prints MB/s of four readers each reading a file's chunks in order, 8 whole chunks in flight
 * each (as a mount's readahead keeps them), with the page cache dropped first (when run as root)
 * and warm, and of 128 KiB reads (every 128 KiB of two chunks at once, as a kernel's readahead
 * sends FUSE reads): from two agents' staged copies, and from L3.
 */
@EnabledIfSystemProperty(named = "strata.l2.bench", matches = "true")
class L2ReadBench {
    static final int CHUNKS = Integer.getInteger("strata.l2.bench.chunks", 256);
    static final int ROUNDS = Integer.getInteger("strata.l2.bench.rounds", 4);

    /** Reads {@code reads} ranges ({@code range(i)} = chunk, offset, length), {@code inFlight} at a time; MB/s. */
    static double run(int reads, int inFlight, BiFunction<Integer, Integer, CompletableFuture<ByteBuf>> read, int len) throws Exception {
        Semaphore slots = new Semaphore(inFlight);
        List<CompletableFuture<ByteBuf>> all = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int i = 0; i < reads; i++) {
            slots.acquire();
            CompletableFuture<ByteBuf> f = read.apply(i, len);
            f.whenComplete((b, e) -> {
                if (b != null) {
                    b.release();
                }
                slots.release();
            });
            all.add(f);
        }
        for (CompletableFuture<ByteBuf> f : all) {
            Futures.join(f, T);
        }
        double s = (System.nanoTime() - t0) / 1e9;
        return (double) reads * len / 1e6 / s;
    }

    /** Empties the page cache when this process may (root), so that reads meet the disk; whether it did. */
    static boolean dropPageCache() {
        try {
            java.nio.file.Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
            return true;
        } catch (java.io.IOException | SecurityException e) {
            return false;
        }
    }

    /**
     * {@code files.size()} readers at once, each reading its file's {@code chunks} whole chunks in
     * order with {@code window} in flight (a mount's readahead); MB/s.
     */
    static double streams(List<InodeAttrs> files, int chunks, int window, BiFunction<InodeAttrs, Integer, CompletableFuture<ByteBuf>> read)
            throws Exception {
        long t0 = System.nanoTime();
        List<CompletableFuture<Long>> all = new ArrayList<>();
        java.util.concurrent.ExecutorService readers = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();
        for (InodeAttrs f : files) {
            all.add(CompletableFuture.supplyAsync(() -> {
                try {
                    long bytes = 0;
                    Semaphore slots = new Semaphore(window);
                    List<CompletableFuture<ByteBuf>> mine = new ArrayList<>();
                    for (int i = 0; i < chunks; i++) {
                        slots.acquire();
                        CompletableFuture<ByteBuf> x = read.apply(f, i);
                        x.whenComplete((b, e) -> slots.release());
                        mine.add(x);
                    }
                    for (CompletableFuture<ByteBuf> x : mine) {
                        ByteBuf b = Futures.join(x, T);
                        bytes += b.readableBytes();
                        b.release();
                    }
                    return bytes;
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, readers));
        }
        long bytes = 0;
        try {
            for (CompletableFuture<Long> x : all) {
                bytes += Futures.join(x, T);
            }
        } finally {
            readers.shutdownNow();
        }
        return bytes / 1e6 / ((System.nanoTime() - t0) / 1e9);
    }

    @Test
    void readsFromL2AgainstL3(@TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, 42, 2)) {
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            int files = 4;
            List<InodeAttrs> inL2 = new ArrayList<>();
            List<InodeAttrs> inL3 = new ArrayList<>();
            for (int n = 0; n < files; n++) {
                inL2.add(c.newFile());
                inL3.add(c.newFile());
            }
            int cs = inL2.get(0).layout().chunkSize();
            int per = CHUNKS / files;
            byte[] data = L2StagingTest.bytes(cs, 42);
            for (int n = 0; n < files; n++) {
                for (int i = 0; i < per; i++) {
                    write(t, chunk(inL2.get(n), i), 0, data, io);
                    Futures.join(c.l3.writeAsync(chunk(inL3.get(n), i), 0, Unpooled.wrappedBuffer(data), IoOptions.DEFAULT), T);
                }
                Futures.join(t.flushAsync(inL2.get(n).id(), io), T);
            }
            L2Tier reader = c.tier();
            BiFunction<InodeAttrs, Integer, CompletableFuture<ByteBuf>> l2 = (f, i) -> reader.readAsync(chunk(f, i), 0, cs, io);
            BiFunction<InodeAttrs, Integer, CompletableFuture<ByteBuf>> l3 = (f, i) -> c.l3.readAsync(chunk(f, i), 0, cs, IoOptions.DEFAULT);
            BiFunction<ChunkAddress, long[], CompletableFuture<ByteBuf>> l2r = (a, r) -> reader.readAsync(a, r[0], (int) r[1], io);
            BiFunction<ChunkAddress, long[], CompletableFuture<ByteBuf>> l3r = (a, r) -> c.l3.readAsync(a, r[0], (int) r[1], IoOptions.DEFAULT);
            int small = 128 * 1024;
            int parts = cs / small;
            InodeAttrs f2 = inL2.get(0);
            InodeAttrs f3 = inL3.get(0);
            for (int round = 0; round < ROUNDS; round++) {
                boolean cold = dropPageCache();
                double l2Cold = streams(inL2, per, 8, l2);
                dropPageCache();
                double l3Cold = streams(inL3, per, 8, l3);
                double l2Warm = streams(inL2, per, 8, l2);
                double l3Warm = streams(inL3, per, 8, l3);
                double l2Small = run(per * parts, 2 * parts, (i, len) -> l2r.apply(chunk(f2, i / parts), new long[] {(long) (i % parts) * len, len}), small);
                double l3Small = run(per * parts, 2 * parts, (i, len) -> l3r.apply(chunk(f3, i / parts), new long[] {(long) (i % parts) * len, len}), small);
                System.out.printf(Locale.ROOT, "L2ReadBench round %d: %d readers x %d chunks in order, 8 in flight each: %s l2 %.0f MB/s, "
                        + "l3 %.0f MB/s (l2/l3 %.2f); page cache warm: l2 %.0f MB/s, l3 %.0f MB/s (l2/l3 %.2f); "
                        + "128KiB reads of one file, two chunks' worth at once: l2 %.0f MB/s, l3 %.0f MB/s (l2/l3 %.2f)%n",
                        round, files, per, cold ? "page cache dropped:" : "(page cache NOT dropped, not root):", l2Cold, l3Cold,
                        l2Cold / l3Cold, l2Warm, l3Warm, l2Warm / l3Warm, l2Small, l3Small, l2Small / l3Small);
            }
        }
    }
}
