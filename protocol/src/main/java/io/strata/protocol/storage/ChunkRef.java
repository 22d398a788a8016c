package io.strata.protocol.storage;

import io.netty.buffer.ByteBuf;
import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Wire;
import io.strata.core.tier.ChunkAddress;

/**
 * A chunk address as it travels: the raw fields, checked by the node that receives them (so a
 * bad id is a clear status, {@code CHUNK_ID_OUT_OF_RANGE}, rather than a dropped connection).
 * Wire form: u64 inode, u32 index, u32 chain, u32 chunk size (20 bytes).
 */
public record ChunkRef(long inode, int index, int chain, int chunkSize) {
    public static final int BYTES = 20;

    public static ChunkRef of(ChunkAddress a) {
        return new ChunkRef(a.id().inode().value(), a.id().index(), a.chain().value(), a.chunkSize());
    }

    /** The checked address; CHUNK_ID_OUT_OF_RANGE, NO_SUCH_CHAIN or INVALID_ARGUMENT when a field is out of range. */
    public ChunkAddress address() {
        if (inode == 0 || index < 0) {
            throw new StrataException(Status.CHUNK_ID_OUT_OF_RANGE, "chunk id out of range: inode " + Long.toUnsignedString(inode)
                    + " index " + index + " (inode must be non-zero, index in [0, " + ChunkId.MAX_INDEX + "])");
        }
        if (chain <= 0) {
            throw new StrataException(Status.NO_SUCH_CHAIN, "chain id must be positive, got " + chain);
        }
        if (chunkSize < ChunkAddress.MIN_CHUNK_SIZE || chunkSize > ChunkAddress.MAX_CHUNK_SIZE || Integer.bitCount(chunkSize) != 1) {
            throw new StrataException(Status.INVALID_ARGUMENT, "chunk size must be a power of two in [64KiB, 64MiB], got " + chunkSize);
        }
        return new ChunkAddress(new ChunkId(InodeId.of(inode), index), ChainId.of(chain), chunkSize);
    }

    public void encode(ByteBuf out) {
        out.writeLong(inode).writeInt(index).writeInt(chain).writeInt(chunkSize);
    }

    public static ChunkRef decode(ByteBuf in) {
        Wire.need(in, BYTES, "chunk ref");
        return new ChunkRef(in.readLong(), in.readInt(), in.readInt(), in.readInt());
    }

    @Override
    public String toString() {
        return Long.toUnsignedString(inode) + ":" + index + "@chain-" + chain;
    }
}
