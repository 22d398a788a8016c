package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import io.strata.core.NodeContext;
import io.strata.core.auth.Role;
import io.strata.core.testing.CoreLeakCheck;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Feeds random and mutated frames to a server connection's pipeline (decoder, encoder,
 * dispatcher with real handlers). Whatever arrives, the connection either answers or closes
 * with a logged reason: no exception escapes, and no buffer leaks (checked after all tries
 * under paranoid leak detection).
 */
class FrameFuzzTest {
    private static NodeContext ctx;
    private static Map<Integer, RpcServer.Registered<?>> handlers;
    private static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, TestMessages.SERVER_TYPES);

    @BeforeContainer
    static void start() {
        ctx = NodeContext.builder("fuzz").seed(1).build();
        RequestHandler<CoreMessage.Ping> ping =
                req -> CompletableFuture.completedFuture(Reply.of(new CoreMessage.Pong(req.message().nonce(), "fuzz", "t")));
        RequestHandler<CoreMessage.Echo> echo =
                req -> CompletableFuture.completedFuture(Reply.of(new CoreMessage.Echoed(req.payload().readableBytes(), 0),
                        Payload.of(req.takePayload())));
        RequestHandler<TestMessages.Names> names =
                req -> CompletableFuture.completedFuture(Reply.of(new CoreMessage.Echoed(req.message().names().size(), 0)));
        handlers = Map.of(
                CoreMessages.PING.tag(), new RpcServer.Registered<>(CoreMessages.PING, ping, null, null),
                CoreMessages.ECHO.tag(), new RpcServer.Registered<>(CoreMessages.ECHO, echo, null, null),
                TestMessages.NAMES.tag(), new RpcServer.Registered<>(TestMessages.NAMES, names, null, null));
    }

    @AfterContainer
    static void stop() throws InterruptedException {
        ctx.close();
        CoreLeakCheck.assertNoLeaks("FrameFuzzTest");
    }

    private static EmbeddedChannel connection() {
        FrameDecoder frames = new FrameDecoder(4096, 1 << 16);
        return new EmbeddedChannel(frames, new FrameEncoder(false),
                new ServerConnection(ctx, PROTOCOL, handlers, EnumSet.allOf(Role.class), RpcOptions.DEFAULTS, new RpcMetrics(new SimpleMeterRegistry(), "server"), frames, null));
    }

    /** Feeds {@code bytes} in pieces of the given sizes, then closes; returns frames answered. */
    private static int feed(byte[] bytes, List<Integer> cuts) {
        EmbeddedChannel ch = connection();
        int pos = 0;
        int i = 0;
        while (pos < bytes.length && ch.isOpen()) {
            int n = Math.min(bytes.length - pos, Math.max(1, cuts.isEmpty() ? bytes.length : cuts.get(i++ % cuts.size())));
            ch.writeInbound(Unpooled.copiedBuffer(bytes, pos, n));
            pos += n;
        }
        ch.runPendingTasks();
        ch.checkException();
        int answered = 0;
        for (Object o; (o = ch.readOutbound()) != null; ) {
            answered++;
            ReferenceCountUtil.release(o);
        }
        ch.finishAndReleaseAll();
        return answered;
    }

    @Property(tries = 1500)
    void randomBytesNeverEscapeOrLeak(@ForAll("noise") byte[] bytes, @ForAll("cuts") List<Integer> cuts) {
        feed(bytes, cuts);
    }

    @Property(tries = 1500)
    void mutatedValidFramesNeverEscapeOrLeak(@ForAll("mutations") byte[] bytes, @ForAll("cuts") List<Integer> cuts) {
        feed(bytes, cuts);
    }

    @Property(tries = 200)
    void unmutatedFramesAreAllAnswered(@ForAll("frameCount") int frames, @ForAll("cuts") List<Integer> cuts) {
        ByteBuf all = Unpooled.buffer();
        for (int i = 0; i < frames; i++) {
            ByteBuf f = validFrame(i);
            all.writeBytes(f);
            f.release();
        }
        byte[] bytes = new byte[all.readableBytes()];
        all.readBytes(bytes);
        all.release();
        // every response is a header+body buffer, plus one payload buffer for echoes
        assertThat(feed(bytes, cuts)).isGreaterThanOrEqualTo(frames);
    }

    @Provide
    Arbitrary<byte[]> noise() {
        return Arbitraries.bytes().array(byte[].class).ofMaxSize(300);
    }

    @Provide
    Arbitrary<Integer> frameCount() {
        return Arbitraries.integers().between(1, 6);
    }

    @Provide
    Arbitrary<List<Integer>> cuts() {
        return Arbitraries.integers().between(1, 64).list().ofMaxSize(5);
    }

    @Provide
    Arbitrary<byte[]> mutations() {
        return Arbitraries.integers().between(0, 3).flatMap(kind ->
                Arbitraries.integers().between(0, 10_000).flatMap(seed ->
                        Arbitraries.integers().between(1, 8).map(flips -> mutate(validFrame(seed), kind, seed, flips))));
    }

    private static ByteBuf validFrame(int seed) {
        OutboundFrame f = switch (seed % 3) {
            case 0 -> OutboundFrame.request(seed, 100, CoreMessages.PING, new CoreMessage.Ping(seed), Payload.NONE);
            case 1 -> OutboundFrame.request(seed, 100, CoreMessages.ECHO, new CoreMessage.Echo(1),
                    Payload.of(Unpooled.wrappedBuffer(new byte[seed % 200])));
            default -> OutboundFrame.request(seed, 0, TestMessages.NAMES, new TestMessages.Names(List.of("x", "yz"), true), Payload.NONE);
        };
        return FrameCodecTest.encode(f);
    }

    /** kind 0: flip bytes; 1: truncate; 2: append garbage; 3: duplicate then flip in the header. */
    private static byte[] mutate(ByteBuf frame, int kind, int seed, int flips) {
        byte[] b = new byte[frame.readableBytes()];
        frame.readBytes(b);
        frame.release();
        java.util.Random r = new java.util.Random(seed);
        switch (kind) {
            case 0 -> {
                for (int i = 0; i < flips; i++) {
                    b[r.nextInt(b.length)] ^= (byte) (1 << r.nextInt(8));
                }
            }
            case 1 -> b = java.util.Arrays.copyOf(b, r.nextInt(b.length));
            case 2 -> {
                byte[] longer = java.util.Arrays.copyOf(b, b.length + flips * 8);
                for (int i = b.length; i < longer.length; i++) {
                    longer[i] = (byte) r.nextInt();
                }
                b = longer;
            }
            default -> {
                byte[] twice = new byte[b.length * 2];
                System.arraycopy(b, 0, twice, 0, b.length);
                System.arraycopy(b, 0, twice, b.length, b.length);
                twice[b.length + r.nextInt(Frame.HEADER_BYTES)] ^= (byte) (1 + r.nextInt(255));
                b = twice;
            }
        }
        return b;
    }
}
