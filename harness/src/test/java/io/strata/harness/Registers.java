package io.strata.harness;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * Chunk contents that encode a register value: 8 bytes of value, then a pattern derived from it,
 * so that a read can tell a whole value from a torn or mixed one. An empty chunk is value 0.
 */
final class Registers {
    private Registers() {
    }

    /** The content of {@code value} (a wrapped array: built without per-byte buffer calls, which paranoid leak detection slows). */
    static ByteBuf encode(long value, int length) {
        return Unpooled.wrappedBuffer(bytes(value, length));
    }

    static byte[] bytes(long value, int length) {
        byte[] b = new byte[length];
        java.nio.ByteBuffer.wrap(b).putLong(value);
        long x = value * 0x9E3779B97F4A7C15L + 1;
        for (int i = 8; i < length; i++) {
            b[i] = (byte) (x >>> 56);
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return b;
    }

    /** The value a chunk holds; throws when its bytes are not exactly one value's content. */
    static long decode(ByteBuf data, int length) {
        if (!data.isReadable()) {
            return 0;
        }
        if (data.readableBytes() != length) {
            throw new AssertionError("torn chunk: " + data.readableBytes() + " bytes, a value has " + length);
        }
        byte[] have = new byte[length];
        data.getBytes(data.readerIndex(), have);
        long v = java.nio.ByteBuffer.wrap(have).getLong();
        if (!java.util.Arrays.equals(have, bytes(v, length))) {
            throw new AssertionError("torn chunk: bytes after value " + v + " do not match its pattern");
        }
        return v;
    }
}
