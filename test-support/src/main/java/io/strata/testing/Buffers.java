package io.strata.testing;

import io.netty.buffer.ByteBuf;

/** Buffers in tests: what a read returned, as plain bytes. */
public final class Buffers {
    private Buffers() {
    }

    /** The readable bytes of {@code b}, which this releases (the caller owned it, as after a read). */
    public static byte[] drain(ByteBuf b) {
        try {
            byte[] out = new byte[b.readableBytes()];
            b.getBytes(b.readerIndex(), out);
            return out;
        } finally {
            b.release();
        }
    }
}
