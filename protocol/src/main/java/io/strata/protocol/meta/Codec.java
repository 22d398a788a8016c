package io.strata.protocol.meta;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.strata.core.ChainId;
import io.strata.core.InodeId;
import io.strata.core.rpc.Wire;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Binary forms of namespace records, used both for stored values and inside meta service
 * messages. Every record starts with a format byte; decoders check every bound and throw
 * {@link Wire.Malformed}. Buffers passed in are borrowed.
 */
public final class Codec {
    /** Inode records of files, directories and symlinks. */
    public static final int INODE_FORMAT = 1;
    /**
     * Inode records of FIFOs, sockets and devices: format 1 followed by the device number (u64).
     * The other types keep format 1, so their records read the same as before special files.
     */
    public static final int INODE_FORMAT_SPECIAL = 2;
    public static final int MAX_POLICY_ENTRIES = 64;

    private Codec() {
    }

    public static void writeInode(ByteBuf out, InodeAttrs a) {
        boolean special = a.type().isSpecial();
        out.writeByte(special ? INODE_FORMAT_SPECIAL : INODE_FORMAT);
        out.writeLong(a.id().value());
        Wire.writeEnum(out, a.type());
        out.writeShort(a.mode());
        out.writeInt(a.uid());
        out.writeInt(a.gid());
        out.writeLong(a.nlink());
        out.writeLong(a.length());
        out.writeLong(a.dataVersion());
        out.writeLong(a.atimeNanos());
        out.writeLong(a.mtimeNanos());
        out.writeLong(a.ctimeNanos());
        out.writeLong(a.chunkHighWater());
        out.writeLong(a.parent() == null ? 0 : a.parent().value());
        Wire.writeString(out, a.name());
        Wire.writeString(out, a.symlinkTarget());
        Wire.writeBool(out, a.layout() != null);
        if (a.layout() != null) {
            writeLayout(out, a.layout());
        }
        Map<String, String> sorted = new TreeMap<>(a.policy());
        out.writeInt(sorted.size());
        sorted.forEach((k, v) -> {
            Wire.writeString(out, k);
            Wire.writeString(out, v);
        });
        if (special) {
            out.writeLong(a.rdev());
        }
    }

    public static InodeAttrs readInode(ByteBuf in) {
        int format = Wire.readU8(in, "inode format");
        if (format != INODE_FORMAT && format != INODE_FORMAT_SPECIAL) {
            throw new Wire.Malformed("unknown inode format " + format);
        }
        long id = Wire.readLong(in, "inode id");
        if (id == 0) {
            throw new Wire.Malformed("inode id 0");
        }
        InodeType type = Wire.readEnum(in, InodeType.class, "inode type");
        if (type.isSpecial() != (format == INODE_FORMAT_SPECIAL)) {
            throw new Wire.Malformed("inode format " + format + " does not hold a " + type);
        }
        int mode = Wire.readU16(in, "mode");
        if ((mode & ~07777) != 0) {
            throw new Wire.Malformed("mode " + Integer.toOctalString(mode) + " out of range");
        }
        int uid = Wire.readInt(in, "uid");
        int gid = Wire.readInt(in, "gid");
        long nlink = Wire.readLong(in, "nlink");
        long length = Wire.readLong(in, "length");
        long dataVersion = Wire.readLong(in, "data version");
        long atime = Wire.readLong(in, "atime");
        long mtime = Wire.readLong(in, "mtime");
        long ctime = Wire.readLong(in, "ctime");
        long hw = Wire.readLong(in, "chunk high water");
        long parent = Wire.readLong(in, "parent");
        String name = Wire.readString(in, Names.MAX_NAME_BYTES, "name");
        String target = Wire.readString(in, Names.MAX_SYMLINK_BYTES, "symlink target");
        Layout layout = Wire.readBool(in, "has layout") ? readLayout(in) : null;
        int n = Wire.readCount(in, "policy", MAX_POLICY_ENTRIES, 8);
        Map<String, String> policy = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            policy.put(Wire.readString(in, 256, "policy key"), Wire.readString(in, 256, "policy value"));
        }
        long rdev = format == INODE_FORMAT_SPECIAL ? Wire.readLong(in, "device number") : 0;
        if (nlink < 0 || length < 0) {
            throw new Wire.Malformed("negative nlink or length");
        }
        try {
            return new InodeAttrs(InodeId.of(id), type, mode, uid, gid, nlink, length, dataVersion, atime, mtime, ctime,
                    parent == 0 ? null : InodeId.of(parent), name, target, layout, policy, hw, rdev);
        } catch (IllegalArgumentException e) {
            throw new Wire.Malformed("inode: " + e.getMessage());
        }
    }

    public static void writeLayout(ByteBuf out, Layout l) {
        out.writeInt(l.chunkSize());
        out.writeInt(l.stripeWidth());
        out.writeInt(l.tableId());
        out.writeInt(l.tableVersion());
        out.writeByte(l.replicas());
        out.writeByte(l.chooserVersion());
        out.writeInt(l.baseIndex());
        out.writeLong(l.seed());
        for (ChainId c : l.chains()) {
            out.writeInt(c.value());
        }
    }

    public static Layout readLayout(ByteBuf in) {
        int chunk = Wire.readInt(in, "chunk size");
        int stripe = Wire.readInt(in, "stripe width", 1, io.strata.core.tier.FileChunks.MAX_STRIPE_WIDTH);
        int table = Wire.readInt(in, "table id");
        int tableVersion = Wire.readInt(in, "table version");
        int replicas = Wire.readU8(in, "replicas");
        int chooser = Wire.readU8(in, "chooser version");
        int base = Wire.readInt(in, "base index");
        long seed = Wire.readLong(in, "seed");
        Wire.need(in, stripe * 4, "chains");
        List<ChainId> chains = new ArrayList<>(stripe);
        for (int i = 0; i < stripe; i++) {
            int c = in.readInt();
            if (c <= 0) {
                throw new Wire.Malformed("chain id " + c);
            }
            chains.add(ChainId.of(c));
        }
        try {
            return new Layout(chunk, stripe, table, tableVersion, replicas, chooser, base, seed, chains);
        } catch (IllegalArgumentException e) {
            throw new Wire.Malformed("layout: " + e.getMessage());
        }
    }

    public static byte[] inodeBytes(InodeAttrs a) {
        ByteBuf b = Unpooled.buffer(128);
        try {
            writeInode(b, a);
            return ByteBufUtil.getBytes(b);
        } finally {
            b.release();
        }
    }

    public static InodeAttrs inodeFrom(byte[] bytes) {
        ByteBuf b = Unpooled.wrappedBuffer(bytes);
        InodeAttrs a = readInode(b);
        if (b.isReadable()) {
            throw new Wire.Malformed("bytes left after an inode record");
        }
        return a;
    }
}
