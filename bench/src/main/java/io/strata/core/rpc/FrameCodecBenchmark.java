package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
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
 * The RPC frame codec (encode a request with a payload, decode it on the other side) against
 * the raw baseline of Netty's own length-prefix codec moving the same payload. Both run through
 * an {@link EmbeddedChannel} pair, so the pipeline overhead is the same on both sides. (This
 * class sits in core's rpc package to reach the package-private codec.)
 *
 * <p>Run: {@code bin/strata bench jmh FrameCodec} (or {@code java -cp 'cli/target/strata-cli.jar:cli/target/lib/*'
 * org.openjdk.jmh.Main FrameCodec}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class FrameCodecBenchmark {
    @Param({"0", "4096", "65536"})
    int payload;

    private EmbeddedChannel strataOut;
    private EmbeddedChannel strataIn;
    private EmbeddedChannel rawOut;
    private EmbeddedChannel rawIn;
    private ByteBuf data;
    private long id;
    private static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES);

    @Setup(Level.Trial)
    public void setUp() {
        strataOut = new EmbeddedChannel(new FrameEncoder(false));
        strataIn = new EmbeddedChannel(new FrameDecoder(1 << 20, 1 << 24));
        rawOut = new EmbeddedChannel(new LengthFieldPrepender(4));
        rawIn = new EmbeddedChannel(new LengthFieldBasedFrameDecoder(1 << 24, 0, 4, 0, 4));
        data = PooledByteBufAllocator.DEFAULT.directBuffer(payload);
        EchoService.fill(data, payload, 1);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        data.release();
        strataOut.finishAndReleaseAll();
        strataIn.finishAndReleaseAll();
        rawOut.finishAndReleaseAll();
        rawIn.finishAndReleaseAll();
    }

    /** Strata: header + Echo body + payload out, frame decoded and its body parsed on the way in. */
    @Benchmark
    public long strataFrame() {
        strataOut.writeOutbound(OutboundFrame.request(++id, 1000, CoreMessages.ECHO, new CoreMessage.Echo(1),
                Payload.of(data.retainedDuplicate())));
        for (Object o; (o = strataOut.readOutbound()) != null; ) {
            strataIn.writeInbound(o);
        }
        Frame f = strataIn.readInbound();
        Message m = PROTOCOL.decode(CoreMessages.ECHO, f.body());
        long r = f.requestId() + ((CoreMessage.Echo) m).flags();
        f.release();
        return r;
    }

    /** Baseline: Netty's length prefix around the same payload, no header, no message. */
    @Benchmark
    public long rawLengthPrefix() {
        rawOut.writeOutbound(data.retainedDuplicate());
        for (Object o; (o = rawOut.readOutbound()) != null; ) {
            rawIn.writeInbound(o);
        }
        ByteBuf b = rawIn.readInbound();
        long r = b.readableBytes();
        b.release();
        return r;
    }
}
