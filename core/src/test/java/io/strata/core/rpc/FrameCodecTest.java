package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.strata.core.Status;
import io.strata.core.StrataException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Frame encoding and decoding on an EmbeddedChannel: round trips and rejections. */
class FrameCodecTest {
    static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, TestMessages.TYPES);

    /** Encodes a frame and returns its bytes as one buffer (owned by the caller). */
    static ByteBuf encode(OutboundFrame f) {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder(false));
        ch.writeOutbound(f);
        ByteBuf all = Unpooled.buffer();
        for (Object o; (o = ch.readOutbound()) != null; ) {
            ByteBuf b = (ByteBuf) o;
            all.writeBytes(b);
            b.release();
        }
        ch.finishAndReleaseAll();
        return all;
    }

    static Frame decodeOne(ByteBuf bytes) {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(1 << 20, 1 << 20));
        ch.writeInbound(bytes);
        Frame f = ch.readInbound();
        assertThat((Object) ch.readInbound()).isNull();
        ch.finishAndReleaseAll();
        return f;
    }

    @Test
    void everyCoreMessageRoundTrips() {
        List<Message> messages = List.of(
                new CoreMessage.Ping(-7),
                new CoreMessage.Pong(9, "storage-1", "0.1.0"),
                new CoreMessage.Echo(CoreMessage.Echo.FLAG_RETURN | CoreMessage.Echo.FLAG_CHECKSUM),
                new CoreMessage.Pull(1 << 20, 42),
                new CoreMessage.Echoed(123456789L, 0xCAFEBABE),
                new TestMessages.Names(List.of("a", "ünïcödé", ""), true));
        long id = 1;
        for (Message m : messages) {
            MessageType<?> t = PROTOCOL.typeOf(m);
            Frame f = decodeOne(encode(OutboundFrame.request(id, 500, t, m, Payload.NONE)));
            try {
                assertThat(f.isResponse()).isFalse();
                assertThat(f.requestId()).isEqualTo(id);
                assertThat(f.timeoutMillis()).isEqualTo(500);
                assertThat(f.tag()).isEqualTo(t.tag());
                assertThat(PROTOCOL.decode(t, f.body())).isEqualTo(m);
            } finally {
                f.release();
            }
            id++;
        }
    }

    @Test
    void payloadTravelsBesideTheBody() {
        ByteBuf data = Unpooled.copiedBuffer("chunk bytes", StandardCharsets.UTF_8);
        Frame f = decodeOne(encode(OutboundFrame.response(5, CoreMessages.ECHOED, new CoreMessage.Echoed(11, 0), Payload.of(data))));
        ByteBuf p = f.takePayload();
        try {
            assertThat(f.isResponse()).isTrue();
            assertThat(p.toString(StandardCharsets.UTF_8)).isEqualTo("chunk bytes");
        } finally {
            p.release();
            f.release();
        }
    }

    @Test
    void aTracedRequestCarriesItsTraceIdBeforeTheBody() {
        ByteBuf data = Unpooled.copiedBuffer("chunk bytes", StandardCharsets.UTF_8);
        Frame f = decodeOne(encode(OutboundFrame.request(7, 100, 0x3f2a9c0d41b7e655L, TestMessages.PARK, new TestMessages.Park(42),
                Payload.of(data))));
        ByteBuf p = f.takePayload();
        try {
            assertThat(f.traceId()).isEqualTo(0x3f2a9c0d41b7e655L);
            assertThat(f.requestId()).isEqualTo(7);
            assertThat(f.timeoutMillis()).isEqualTo(100);
            assertThat(PROTOCOL.decode(TestMessages.PARK, f.body())).isEqualTo(new TestMessages.Park(42));
            assertThat(p.toString(StandardCharsets.UTF_8)).isEqualTo("chunk bytes");
        } finally {
            p.release();
            f.release();
        }
        Frame plain = decodeOne(encode(OutboundFrame.request(8, 0, 0, TestMessages.PARK, new TestMessages.Park(1), Payload.NONE)));
        try {
            assertThat(plain.traceId()).as("no trace: no flag, no bytes").isZero();
            assertThat(plain.body().readableBytes()).isEqualTo(4);
        } finally {
            plain.release();
        }
    }

    @Test
    void aTraceFlagOnAResponseOrOnABodyTooShortForTheIdIsRefused() {
        ByteBuf response = encode(OutboundFrame.response(5, CoreMessages.ECHOED, new CoreMessage.Echoed(11, 0), Payload.NONE));
        response.setByte(3, Frame.FLAG_RESPONSE | Frame.FLAG_TRACE);
        assertMalformed(response, "response with a trace id");
        ByteBuf shortBody = encode(OutboundFrame.request(1, 0, TestMessages.PARK, new TestMessages.Park(1), Payload.NONE));
        shortBody.setByte(3, Frame.FLAG_TRACE);
        assertMalformed(shortBody, "traced request with a body of 4 bytes");
    }

    private static void assertMalformed(ByteBuf bytes, String reason) {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(1 << 20, 1 << 20));
        try {
            ch.writeInbound(bytes);
            org.assertj.core.api.Assertions.fail("accepted a frame that should fail: " + reason);
        } catch (io.netty.handler.codec.DecoderException e) {
            assertThat(e.getCause()).isInstanceOf(Wire.Malformed.class).hasMessageContaining(reason);
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void errorFramesCarryStatusMessageAndDetail() {
        Frame f = decodeOne(encode(OutboundFrame.error(3, new StrataException.StaleRouting("chain 4 is at v9", 9))));
        try {
            assertThat(Status.fromCode(f.status())).isEqualTo(Status.STALE_CHAIN_VERSION);
            String text = Wire.readString(f.body(), 4096);
            StrataException e = StrataException.fromWire(Status.fromCode(f.status()), text, f.body());
            assertThat(e).isInstanceOf(StrataException.StaleRouting.class).hasMessage("chain 4 is at v9");
            assertThat(((StrataException.StaleRouting) e).currentVersion()).isEqualTo(9);
        } finally {
            f.release();
        }
    }

    @Test
    void framesSplitAcrossManyReadsAreReassembled() {
        ByteBuf bytes = encode(OutboundFrame.request(77, 0, CoreMessages.ECHO, new CoreMessage.Echo(0),
                Payload.of(Unpooled.wrappedBuffer(new byte[10_000]))));
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(1 << 20, 1 << 20));
        while (bytes.isReadable()) {
            ch.writeInbound(bytes.readRetainedSlice(Math.min(7, bytes.readableBytes())));
        }
        bytes.release();
        Frame f = ch.readInbound();
        assertThat(f.requestId()).isEqualTo(77);
        ByteBuf p = f.takePayload();
        assertThat(p.readableBytes()).isEqualTo(10_000);
        p.release();
        f.release();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void largeFramesArrivingInManyReadsKeepEveryByte() {
        int size = 3 * FrameDecoder.LARGE_FRAME + 12345;
        ByteBuf data = Unpooled.buffer(size);
        EchoService.fill(data, size, 99);
        int crc = EchoService.crc32c(data);
        ByteBuf bytes = Unpooled.buffer();
        for (int i = 0; i < 2; i++) { // two frames back to back, split at odd places
            ByteBuf one = encode(OutboundFrame.request(i + 1, 0, CoreMessages.ECHO, new CoreMessage.Echo(0), Payload.of(data.retainedDuplicate())));
            bytes.writeBytes(one);
            one.release();
        }
        data.release();
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(1 << 20, 1 << 20));
        while (bytes.isReadable()) {
            ch.writeInbound(bytes.readRetainedSlice(Math.min(7001, bytes.readableBytes())));
        }
        bytes.release();
        for (int i = 0; i < 2; i++) {
            Frame f = ch.readInbound();
            assertThat(f.requestId()).isEqualTo(i + 1);
            ByteBuf p = f.takePayload();
            assertThat(p.readableBytes()).isEqualTo(size);
            assertThat(EchoService.crc32c(p)).isEqualTo(crc);
            p.release();
            f.release();
        }
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void aLargeFrameHoldsWhatHasArrivedPlusAtMostOneSegment() {
        int size = 4 << 20;
        ByteBuf data = Unpooled.buffer(size);
        EchoService.fill(data, size, 7);
        int crc = EchoService.crc32c(data);
        ByteBuf bytes = encode(OutboundFrame.request(5, 0, CoreMessages.ECHO, new CoreMessage.Echo(0), Payload.of(data)));
        // an allocator that counts exactly the bytes of the buffers it has handed out: the reads
        // (as a socket's would be) and whatever the decoder allocates
        io.netty.buffer.UnpooledByteBufAllocator alloc = new io.netty.buffer.UnpooledByteBufAllocator(false);
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.config().setAllocator(alloc);
        ch.pipeline().addLast(new FrameDecoder(1 << 20, 80 << 20));
        ch.writeInbound(alloc.heapBuffer(Frame.HEADER_BYTES).writeBytes(bytes, Frame.HEADER_BYTES));
        assertThat(alloc.metric().usedHeapMemory()).as("held for a header claiming %d bytes", size).isLessThan(1024);
        while (bytes.isReadable()) {
            int n = Math.min(65_000, bytes.readableBytes());
            ch.writeInbound(alloc.heapBuffer(n).writeBytes(bytes, n));
            long received = bytes.readerIndex();
            if (bytes.isReadable()) {
                assertThat(alloc.metric().usedHeapMemory()).as("held after %d bytes", received)
                        .isLessThanOrEqualTo(received + Math.min(received, FrameDecoder.SEGMENT));
            }
        }
        bytes.release();
        Frame f = ch.readInbound();
        ByteBuf p = f.takePayload();
        assertThat(p.readableBytes()).isEqualTo(size);
        assertThat(EchoService.crc32c(p)).isEqualTo(crc);
        p.release();
        f.release();
        assertThat(ch.finishAndReleaseAll()).isFalse();
        assertThat(alloc.metric().usedHeapMemory()).isZero();
    }

    @Test
    void rejectsBadMagicVersionFlagsAndSizesWithAReason() {
        assertRejected(h -> h.setShort(0, 0x4745), "bad magic"); // "GE" of an HTTP GET
        assertRejected(h -> h.setByte(2, 2), "unsupported wire version 2");
        assertRejected(h -> h.setByte(3, 0x80), "unknown flags");
        assertRejected(h -> h.setShort(6, 5), "request with status");
        assertRejected(h -> h.setInt(20, (1 << 20) + 1), "body of");
        assertRejected(h -> h.setInt(24, -1), "payload of");
    }

    private static void assertRejected(java.util.function.Consumer<ByteBuf> mutate, String reason) {
        ByteBuf bytes = encode(OutboundFrame.request(1, 0, CoreMessages.PING, new CoreMessage.Ping(1), Payload.NONE));
        mutate.accept(bytes);
        assertMalformed(bytes, reason);
    }

    @Test
    void aTruncatedFrameAtCloseIsReported() {
        ByteBuf bytes = encode(OutboundFrame.request(1, 0, CoreMessages.PING, new CoreMessage.Ping(1), Payload.NONE));
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(1 << 20, 1 << 20));
        ch.writeInbound(bytes.readRetainedSlice(bytes.readableBytes() - 3));
        bytes.release();
        try {
            ch.finish();
            org.assertj.core.api.Assertions.fail("truncation not reported");
        } catch (io.netty.handler.codec.DecoderException e) {
            assertThat(e.getCause()).hasMessageContaining("truncated frame");
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void bodyDecodersRejectTrailingBytesAndBadCounts() {
        ByteBuf body = Unpooled.buffer();
        body.writeLong(1).writeByte(0);
        try {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> PROTOCOL.decode(CoreMessages.PING, body))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("bytes left");
            body.clear().writeInt(1_000_000);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> PROTOCOL.decode(TestMessages.NAMES, body))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("count");
            body.clear().writeInt(7);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> PROTOCOL.decode(CoreMessages.ECHO, body))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("flags out of range");
        } finally {
            body.release();
        }
    }
}
