package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageEncoder;
import java.util.List;

/**
 * Encodes an {@link OutboundFrame}: one small buffer with the 28-byte header, the trace id of a
 * traced request and the message body, then the payload as it is (a ByteBuf, or a file region sent with sendfile). The payload
 * is never copied, except a file region under TLS: the SslHandler encrypts buffers only, so
 * the slice is read into one here. The frame itself is released by the base class after
 * encoding.
 */
final class FrameEncoder extends MessageToMessageEncoder<OutboundFrame> {
    private final boolean readFiles;

    /** {@code readFiles}: send file payloads as buffers read from them (a TLS pipeline) instead of file regions. */
    FrameEncoder(boolean readFiles) {
        super(OutboundFrame.class);
        this.readFiles = readFiles;
    }

    @Override
    protected void encode(ChannelHandlerContext ctx, OutboundFrame f, List<Object> out) {
        ByteBuf head = ctx.alloc().ioBuffer(Frame.HEADER_BYTES + 64);
        try {
            head.writerIndex(Frame.HEADER_BYTES);
            boolean traced = !f.response() && f.traceId() != 0;
            if (traced) {
                head.writeLong(f.traceId());
            }
            int status = 0;
            int tag;
            if (f.error() != null) {
                status = f.error().status().code();
                tag = 0;
                OutboundFrame.encodeError(f.error(), head);
            } else {
                tag = f.type().tag();
                f.type().encode(f.message(), head);
            }
            head.setShort(0, Frame.MAGIC);
            head.setByte(2, Frame.VERSION);
            head.setByte(3, (f.response() ? Frame.FLAG_RESPONSE : 0) | (traced ? Frame.FLAG_TRACE : 0));
            head.setShort(4, tag);
            head.setShort(6, status);
            head.setLong(8, f.requestId());
            head.setInt(16, f.timeoutMillis());
            head.setInt(20, head.readableBytes() - Frame.HEADER_BYTES);
            head.setInt(24, (int) f.payloadLength());
        } catch (RuntimeException e) {
            head.release();
            throw e; // the frame (and its payload) is released by MessageToMessageEncoder
        }
        Object payload;
        try {
            payload = switch (f.takePayload()) {
                case Payload.Bytes b -> {
                    if (b.buf().isReadable()) {
                        yield b.buf();
                    }
                    b.release();
                    yield null;
                }
                case Payload.FileSlice s -> readFiles ? read(ctx, s) : s.toRegion();
            };
        } catch (RuntimeException e) {
            head.release(); // nothing of the frame goes out: a header without its payload would corrupt the stream
            throw e;
        }
        out.add(head);
        if (payload != null) {
            out.add(payload);
        }
    }

    /** The bytes of {@code s} in a new buffer; the slice's channel is closed either way. */
    private static ByteBuf read(ChannelHandlerContext ctx, Payload.FileSlice s) {
        ByteBuf buf = ctx.alloc().ioBuffer((int) s.length());
        try {
            long pos = s.position();
            while (buf.writerIndex() < s.length()) {
                int n = buf.writeBytes(s.channel(), pos, (int) (s.length() - buf.writerIndex()));
                if (n < 0) {
                    throw new java.io.EOFException("file payload ends " + (s.length() - buf.writerIndex()) + " bytes early");
                }
                pos += n;
            }
            return buf;
        } catch (java.io.IOException e) {
            buf.release();
            throw new java.io.UncheckedIOException("cannot read a file payload: " + e.getMessage(), e);
        } finally {
            s.release();
        }
    }
}
