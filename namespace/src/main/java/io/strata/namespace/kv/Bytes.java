package io.strata.namespace.kv;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.util.Arrays;
import java.util.Comparator;

/** Byte-string helpers shared by the KV backends: unsigned order, prefixes, little-endian longs. */
public final class Bytes {
    /** Keys sort as unsigned bytes, shorter first on a common prefix (memcmp, as LMDB and FDB do). */
    public static final Comparator<byte[]> ORDER = Arrays::compareUnsigned;

    /** Longest key the SPI accepts: LMDB's compiled-in limit (FoundationDB allows 10,000). */
    public static final int MAX_KEY = 511;
    /** Largest value the SPI accepts: FoundationDB's limit (LMDB has none). */
    public static final int MAX_VALUE = 100_000;

    private Bytes() {
    }

    public static int compare(byte[] a, byte[] b) {
        return Arrays.compareUnsigned(a, b);
    }

    /** The first key after every key that starts with {@code prefix} (FoundationDB's strinc). */
    public static byte[] strinc(byte[] prefix) {
        int n = prefix.length;
        while (n > 0 && prefix[n - 1] == (byte) 0xFF) {
            n--;
        }
        if (n == 0) {
            throw new IllegalArgumentException("a prefix of only 0xFF bytes has no successor");
        }
        byte[] out = Arrays.copyOf(prefix, n);
        out[n - 1]++;
        return out;
    }

    /** The smallest key greater than {@code key}: key + 0x00. */
    public static byte[] keyAfter(byte[] key) {
        return Arrays.copyOf(key, key.length + 1);
    }

    public static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int o = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, o, p.length);
            o += p.length;
        }
        return out;
    }

    public static boolean startsWith(byte[] key, byte[] prefix) {
        return key.length >= prefix.length && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
    }

    /** {@code v} as 8 little-endian bytes (the encoding of FoundationDB's atomic ADD and MAX). */
    public static byte[] le64(long v) {
        byte[] b = new byte[8];
        putLe64(b, 0, v);
        return b;
    }

    public static void putLe64(byte[] b, int off, long v) {
        for (int i = 0; i < 8; i++) {
            b[off + i] = (byte) (v >>> (8 * i));
        }
    }

    /** Reads up to 8 little-endian bytes (a shorter value is zero-extended, as FDB does); null reads as 0. */
    public static long readLe64(byte[] b) {
        if (b == null) {
            return 0;
        }
        return readLe64(b, 0, Math.min(8, b.length));
    }

    public static long readLe64(byte[] b, int off, int len) {
        long v = 0;
        for (int i = 0; i < len; i++) {
            v |= (b[off + i] & 0xFFL) << (8 * i);
        }
        return v;
    }

    static void checkKey(byte[] key) {
        if (key == null || key.length == 0) {
            throw new StrataException(Status.INVALID_ARGUMENT, "empty key");
        }
        if (key.length > MAX_KEY) {
            throw new StrataException(Status.INVALID_ARGUMENT, "key of " + key.length + " bytes exceeds " + MAX_KEY);
        }
    }

    static void checkValue(byte[] value) {
        if (value == null) {
            throw new StrataException(Status.INVALID_ARGUMENT, "null value");
        }
        if (value.length > MAX_VALUE) {
            throw new StrataException(Status.INVALID_ARGUMENT, "value of " + value.length + " bytes exceeds " + MAX_VALUE);
        }
    }

    static void checkRange(byte[] begin, byte[] end) {
        if (begin == null || end == null) {
            throw new StrataException(Status.INVALID_ARGUMENT, "a range needs both ends");
        }
        if (begin.length > MAX_KEY + 1 || end.length > MAX_KEY + 1) {
            throw new StrataException(Status.INVALID_ARGUMENT, "range end longer than a key");
        }
    }
}
