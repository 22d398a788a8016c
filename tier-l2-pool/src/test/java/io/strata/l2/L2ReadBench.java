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
 * service and client), with the files in the page cache: what an agent costs per read, apart
 * from the disk. Off unless {@code -Dstrata.l2.bench=true}:
 *
 * <pre>
 * bin/mvn -o test -pl tier-l2-pool -am -Dsurefire.failIfNoSpecifiedTests=false -Dtest=L2ReadBench \
 *     -Dstrata.l2.bench=true -Dstrata.test.argLine="-Xmx2g --add-opens java.base/java.nio=ALL-UNNAMED"
 * </pre>
 *
 * Prints MB/s of whole-chunk reads (16 in flight, as a mount's readahead keeps them) and of
 * 128 KiB reads (every 128 KiB of two chunks at once, as a kernel's readahead sends FUSE reads),
 * from two agents' staged copies and from L3.
 */
@EnabledIfSystemProperty(named = "strata.l2.bench", matches = "true")
class L2ReadBench {
    static final int CHUNKS = Integer.getInteger("strata.l2.bench.chunks", 128);
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

    @Test
    void readsFromL2AgainstL3(@TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, 42, 2)) {
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            InodeAttrs inL2 = c.newFile();
            InodeAttrs inL3 = c.newFile();
            int cs = inL2.layout().chunkSize();
            byte[] data = L2StagingTest.bytes(cs, 42);
            for (int i = 0; i < CHUNKS; i++) {
                write(t, chunk(inL2, i), 0, data, io);
                Futures.join(c.l3.writeAsync(chunk(inL3, i), 0, Unpooled.wrappedBuffer(data), IoOptions.DEFAULT), T);
            }
            Futures.join(t.flushAsync(inL2.id(), io), T);
            L2Tier reader = c.tier();
            BiFunction<ChunkAddress, long[], CompletableFuture<ByteBuf>> l2 = (a, r) -> reader.readAsync(a, r[0], (int) r[1], io);
            BiFunction<ChunkAddress, long[], CompletableFuture<ByteBuf>> l3 = (a, r) -> c.l3.readAsync(a, r[0], (int) r[1], IoOptions.DEFAULT);
            int small = 128 * 1024;
            int per = cs / small;
            for (int round = 0; round < ROUNDS; round++) {
                double l2Whole = run(CHUNKS, 16, (i, len) -> l2.apply(chunk(inL2, i), new long[] {0, len}), cs);
                double l3Whole = run(CHUNKS, 16, (i, len) -> l3.apply(chunk(inL3, i), new long[] {0, len}), cs);
                double l2Small = run(CHUNKS * per, 2 * per, (i, len) -> l2.apply(chunk(inL2, i / per), new long[] {(long) (i % per) * len, len}), small);
                double l3Small = run(CHUNKS * per, 2 * per, (i, len) -> l3.apply(chunk(inL3, i / per), new long[] {(long) (i % per) * len, len}), small);
                System.out.printf(Locale.ROOT, "L2ReadBench round %d: whole chunks l2 %.0f MB/s, l3 %.0f MB/s (l2/l3 %.2f); "
                        + "128KiB reads l2 %.0f MB/s, l3 %.0f MB/s (l2/l3 %.2f)%n", round, l2Whole, l3Whole, l2Whole / l3Whole,
                        l2Small, l3Small, l2Small / l3Small);
            }
        }
    }
}
