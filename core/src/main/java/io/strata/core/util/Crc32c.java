package io.strata.core.util;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * CRC32C helpers: checksums of buffers without copying, and {@link #combine}, which gives the
 * CRC of a concatenation from the CRCs of its parts (zlib's GF(2) matrix method, with the
 * Castagnoli polynomial). The chunk engine keeps one CRC per 64 KiB block and derives the
 * whole-chunk CRC from them, so a small write never re-reads a whole chunk to checksum it.
 */
public final class Crc32c {
    /** The reflected Castagnoli polynomial. */
    private static final int POLY = 0x82F63B78;

    private Crc32c() {
    }

    /** CRC32C of the readable bytes of {@code buf} (borrowed; indexes untouched). */
    public static int of(ByteBuf buf) {
        CRC32C crc = new CRC32C();
        if (buf.isReadable()) {
            for (ByteBuffer b : buf.nioBuffers()) {
                crc.update(b);
            }
        }
        return (int) crc.getValue();
    }

    /** CRC32C of {@code length} bytes of {@code buf} from {@code index} (borrowed). */
    public static int of(ByteBuf buf, int index, int length) {
        CRC32C crc = new CRC32C();
        if (length > 0) {
            for (ByteBuffer b : buf.nioBuffers(index, length)) {
                crc.update(b);
            }
        }
        return (int) crc.getValue();
    }

    /** CRC32C of the remaining bytes of {@code b} (position untouched). */
    public static int of(ByteBuffer b) {
        CRC32C crc = new CRC32C();
        crc.update(b.duplicate());
        return (int) crc.getValue();
    }

    /** CRC32C of {@code n} zero bytes. */
    public static int zeros(long n) {
        // crc(zeros(n)) = combine(crc(""), crc(zeros(n)))... computed directly in 64 KiB steps
        byte[] z = new byte[(int) Math.min(n, 1 << 16)];
        CRC32C crc = new CRC32C();
        long left = n;
        while (left > 0) {
            int k = (int) Math.min(left, z.length);
            crc.update(z, 0, k);
            left -= k;
        }
        return (int) crc.getValue();
    }

    /** The CRC of A||B given {@code crcA = crc(A)}, {@code crcB = crc(B)} and {@code lenB = |B|}. */
    public static int combine(int crcA, int crcB, long lenB) {
        if (lenB <= 0) {
            return crcA;
        }
        return (int) (times(shiftOperator(lenB), crcA & 0xFFFFFFFFL) ^ (crcB & 0xFFFFFFFFL));
    }

    /** Combines {@code crcA} with a B of {@code op}'s length using a precomputed operator (see {@link #shiftOperator}). */
    public static int combine(int crcA, int crcB, long[] op) {
        return (int) (times(op, crcA & 0xFFFFFFFFL) ^ (crcB & 0xFFFFFFFFL));
    }

    /**
     * The GF(2) matrix that advances a CRC over {@code len} zero bytes; reuse it to combine many
     * parts of the same length cheaply.
     */
    public static long[] shiftOperator(long len) {
        long[] odd = new long[32];
        long[] even = new long[32];
        // operator for one zero bit
        odd[0] = POLY & 0xFFFFFFFFL;
        long row = 1;
        for (int n = 1; n < 32; n++) {
            odd[n] = row;
            row <<= 1;
        }
        square(even, odd); // two zero bits
        square(odd, even); // four zero bits
        long[] result = identity();
        long bits = len;
        // each pass squares into a whole zero byte, then 2, 4, ... bytes
        do {
            square(even, odd);
            if ((bits & 1) != 0) {
                result = multiply(even, result);
            }
            bits >>>= 1;
            if (bits == 0) {
                break;
            }
            square(odd, even);
            if ((bits & 1) != 0) {
                result = multiply(odd, result);
            }
            bits >>>= 1;
        } while (bits != 0);
        return result;
    }

    private static long[] identity() {
        long[] m = new long[32];
        for (int i = 0; i < 32; i++) {
            m[i] = 1L << i;
        }
        return m;
    }

    /** {@code a * b} as operators: apply b, then a. */
    private static long[] multiply(long[] a, long[] b) {
        long[] m = new long[32];
        for (int i = 0; i < 32; i++) {
            m[i] = times(a, b[i]);
        }
        return m;
    }

    private static long times(long[] mat, long vec) {
        long sum = 0;
        int i = 0;
        while (vec != 0) {
            if ((vec & 1) != 0) {
                sum ^= mat[i];
            }
            vec >>>= 1;
            i++;
        }
        return sum;
    }

    private static void square(long[] square, long[] mat) {
        for (int n = 0; n < 32; n++) {
            square[n] = times(mat, mat[n]);
        }
    }
}
