package io.strata.bench.jmh;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
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
 * What a direct buffer of a chunk's size costs to take and give back, as the daemons take them
 * for a chunk write's receive segments and a chunk read's bytes: one allocation and release per
 * operation, {@code outstanding} buffers alive at once (requests in flight), in a JVM of a
 * daemon's size ({@code -Xmx512m}, so 512 MiB of direct memory at most). Three allocators side by
 * side: Netty's adaptive allocator (the channels' default) in its low-memory mode, which it
 * chooses by itself below 512 MiB of direct memory; the same allocator with that mode off (what
 * the daemons run with, {@code io.strata.core.buffer.NettyDefaults}); and Netty's older pooled
 * allocator ({@code PooledByteBufAllocator.DEFAULT}). Reported as the time per allocation.
 *
 * <p>Run: {@code bin/strata bench jmh Allocator}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class AllocatorBenchmark {
    @Param({"65536", "1048576"})
    int size;

    @Param({"8"})
    int outstanding;

    private ByteBuf[] ring;
    private int next;

    @Setup(Level.Iteration)
    public void setUp() {
        ring = new ByteBuf[outstanding];
        next = 0;
    }

    @TearDown(Level.Iteration)
    public void tearDown() {
        for (ByteBuf b : ring) {
            if (b != null) {
                b.release();
            }
        }
    }

    private ByteBuf take(ByteBufAllocator alloc) {
        ByteBuf b = alloc.directBuffer(size);
        b.writeByte(1);
        ByteBuf old = ring[next];
        ring[next] = b;
        next = (next + 1) % ring.length;
        if (old != null) {
            old.release();
        }
        return b;
    }

    @Benchmark
    @Fork(value = 1, jvmArgsAppend = {"-Xmx512m", "-Dio.netty.allocator.lowMemory=true"})
    public ByteBuf adaptiveLowMemory() {
        return take(ByteBufAllocator.DEFAULT);
    }

    @Benchmark
    @Fork(value = 1, jvmArgsAppend = {"-Xmx512m", "-Dio.netty.allocator.lowMemory=false"})
    public ByteBuf adaptive() {
        return take(ByteBufAllocator.DEFAULT);
    }

    @Benchmark
    @Fork(value = 1, jvmArgsAppend = {"-Xmx512m"})
    public ByteBuf pooled() {
        return take(PooledByteBufAllocator.DEFAULT);
    }
}
