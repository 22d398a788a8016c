package io.strata.bench.fs;

import java.nio.ByteBuffer;
import java.util.Random;

/**
 * The bytes the jobs write, a pure function of (file id, offset), so any range of any file can
 * be checked against what it must hold: each 64 KiB unit of a file is a slice of a fixed random
 * pool starting at an offset hashed from (file, unit). A misplaced or stale unit reads as other
 * bytes; a hole reads as zeros. Generation is a memcpy, cheap next to the I/O it feeds.
 */
final class Content {
    static final int UNIT = 64 * 1024;
    private static final int POOL = 8 << 20;
    private static final byte[] POOL_BYTES = new byte[POOL + UNIT];

    static {
        new Random(0x5742_4e43_4845L).nextBytes(POOL_BYTES);
    }

    private Content() {
    }

    private static int start(long file, long unit) {
        long h = file * 0x9E3779B97F4A7C15L + unit * 0xC2B2AE3D27D4EB4FL;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 32;
        return (int) Math.floorMod(h, (long) POOL);
    }

    /** Fills {@code dst} from its position to its limit with the bytes of {@code file} at {@code pos}; the position is not moved. */
    static void fill(long file, long pos, ByteBuffer dst) {
        int at = dst.position();
        int end = dst.limit();
        long p = pos;
        while (at < end) {
            long unit = p / UNIT;
            int off = (int) (p % UNIT);
            int n = Math.min(UNIT - off, end - at);
            dst.put(at, POOL_BYTES, start(file, unit) + off, n);
            at += n;
            p += n;
        }
    }

    /**
     * Where {@code got} (position to limit, the bytes read at {@code pos}) first differs from
     * the content of {@code file}, as a file offset; -1 when it matches. {@code scratch} must
     * hold as many bytes.
     */
    static long mismatch(long file, long pos, ByteBuffer got, ByteBuffer scratch) {
        int n = got.remaining();
        scratch.clear().limit(n);
        fill(file, pos, scratch);
        int m = got.mismatch(scratch);
        return m < 0 ? -1 : pos + m;
    }
}
