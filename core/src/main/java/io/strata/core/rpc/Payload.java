package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.DefaultFileRegion;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.nio.channels.FileChannel;

/**
 * Bulk bytes that travel beside a message. A payload handed to the RPC layer is <b>owned</b> by
 * it from then on: it is released (or its file channel closed) once written or on failure.
 */
public sealed interface Payload {
    Payload NONE = new Bytes(Unpooled.EMPTY_BUFFER);

    long length();

    /** Gives up the bytes without sending them. */
    void release();

    /** Bytes in memory; ownership of {@code buf} moves into the payload. */
    static Payload of(ByteBuf buf) {
        return buf.isReadable() ? new Bytes(buf) : releaseAndNone(buf);
    }

    /**
     * {@code length} bytes of an open file from {@code position}, sent with sendfile(2) where the
     * transport supports it. Ownership of {@code channel} moves in: it is closed after sending.
     */
    static Payload ofFile(FileChannel channel, long position, long length) {
        return new FileSlice(channel, position, length);
    }

    private static Payload releaseAndNone(ByteBuf buf) {
        ReferenceCountUtil.release(buf);
        return NONE;
    }

    record Bytes(ByteBuf buf) implements Payload {
        @Override
        public long length() {
            return buf.readableBytes();
        }

        @Override
        public void release() {
            if (buf != Unpooled.EMPTY_BUFFER) {
                ReferenceCountUtil.release(buf);
            }
        }
    }

    record FileSlice(FileChannel channel, long position, long length) implements Payload {
        @Override
        public void release() {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing to do: the file was only read
            }
        }

        /** The Netty region that sends this slice; it takes over closing the channel. */
        DefaultFileRegion toRegion() {
            return new DefaultFileRegion(channel, position, length);
        }
    }
}
