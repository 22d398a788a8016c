package io.strata.store;

import io.netty.buffer.ByteBuf;
import io.strata.core.util.Crc32c;
import java.util.function.IntUnaryOperator;

/**
 * CRC32C per fixed-size block of a content (the last block may be shorter), and the whole
 * content's CRC derived from the block CRCs with {@link Crc32c#combine}: the bytes are
 * checksummed once, and a read that touches a few blocks checks only those. Immutable and
 * thread-safe; the operator that shifts a CRC over one whole block is computed once here.
 */
public final class BlockCrcs {
    private final int blockSize;
    private final long[] blockShift;

    public BlockCrcs(int blockSize) {
        if (blockSize < 1) {
            throw new IllegalArgumentException("block size must be positive, got " + blockSize);
        }
        this.blockSize = blockSize;
        this.blockShift = Crc32c.shiftOperator(blockSize);
    }

    public int blockSize() {
        return blockSize;
    }

    /** Number of blocks that hold {@code length} bytes. */
    public int count(long length) {
        return (int) ((length + blockSize - 1) / blockSize);
    }

    /** The CRC32C of each block of the readable bytes of {@code data} (borrowed, indexes untouched). */
    public int[] of(ByteBuf data) {
        int len = data.readableBytes();
        int[] out = new int[count(len)];
        for (int i = 0; i < out.length; i++) {
            int at = i * blockSize;
            out[i] = Crc32c.of(data, data.readerIndex() + at, Math.min(blockSize, len - at));
        }
        return out;
    }

    /**
     * The CRC32C of a content of {@code length} bytes whose block CRCs are {@code crcs} (the
     * content may start at any block: only the blocks' lengths matter); 0 (the CRC of nothing)
     * when there are no blocks.
     */
    public int combine(int[] crcs, long length) {
        if (crcs.length == 0) {
            return 0;
        }
        int crc = crcs[0];
        for (int i = 1; i < crcs.length; i++) {
            long len = Math.min(blockSize, length - (long) i * blockSize);
            crc = len == blockSize ? Crc32c.combine(crc, crcs[i], blockShift) : Crc32c.combine(crc, crcs[i], len);
        }
        return crc;
    }

    /**
     * Checks {@code n} bytes of {@code buf} at {@code index}, which hold the content from offset
     * {@code start} (a block boundary) on, block by block against {@code expected} (block number
     * to its CRC; the last block checked may be shorter). Returns the number of the first block
     * that does not match, or -1 when all do.
     */
    public int firstMismatch(ByteBuf buf, int index, long start, int n, IntUnaryOperator expected) {
        if (start % blockSize != 0) {
            throw new IllegalArgumentException("a checked range starts on a block boundary, not at " + start);
        }
        int first = (int) (start / blockSize);
        for (int at = 0; at < n; at += blockSize) {
            int block = first + at / blockSize;
            if (Crc32c.of(buf, index + at, Math.min(blockSize, n - at)) != expected.applyAsInt(block)) {
                return block;
            }
        }
        return -1;
    }
}
