package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.strata.core.Status;
import io.strata.core.StrataException;
import java.nio.charset.StandardCharsets;

/**
 * Helpers for message codecs. Every read checks bounds and throws {@link Malformed} (status
 * {@code BAD_FRAME}) instead of an IndexOutOfBoundsException, so a decoder fed garbage fails
 * with a reason. Integers are big-endian (network order) unless a name says otherwise.
 */
public final class Wire {
    /** Longest string a message may carry unless its codec says otherwise. */
    public static final int MAX_STRING = 64 * 1024;

    private Wire() {
    }

    /** A frame or message body that does not follow the wire format. */
    public static final class Malformed extends StrataException {
        private static final long serialVersionUID = 1L;

        public Malformed(String message) {
            super(Status.BAD_FRAME, message);
        }
    }

    public static void need(ByteBuf in, int bytes, String what) {
        if (bytes < 0 || in.readableBytes() < bytes) {
            throw new Malformed("truncated " + what + ": need " + bytes + " bytes, have " + in.readableBytes());
        }
    }

    public static int readU8(ByteBuf in, String what) {
        need(in, 1, what);
        return in.readUnsignedByte();
    }

    public static boolean readBool(ByteBuf in, String what) {
        int b = readU8(in, what);
        if (b > 1) {
            throw new Malformed(what + ": boolean byte " + b);
        }
        return b == 1;
    }

    public static int readU16(ByteBuf in, String what) {
        need(in, 2, what);
        return in.readUnsignedShort();
    }

    public static int readInt(ByteBuf in, String what) {
        need(in, 4, what);
        return in.readInt();
    }

    /** Reads an int and checks it lies in [min, max]. */
    public static int readInt(ByteBuf in, String what, int min, int max) {
        int v = readInt(in, what);
        if (v < min || v > max) {
            throw new Malformed(what + " out of range [" + min + ", " + max + "]: " + v);
        }
        return v;
    }

    public static long readLong(ByteBuf in, String what) {
        need(in, 8, what);
        return in.readLong();
    }

    public static void writeBool(ByteBuf out, boolean v) {
        out.writeByte(v ? 1 : 0);
    }

    /** A UTF-8 string with a u32 length prefix. */
    public static void writeString(ByteBuf out, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.writeBytes(b);
    }

    public static String readString(ByteBuf in, int maxBytes) {
        return readString(in, maxBytes, "string");
    }

    public static String readString(ByteBuf in, int maxBytes, String what) {
        int len = readInt(in, what + " length");
        if (len < 0 || len > maxBytes) {
            throw new Malformed(what + " length " + len + " exceeds " + maxBytes);
        }
        need(in, len, what);
        String s = in.toString(in.readerIndex(), len, StandardCharsets.UTF_8);
        in.skipBytes(len);
        return s;
    }

    public static String readString(ByteBuf in) {
        return readString(in, MAX_STRING);
    }

    /** A byte array with a u32 length prefix. */
    public static void writeBytes(ByteBuf out, byte[] b) {
        out.writeInt(b.length);
        out.writeBytes(b);
    }

    public static byte[] readBytes(ByteBuf in, int maxBytes, String what) {
        int len = readInt(in, what + " length");
        if (len < 0 || len > maxBytes) {
            throw new Malformed(what + " length " + len + " exceeds " + maxBytes);
        }
        need(in, len, what);
        byte[] b = new byte[len];
        in.readBytes(b);
        return b;
    }

    /** A list length (u32) checked against a bound and against the bytes left (each item >= minItemBytes). */
    public static int readCount(ByteBuf in, String what, int max, int minItemBytes) {
        int n = readInt(in, what + " count");
        if (n < 0 || n > max) {
            throw new Malformed(what + " count " + n + " out of range [0, " + max + "]");
        }
        if ((long) n * minItemBytes > in.readableBytes()) {
            throw new Malformed(what + " count " + n + " larger than the bytes left");
        }
        return n;
    }

    /** An enum written as its explicit wire tag (never its ordinal). */
    public static <E extends Enum<E> & Tagged> E readEnum(ByteBuf in, Class<E> type, String what) {
        int tag = readU8(in, what);
        for (E e : type.getEnumConstants()) {
            if (e.wireTag() == tag) {
                return e;
            }
        }
        throw new Malformed("unknown " + what + " tag " + tag);
    }

    public static void writeEnum(ByteBuf out, Tagged e) {
        out.writeByte(e.wireTag());
    }

    /** An enum constant with an explicit wire tag (0..255). */
    public interface Tagged {
        int wireTag();
    }
}
