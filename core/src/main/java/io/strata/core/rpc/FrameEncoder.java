package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageEncoder;
import java.util.List;

/**
 * Encodes an {@link OutboundFrame}: one small buffer with the 28-byte header and the message
 * body, then the payload as it is (a ByteBuf, or a file region sent with sendfile). The payload
 * is never copied. The frame itself is released by the base class after encoding.
 */
final class FrameEncoder extends MessageToMessageEncoder<OutboundFrame> {
    FrameEncoder() {
        super(OutboundFrame.class);
    }

    @Override
    protected void encode(ChannelHandlerContext ctx, OutboundFrame f, List<Object> out) {
        ByteBuf head = ctx.alloc().ioBuffer(Frame.HEADER_BYTES + 64);
        try {
            head.writerIndex(Frame.HEADER_BYTES);
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
            head.setByte(3, f.response() ? Frame.FLAG_RESPONSE : 0);
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
        out.add(head);
        switch (f.takePayload()) {
            case Payload.Bytes b -> {
                if (b.buf().isReadable()) {
                    out.add(b.buf());
                } else {
                    b.release();
                }
            }
            case Payload.FileSlice s -> out.add(s.toRegion());
        }
    }
}
