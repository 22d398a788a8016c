package io.strata.bench.jmh;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.FileChunks;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.Tier;
import io.strata.core.tier.TierKind;
import io.strata.l1.L1Config;
import io.strata.l1.L1Tier;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * An L1 memory-tier hit ({@link L1Tier#readAsync} of a cached block: key, Caffeine lookup,
 * retained slice) against the raw baseline of a {@link ConcurrentHashMap} lookup and a retained
 * slice of the same bytes, in the same run. 64 blocks of 1 MiB are cached first; the tier below
 * serves the first miss of each block from memory (it is never asked again).
 *
 * <p>Run: {@code bin/strata bench jmh L1Get} (needs -XX:MaxDirectMemorySize above 256 MiB: the
 * launcher's default is enough).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "-XX:MaxDirectMemorySize=1g")
public class L1GetBenchmark {
    static final int BLOCKS = 64;
    static final int BLOCK = 1 << 20;

    @Param({"4096", "131072"})
    int readSize;

    private NodeContext ctx;
    private L1Tier l1;
    private ByteBuf source;
    private final ConcurrentHashMap<Long, ByteBuf> raw = new ConcurrentHashMap<>();
    private final ChunkAddress[] chunks = new ChunkAddress[BLOCKS];
    private final IoOptions io = IoOptions.DEFAULT.withDataVersion(1);

    @State(Scope.Thread)
    public static class Cursor {
        int next;
    }

    /** The tier below: the same bytes for every chunk, from memory. */
    private final class MemoryBelow implements Tier {
        @Override
        public TierKind kind() {
            return TierKind.L3;
        }

        @Override
        public CompletableFuture<ByteBuf> readAsync(ChunkAddress c, long offset, int length, IoOptions o) {
            return CompletableFuture.completedFuture(source.retainedSlice((int) offset, length));
        }

        @Override
        public CompletableFuture<Void> writeAsync(ChunkAddress c, long offset, ByteBuf data, IoOptions o) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("read-only"));
        }

        @Override
        public CompletableFuture<Void> truncateAsync(ChunkAddress c, long length, IoOptions o) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("read-only"));
        }

        @Override
        public CompletableFuture<Void> removeAsync(ChunkAddress c, IoOptions o) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("read-only"));
        }

        @Override
        public CompletableFuture<long[]> chunksOfAsync(FileChunks file, long fromIndex, IoOptions o) {
            return CompletableFuture.completedFuture(new long[0]);
        }

        @Override
        public void close() {
        }
    }

    @Setup(Level.Trial)
    public void setUp() {
        ctx = NodeContext.builder("jmh-l1").eventLoopThreads(1).build();
        source = PooledByteBufAllocator.DEFAULT.directBuffer(BLOCK).writeZero(BLOCK);
        L1Config cfg = new L1Config("jmh", DataSize.ofMiB(256), DataSize.ofMiB(1), Duration.ofSeconds(10),
                Optional.empty(), L1Config.WriteBack.DEFAULTS);
        l1 = new L1Tier(ctx, cfg, new MemoryBelow());
        for (int i = 0; i < BLOCKS; i++) {
            chunks[i] = new ChunkAddress(ChunkId.of(7, i), ChainId.of(1), BLOCK);
            l1.readAsync(chunks[i], 0, BLOCK, io).join().release(); // miss once: now cached
            raw.put((long) i, source.retainedSlice());
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        l1.close();
        raw.values().forEach(ByteBuf::release);
        source.release();
        ctx.close();
    }

    @Benchmark
    public int l1MemoryHit(Cursor c) {
        int i = c.next++;
        ByteBuf b = l1.readAsync(chunks[i % BLOCKS], (long) (i % 8) * readSize, readSize, io).join();
        int n = b.readableBytes();
        b.release();
        return n;
    }

    @Benchmark
    public int rawConcurrentHashMap(Cursor c) {
        int i = c.next++;
        ByteBuf b = raw.get((long) (i % BLOCKS)).retainedSlice((i % 8) * readSize, readSize);
        int n = b.readableBytes();
        b.release();
        return n;
    }
}
