package io.strata.protocol.storage;

import io.netty.buffer.ByteBuf;
import io.strata.core.ChunkId;
import io.strata.core.rpc.Wire;

/**
 * What a replica holds for one chunk, as resync compares it: the committed version's identity
 * (number, the request that produced it, length, CRC32C, removed), the pending version number (0
 * when none), the chain version of the last update and a hash of the remembered request ids.
 * Two replicas hold the same chunk when their summaries are {@link #sameAs same} (the chain
 * version is informative only). Wire form: 73 bytes.
 */
public record ChunkSummary(long inode, int index, int chunkSize, long chainVersion, long committedVersion, RequestId request,
                           int length, int crc32c, boolean removed, long pendingVersion, long recentHash) {
    public static final int BYTES = 8 + 4 + 4 + 8 + 8 + 16 + 4 + 4 + 1 + 8 + 8;

    public ChunkId id() {
        return ChunkId.of(inode, index);
    }

    /** Whether the two describe the same committed content and request memory, with no pending version on either. */
    public boolean sameAs(ChunkSummary o) {
        return inode == o.inode && index == o.index && chunkSize == o.chunkSize && committedVersion == o.committedVersion
                && request.equals(o.request) && length == o.length && crc32c == o.crc32c && removed == o.removed
                && pendingVersion == 0 && o.pendingVersion == 0 && recentHash == o.recentHash;
    }

    /** A 64-bit FNV-1a hash of the chunk's remembered (request, version) pairs, in order. */
    public static long recentHash(java.util.List<Applied> recent) {
        long h = 0xcbf29ce484222325L;
        for (Applied a : recent) {
            h = mix(mix(mix(h, a.request().client()), a.request().seq()), a.version());
        }
        return h;
    }

    private static long mix(long h, long v) {
        for (int i = 0; i < 8; i++) {
            h ^= (v >>> (8 * i)) & 0xFF;
            h *= 0x100000001b3L;
        }
        return h;
    }

    void encode(ByteBuf out) {
        out.writeLong(inode).writeInt(index).writeInt(chunkSize).writeLong(chainVersion).writeLong(committedVersion);
        out.writeLong(request.client()).writeLong(request.seq());
        out.writeInt(length).writeInt(crc32c);
        Wire.writeBool(out, removed);
        out.writeLong(pendingVersion).writeLong(recentHash);
    }

    static ChunkSummary decode(ByteBuf in) {
        Wire.need(in, BYTES, "chunk summary");
        long inode = in.readLong();
        int index = in.readInt();
        int size = in.readInt();
        long chainVersion = in.readLong();
        long committed = in.readLong();
        RequestId req = new RequestId(in.readLong(), in.readLong());
        int length = in.readInt();
        int crc = in.readInt();
        boolean removed = Wire.readBool(in, "removed");
        return new ChunkSummary(inode, index, size, chainVersion, committed, req, length, crc, removed, in.readLong(), in.readLong());
    }
}
