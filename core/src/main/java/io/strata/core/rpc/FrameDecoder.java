package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.util.List;

/**
 * Splits the byte stream into {@link Frame}s, checking the header before waiting for the rest:
 * a wrong magic, an unknown version or flags, a request with a status, or a body or payload
 * over the limits raise {@link Wire.Malformed} at once (the connection handler then logs the
 * reason and closes). Body and payload are retained slices of the receive buffer; a large
 * frame's buffer is sized once when its header arrives, so its payload is copied only once.
 */
final class FrameDecoder extends ByteToMessageDecoder {
    private final int maxBodyBytes;
    private final int maxPayloadBytes;

    FrameDecoder(int maxBodyBytes, int maxPayloadBytes) {
        this.maxBodyBytes = maxBodyBytes;
        this.maxPayloadBytes = maxPayloadBytes;
    }

    /** Frames at least this large get a receive buffer sized for them (see {@link #decodeFrame}). */
    static final int LARGE_FRAME = 128 * 1024;

    /** Set after the first bad frame: the stream has lost its framing, so the rest is dropped. */
    private boolean failed;

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (failed) {
            in.skipBytes(in.readableBytes());
            return;
        }
        try {
            decodeFrame(in, out);
        } catch (Wire.Malformed e) {
            failed = true;
            in.skipBytes(in.readableBytes());
            throw e;
        }
    }

    private void decodeFrame(ByteBuf in, List<Object> out) {
        int base = in.readerIndex();
        int have = in.readableBytes();
        // Check what has arrived of the header at once, so that a stranger (say an HTTP client)
        // is turned away without waiting for a full header.
        if (have >= 2 && in.getUnsignedShort(base) != Frame.MAGIC) {
            throw new Wire.Malformed(String.format("bad magic 0x%04x (not a Strata peer?)", in.getUnsignedShort(base)));
        }
        if (have >= 3 && in.getUnsignedByte(base + 2) != Frame.VERSION) {
            throw new Wire.Malformed("unsupported wire version " + in.getUnsignedByte(base + 2)
                    + " (this node speaks " + Frame.VERSION + ")");
        }
        if (have >= 4 && (in.getUnsignedByte(base + 3) & ~Frame.KNOWN_FLAGS) != 0) {
            throw new Wire.Malformed("unknown flags 0x" + Integer.toHexString(in.getUnsignedByte(base + 3)));
        }
        if (have < Frame.HEADER_BYTES) {
            return;
        }
        int flags = in.getUnsignedByte(base + 3);
        int tag = in.getUnsignedShort(base + 4);
        int status = in.getUnsignedShort(base + 6);
        boolean response = (flags & Frame.FLAG_RESPONSE) != 0;
        if (!response && status != 0) {
            throw new Wire.Malformed("request with status " + status);
        }
        if (tag == 0 && status == 0) {
            throw new Wire.Malformed("frame without a message tag");
        }
        long requestId = in.getLong(base + 8);
        long timeout = in.getUnsignedInt(base + 16);
        long bodyLen = in.getUnsignedInt(base + 20);
        long payloadLen = in.getUnsignedInt(base + 24);
        if (bodyLen > maxBodyBytes) {
            throw new Wire.Malformed("body of " + bodyLen + " bytes exceeds the limit of " + maxBodyBytes);
        }
        if (payloadLen > maxPayloadBytes) {
            throw new Wire.Malformed("payload of " + payloadLen + " bytes exceeds the limit of " + maxPayloadBytes);
        }
        if (timeout > Integer.MAX_VALUE) {
            throw new Wire.Malformed("timeout " + timeout + " ms out of range");
        }
        long total = Frame.HEADER_BYTES + bodyLen + payloadLen;
        if (in.readableBytes() < total) {
            // A large frame arrives over many reads: size the receive buffer for the whole frame
            // now, so that each later read is copied into it once, instead of into a buffer
            // that grows by doubling (copying everything received so far at every step).
            if (total >= LARGE_FRAME && in.maxCapacity() - in.readerIndex() >= total
                    && in.capacity() - in.readerIndex() < total && in.refCnt() == 1) {
                in.discardReadBytes();
                in.ensureWritable((int) (total - in.readableBytes()));
            }
            return;
        }
        in.skipBytes(Frame.HEADER_BYTES);
        ByteBuf body = in.readRetainedSlice((int) bodyLen);
        ByteBuf payload = payloadLen == 0 ? null : in.readRetainedSlice((int) payloadLen);
        out.add(new Frame(flags, tag, status, requestId, (int) timeout, body, payload));
    }

    @Override
    protected void decodeLast(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (in.isReadable() && !failed) {
            decode(ctx, in, out);
            if (in.isReadable()) {
                int left = in.readableBytes();
                in.skipBytes(left);
                throw new Wire.Malformed("connection closed in the middle of a frame (" + left + " bytes of a truncated frame)");
            }
        }
    }
}
