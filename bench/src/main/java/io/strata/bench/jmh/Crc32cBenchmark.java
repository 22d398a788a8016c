package io.strata.bench.jmh;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.strata.core.rpc.EchoService;
import io.strata.core.util.Crc32c;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
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
 * CRC32C as the chunk engine and the storage client compute it ({@link Crc32c#of(ByteBuf)}, over a
 * direct buffer), against two raw baselines in the same run: the JDK's CRC32 over the same bytes,
 * and a plain copy of them (what touching the memory costs). Reported in bytes per second through
 * the score (ops/s x size).
 *
 * <p>Run: {@code bin/strata bench jmh Crc32c}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class Crc32cBenchmark {
    @Param({"4096", "65536", "1048576"})
    int size;

    private ByteBuf buf;
    private ByteBuffer target;

    @Setup(Level.Trial)
    public void setUp() {
        buf = PooledByteBufAllocator.DEFAULT.directBuffer(size);
        EchoService.fill(buf, size, 7);
        target = ByteBuffer.allocateDirect(size);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        buf.release();
    }

    @Benchmark
    public int strataCrc32c() {
        return Crc32c.of(buf);
    }

    @Benchmark
    public long jdkCrc32() {
        CRC32 c = new CRC32();
        c.update(buf.nioBuffer());
        return c.getValue();
    }

    @Benchmark
    public int memoryCopy() {
        target.clear();
        target.put(buf.nioBuffer());
        return target.position();
    }
}
