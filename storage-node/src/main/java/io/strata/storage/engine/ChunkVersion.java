package io.strata.storage.engine;

import io.strata.protocol.storage.RequestId;
import java.util.Arrays;

/**
 * One stored version of a chunk: its number, the data file holding it (0 when it has no bytes),
 * its length, the CRC32C of the whole content and of each {@link ChunkEngine#BLOCK} block, the
 * request that produced it, and whether it is a removal (a tombstone: it reads as empty but
 * keeps the version counter going, so an old update can never be mistaken for a new one).
 * Immutable: the data file of a version is never written again once the version exists.
 */
public record ChunkVersion(long version, long file, int length, int crc, int[] blockCrcs, boolean removed,
                           RequestId request) {
    public ChunkVersion {
        if (version <= 0 || length < 0 || file < 0) {
            throw new IllegalArgumentException("bad chunk version " + version + " file " + file + " length " + length);
        }
        blockCrcs = blockCrcs.clone();
        if (blockCrcs.length != ChunkEngine.blocks(length)) {
            throw new IllegalArgumentException("version " + version + ": " + blockCrcs.length + " block CRCs for " + length + " bytes");
        }
    }

    /** The removal (tombstone) version {@code version}: no bytes, no data file. */
    public static ChunkVersion tombstone(long version, RequestId request) {
        return new ChunkVersion(version, 0, 0, 0, new int[0], true, request);
    }

    /** The block CRCs (a copy). */
    @Override
    public int[] blockCrcs() {
        return blockCrcs.clone();
    }

    int blockCrc(int i) {
        return blockCrcs[i];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ChunkVersion v && v.version == version && v.file == file && v.length == length && v.crc == crc
                && v.removed == removed && v.request.equals(request) && Arrays.equals(v.blockCrcs, blockCrcs);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(version) * 31 + crc;
    }

    @Override
    public String toString() {
        return "v" + version + (removed ? "(removed)" : "") + "[file " + Long.toHexString(file) + ", " + length + " B, crc "
                + Integer.toHexString(crc) + ", req " + request + "]";
    }
}
