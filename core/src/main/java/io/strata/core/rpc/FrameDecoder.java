package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.util.List;

/**
 * Splits the byte stream into {@link Frame}s, checking the header before waiting for the rest:
 * a wrong magic, an unknown version or flags, a request with a status, or a body or payload
 * over the limits raise {@link Wire.Malformed} at once (the connection handler then logs the
 * reason and closes). Body and payload are retained slices of the receive buffer.
 *
 * <p>The receive buffer grows only with bytes that have arrived, never with the lengths a header
 * claims: a peer that sends the header of an 80 MiB frame and stops costs this node its header,
 * not 80 MiB. A frame of at least {@link #LARGE_FRAME} bytes is collected in segments, each
 * allocated when the bytes before it have filled the last one and no larger than what has
 * arrived of the frame or {@link #SEGMENT}; so a connection holds at most what it sent plus one
 * segment. Segments are never moved, so each payload byte is copied once (from the socket's
 * read buffer into its segment), and the payload of such a frame is a slice of a composite
 * buffer: readers use {@code nioBuffers()} or the {@code ByteBuf} accessors, not one NIO buffer.
 */
final class FrameDecoder extends ByteToMessageDecoder {
    /** Frames at least this large are collected in segments (see {@link #cumulate}). */
    static final int LARGE_FRAME = 128 * 1024;
    /** Largest segment: the most memory a connection holds beyond the bytes it sent. */
    static final int SEGMENT = 1 << 20;

    private final int maxBodyBytes;
    private final int maxPayloadBytes;

    /** Set after the first bad frame: the stream has lost its framing, so the rest is dropped. */
    private boolean failed;
    /** Length of the incomplete large frame at the front of the buffer, 0 when there is none. */
    private long largeFrameBytes;
    /** The segmented buffer collecting that frame once its bytes keep arriving, else null. */
    private CompositeByteBuf segments;

    FrameDecoder(int maxBodyBytes, int maxPayloadBytes) {
        this.maxBodyBytes = maxBodyBytes;
        this.maxPayloadBytes = maxPayloadBytes;
        setCumulator(this::cumulate);
    }

    /**
     * True while part of a frame has arrived and the rest has not: the connection handler closes
     * a connection that stays so for the read timeout.
     */
    boolean midFrame() {
        return !failed && actualReadableBytes() > 0;
    }

    /** Drops the rest of the stream: the connection is being closed and its partial frame is not a fault. */
    void abandon() {
        failed = true;
    }

    /**
     * Appends newly read bytes. While a large frame is incomplete they go into its segments;
     * otherwise into a plain buffer, merged as usual, which then holds less than
     * {@link #LARGE_FRAME} bytes of a frame plus one read.
     */
    private ByteBuf cumulate(ByteBufAllocator alloc, ByteBuf cumulation, ByteBuf in) {
        if (largeFrameBytes > 0 && cumulation == segments) {
            try {
                append(segments, in);
                return segments;
            } finally {
                in.release();
            }
        }
        if (largeFrameBytes == 0 && !(cumulation instanceof CompositeByteBuf)) {
            return MERGE_CUMULATOR.cumulate(alloc, cumulation, in);
        }
        // A new buffer either way below: the old segments may still back a payload being served.
        ByteBuf next = null;
        try {
            if (largeFrameBytes > 0) { // a large frame starts
                CompositeByteBuf buf = alloc.compositeBuffer(Integer.MAX_VALUE);
                next = buf;
                append(buf, cumulation);
                append(buf, in);
                segments = buf;
            } else { // the few bytes that followed a large frame go back to a plain buffer
                next = alloc.buffer(cumulation.readableBytes() + in.readableBytes());
                next.writeBytes(cumulation).writeBytes(in);
            }
            return next;
        } catch (RuntimeException | Error e) {
            if (next != null) {
                next.release();
            }
            throw e;
        } finally {
            cumulation.release();
            in.release();
        }
    }

    /** Copies {@code from} into the segments, first adding a segment if they have no room left. */
    private void append(CompositeByteBuf buf, ByteBuf from) {
        int shortfall = from.readableBytes() - buf.writableBytes();
        if (shortfall > 0) {
            long received = buf.readableBytes() + from.readableBytes();
            long rest = largeFrameBytes - (buf.capacity() - buf.readerIndex());
            long segment = Math.min(Math.min(SEGMENT, received), rest);
            buf.capacity(buf.capacity() + (int) Math.max(shortfall, segment));
        }
        buf.writeBytes(from);
    }

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
            int magic = in.getUnsignedShort(base);
            throw new Wire.Malformed(magic == 0x1603
                    ? "a TLS handshake: the peer speaks TLS and this side does not (no [tls] in its config?)"
                    : String.format("bad magic 0x%04x (not a Strata peer?)", magic));
        }
        if (have >= 3 && in.getUnsignedByte(base + 2) != Frame.VERSION) {
            throw new Wire.Malformed("unsupported wire version " + in.getUnsignedByte(base + 2)
                    + " (this node speaks " + Frame.VERSION + ")");
        }
        if (have >= 4 && (in.getUnsignedByte(base + 3) & ~Frame.KNOWN_FLAGS) != 0) {
            throw new Wire.Malformed("unknown flags 0x" + Integer.toHexString(in.getUnsignedByte(base + 3)));
        }
        if (have < Frame.HEADER_BYTES) {
            largeFrameBytes = 0;
            return;
        }
        int flags = in.getUnsignedByte(base + 3);
        int tag = in.getUnsignedShort(base + 4);
        int status = in.getUnsignedShort(base + 6);
        boolean response = (flags & Frame.FLAG_RESPONSE) != 0;
        if (!response && status != 0) {
            throw new Wire.Malformed("request with status " + status);
        }
        boolean traced = (flags & Frame.FLAG_TRACE) != 0;
        if (traced && response) {
            throw new Wire.Malformed("response with a trace id");
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
        if (traced && bodyLen < 8) {
            throw new Wire.Malformed("traced request with a body of " + bodyLen + " bytes (its trace id takes 8)");
        }
        if (timeout > Integer.MAX_VALUE) {
            throw new Wire.Malformed("timeout " + timeout + " ms out of range");
        }
        long total = Frame.HEADER_BYTES + bodyLen + payloadLen;
        if (in.readableBytes() < total) {
            largeFrameBytes = total >= LARGE_FRAME ? total : 0;
            return;
        }
        largeFrameBytes = 0;
        segments = null;
        in.skipBytes(Frame.HEADER_BYTES);
        long traceId = 0;
        if (traced) {
            traceId = in.readLong();
            bodyLen -= 8;
        }
        ByteBuf body = in.readRetainedSlice((int) bodyLen);
        ByteBuf payload = payloadLen == 0 ? null : in.readRetainedSlice((int) payloadLen);
        out.add(new Frame(flags, tag, status, requestId, (int) timeout, traceId, body, payload));
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
