package io.strata.l1;

import java.nio.ByteBuffer;

/**
 * One cached block: bytes {@code [block * B, (block + 1) * B)} of chunk {@code chunk} of file
 * {@code inode} as of {@code dataVersion}, where B is the cache's block size (capped at the
 * chunk size). A new data version never sees an older version's blocks: they are other keys.
 *
 * <p>On disk (LMDB key and block file name) the key is 24 bytes, big-endian, inode first, so
 * that one file's blocks are adjacent in the index (drop by inode is a range scan).
 */
record BlockKey(long inode, long dataVersion, int chunk, int block) {
    static final int BYTES = 24;

    /** Writes the 24-byte form into {@code out} (cleared first) and flips it. */
    ByteBuffer encode(ByteBuffer out) {
        out.clear();
        out.putLong(inode).putLong(dataVersion).putInt(chunk).putInt(block);
        out.flip();
        return out;
    }

    static BlockKey decode(ByteBuffer in) {
        ByteBuffer b = in.duplicate();
        return new BlockKey(b.getLong(), b.getLong(), b.getInt(), b.getInt());
    }

    /** The block file's name: the key in hex, so that a file found on disk names its key. */
    String fileName() {
        return String.format("%016x-%016x-%08x-%08x.blk", inode, dataVersion, chunk, block);
    }

    /** The key a block file name stands for, or null for any other name. */
    static BlockKey parseFileName(String name) {
        if (name.length() != 16 + 1 + 16 + 1 + 8 + 1 + 8 + 4 || !name.endsWith(".blk")) {
            return null;
        }
        try {
            return new BlockKey(Long.parseUnsignedLong(name.substring(0, 16), 16), Long.parseUnsignedLong(name.substring(17, 33), 16),
                    Integer.parseUnsignedInt(name.substring(34, 42), 16), Integer.parseUnsignedInt(name.substring(43, 51), 16));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** The subdirectory (of 256) a block file lives in, so that no directory grows huge. */
    String shard() {
        return String.format("%02x", (int) (mix() & 0xff));
    }

    /** A well-spread 64-bit hash (for striping and the frequency sketch). */
    long mix() {
        long h = inode * 0x9E3779B97F4A7C15L;
        h ^= Long.rotateLeft(dataVersion * 0xC2B2AE3D27D4EB4FL, 17);
        h ^= Long.rotateLeft(((long) chunk << 32 | (block & 0xffffffffL)) * 0x165667B19E3779F9L, 31);
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        return h;
    }

}
