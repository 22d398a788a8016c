package io.strata.protocol.storage;

import io.netty.buffer.ByteBuf;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Wire;
import io.strata.core.tier.QosClass;
import io.strata.protocol.storage.StorageMessage.ChunkList;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import io.strata.protocol.storage.StorageMessage.ListChunks;
import io.strata.protocol.storage.StorageMessage.SyncChunk;
import io.strata.protocol.storage.StorageMessage.SyncChunkDone;
import io.strata.protocol.storage.StorageMessage.SyncDone;
import io.strata.protocol.storage.StorageMessage.SyncDoneAck;
import io.strata.protocol.storage.StorageMessage.ForwardUpdate;
import io.strata.protocol.storage.StorageMessage.InodeChunks;
import io.strata.protocol.storage.StorageMessage.ListInodeChunks;
import io.strata.protocol.storage.StorageMessage.QueryVersion;
import io.strata.protocol.storage.StorageMessage.ReadChunk;
import io.strata.protocol.storage.StorageMessage.ReadDone;
import io.strata.protocol.storage.StorageMessage.ScrubControl;
import io.strata.protocol.storage.StorageMessage.ScrubReport;
import io.strata.protocol.storage.StorageMessage.StatChunk;
import io.strata.protocol.storage.StorageMessage.UpdateAcked;
import io.strata.protocol.storage.StorageMessage.VersionIs;
import io.strata.protocol.storage.StorageMessage.WriteChunk;
import io.strata.protocol.storage.StorageMessage.WriteDone;
import java.util.ArrayList;
import java.util.List;

/**
 * Wire types of {@link StorageMessage} (tags 100-199). Integers are big-endian; a request id is
 * two u64; an update kind is its u8 wire tag; a boolean one byte. Field ranges (offsets against
 * the chunk size, ids) are checked by the node, which answers with a status, not by the decoder.
 */
public final class StorageMessages {
    public static final MessageType<WriteChunk> WRITE_CHUNK = MessageType.of(100, WriteChunk.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.chainVersion());
                writeRequest(out, m.request());
                Wire.writeEnum(out, m.kind());
                out.writeLong(m.offset()).writeLong(m.length()).writeInt(m.crc32c());
                Wire.writeEnum(out, m.qos());
                out.writeByte(m.minAck());
            },
            in -> new WriteChunk(ChunkRef.decode(in), Wire.readLong(in, "chain version"), readRequest(in),
                    Wire.readEnum(in, UpdateKind.class, "update kind"), Wire.readLong(in, "offset"), Wire.readLong(in, "length"),
                    Wire.readInt(in, "crc32c"), Wire.readEnum(in, QosClass.class, "qos class"),
                    Wire.readU8(in, "min-ack replicas")));
    public static final MessageType<WriteDone> WRITE_DONE = MessageType.of(101, WriteDone.class,
            (m, out) -> out.writeLong(m.version()).writeLong(m.length()).writeInt(m.crc32c()),
            in -> new WriteDone(Wire.readLong(in, "version"), Wire.readLong(in, "length"), Wire.readInt(in, "crc32c")));
    public static final MessageType<ReadChunk> READ_CHUNK = MessageType.of(102, ReadChunk.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.chainVersion()).writeLong(m.offset()).writeInt(m.length());
                Wire.writeEnum(out, m.qos());
            },
            in -> new ReadChunk(ChunkRef.decode(in), Wire.readLong(in, "chain version"), Wire.readLong(in, "offset"),
                    Wire.readInt(in, "length"), Wire.readEnum(in, QosClass.class, "qos class")));
    public static final MessageType<ReadDone> READ_DONE = MessageType.of(103, ReadDone.class,
            (m, out) -> {
                out.writeLong(m.version()).writeLong(m.chunkLength());
                Wire.writeBool(out, m.checked());
                out.writeInt(m.crc32c());
                Wire.writeBool(out, m.removed());
            },
            in -> new ReadDone(Wire.readLong(in, "version"), Wire.readLong(in, "chunk length"), Wire.readBool(in, "checked"),
                    Wire.readInt(in, "crc32c"), Wire.readBool(in, "removed")));
    public static final MessageType<ForwardUpdate> FORWARD_UPDATE = MessageType.of(104, ForwardUpdate.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.chainVersion());
                writeRequest(out, m.request());
                out.writeLong(m.version());
                Wire.writeEnum(out, m.kind());
                out.writeLong(m.offset()).writeLong(m.length()).writeInt(m.crc32c());
                Wire.writeEnum(out, m.qos());
            },
            in -> new ForwardUpdate(ChunkRef.decode(in), Wire.readLong(in, "chain version"), readRequest(in),
                    Wire.readLong(in, "version"), Wire.readEnum(in, UpdateKind.class, "update kind"), Wire.readLong(in, "offset"),
                    Wire.readLong(in, "length"), Wire.readInt(in, "crc32c"), Wire.readEnum(in, QosClass.class, "qos class")));
    public static final MessageType<UpdateAcked> UPDATE_ACKED = MessageType.of(105, UpdateAcked.class,
            (m, out) -> out.writeLong(m.version()).writeLong(m.length()).writeInt(m.crc32c()).writeByte(m.replicas()),
            in -> new UpdateAcked(Wire.readLong(in, "version"), Wire.readLong(in, "length"), Wire.readInt(in, "crc32c"),
                    Wire.readU8(in, "replicas")));
    public static final MessageType<QueryVersion> QUERY_VERSION = MessageType.of(106, QueryVersion.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.chainVersion());
            },
            in -> new QueryVersion(ChunkRef.decode(in), Wire.readLong(in, "chain version")));
    public static final MessageType<VersionIs> VERSION_IS = MessageType.of(107, VersionIs.class,
            (m, out) -> out.writeLong(m.committedVersion()),
            in -> new VersionIs(Wire.readLong(in, "committed version")));
    public static final MessageType<StatChunk> STAT_CHUNK = MessageType.of(108, StatChunk.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.chainVersion());
            },
            in -> new StatChunk(ChunkRef.decode(in), Wire.readLong(in, "chain version")));
    public static final MessageType<ChunkStat> CHUNK_STAT = MessageType.of(109, ChunkStat.class,
            (m, out) -> {
                out.writeLong(m.committedVersion()).writeLong(m.pendingVersion()).writeLong(m.length()).writeInt(m.crc32c());
                Wire.writeBool(out, m.removed());
            },
            in -> new ChunkStat(Wire.readLong(in, "committed version"), Wire.readLong(in, "pending version"),
                    Wire.readLong(in, "length"), Wire.readInt(in, "crc32c"), Wire.readBool(in, "removed")));

    /** Most chunks in one {@link ChunkList} page. */
    public static final int MAX_LIST = 8192;

    public static final MessageType<ListChunks> LIST_CHUNKS = MessageType.of(110, ListChunks.class,
            (m, out) -> {
                out.writeInt(m.chain()).writeLong(m.chainVersion());
                Wire.writeBool(out, m.first());
                out.writeLong(m.afterInode()).writeInt(m.afterIndex()).writeInt(m.max());
            },
            in -> new ListChunks(Wire.readInt(in, "chain"), Wire.readLong(in, "chain version"), Wire.readBool(in, "first"),
                    Wire.readLong(in, "after inode"), Wire.readInt(in, "after index"), Wire.readInt(in, "max", 1, MAX_LIST)));
    public static final MessageType<ChunkList> CHUNK_LIST = MessageType.of(111, ChunkList.class,
            (m, out) -> {
                out.writeInt(m.chunks().size());
                for (ChunkSummary c : m.chunks()) {
                    c.encode(out);
                }
                Wire.writeBool(out, m.more());
            },
            in -> {
                int n = Wire.readCount(in, "chunks", MAX_LIST, ChunkSummary.BYTES);
                List<ChunkSummary> cs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    cs.add(ChunkSummary.decode(in));
                }
                return new ChunkList(cs, Wire.readBool(in, "more"));
            });
    public static final MessageType<SyncChunk> SYNC_CHUNK = MessageType.of(112, SyncChunk.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.chainVersion());
                Wire.writeBool(out, m.absent());
                out.writeLong(m.version());
                writeRequest(out, m.request());
                out.writeLong(m.length()).writeInt(m.crc32c());
                Wire.writeBool(out, m.removed());
                out.writeByte(m.recent().size());
                for (Applied a : m.recent()) {
                    writeRequest(out, a.request());
                    out.writeLong(a.version());
                }
            },
            in -> {
                ChunkRef chunk = ChunkRef.decode(in);
                long cv = Wire.readLong(in, "chain version");
                boolean absent = Wire.readBool(in, "absent");
                long version = Wire.readLong(in, "version");
                RequestId req = readRequest(in);
                long length = Wire.readLong(in, "length");
                int crc = Wire.readInt(in, "crc32c");
                boolean removed = Wire.readBool(in, "removed");
                int n = Wire.readU8(in, "recent count");
                if (n > Applied.REMEMBERED) {
                    throw new Wire.Malformed("recent count " + n + " out of range [0, " + Applied.REMEMBERED + "]");
                }
                List<Applied> recent = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    recent.add(new Applied(readRequest(in), Wire.readLong(in, "recent version")));
                }
                return new SyncChunk(chunk, cv, absent, version, req, length, crc, removed, recent);
            });
    public static final MessageType<SyncChunkDone> SYNC_CHUNK_DONE = MessageType.of(113, SyncChunkDone.class,
            (m, out) -> Wire.writeBool(out, m.applied()),
            in -> new SyncChunkDone(Wire.readBool(in, "applied")));
    public static final MessageType<SyncDone> SYNC_DONE = MessageType.of(114, SyncDone.class,
            (m, out) -> out.writeInt(m.chain()).writeLong(m.chainVersion()).writeLong(m.copied()).writeLong(m.removed())
                    .writeLong(m.bytes()),
            in -> new SyncDone(Wire.readInt(in, "chain"), Wire.readLong(in, "chain version"), Wire.readLong(in, "copied"),
                    Wire.readLong(in, "removed"), Wire.readLong(in, "bytes")));
    public static final MessageType<SyncDoneAck> SYNC_DONE_ACK = MessageType.of(115, SyncDoneAck.class,
            (m, out) -> out.writeLong(m.chainVersion()),
            in -> new SyncDoneAck(Wire.readLong(in, "chain version")));

    /** Most indexes in one {@link InodeChunks} page. */
    public static final int MAX_INODE_CHUNKS = 16384;

    public static final MessageType<ListInodeChunks> LIST_INODE_CHUNKS = MessageType.of(116, ListInodeChunks.class,
            (m, out) -> out.writeInt(m.chain()).writeLong(m.chainVersion()).writeLong(m.inode()).writeInt(m.fromIndex())
                    .writeInt(m.max()),
            in -> new ListInodeChunks(Wire.readInt(in, "chain"), Wire.readLong(in, "chain version"), Wire.readLong(in, "inode"),
                    Wire.readInt(in, "from index", 0, Integer.MAX_VALUE), Wire.readInt(in, "max", 1, MAX_INODE_CHUNKS)));
    public static final MessageType<InodeChunks> INODE_CHUNKS = MessageType.of(117, InodeChunks.class,
            (m, out) -> {
                out.writeInt(m.indexes().size());
                for (int i : m.indexes()) {
                    out.writeInt(i);
                }
                Wire.writeBool(out, m.more());
            },
            in -> {
                int n = Wire.readCount(in, "indexes", MAX_INODE_CHUNKS, 4);
                List<Integer> idx = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    idx.add(Wire.readInt(in, "index", 0, Integer.MAX_VALUE));
                }
                return new InodeChunks(idx, Wire.readBool(in, "more"));
            });

    /** Most targets in one {@link ScrubReport}. */
    public static final int MAX_TARGETS = 4096;

    public static final MessageType<ScrubControl> SCRUB_CONTROL = MessageType.of(118, ScrubControl.class,
            (m, out) -> Wire.writeBool(out, m.start()),
            in -> new ScrubControl(Wire.readBool(in, "start")));
    public static final MessageType<ScrubReport> SCRUB_REPORT = MessageType.of(119, ScrubReport.class,
            (m, out) -> {
                out.writeInt(m.targets().size());
                for (TargetScrub t : m.targets()) {
                    t.encode(out);
                }
            },
            in -> {
                int n = Wire.readCount(in, "targets", MAX_TARGETS, TargetScrub.BYTES);
                List<TargetScrub> ts = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    ts.add(TargetScrub.decode(in));
                }
                return new ScrubReport(ts);
            });

    public static final List<MessageType<?>> TYPES = List.of(WRITE_CHUNK, WRITE_DONE, READ_CHUNK, READ_DONE, FORWARD_UPDATE,
            UPDATE_ACKED, QUERY_VERSION, VERSION_IS, STAT_CHUNK, CHUNK_STAT, LIST_CHUNKS, CHUNK_LIST, SYNC_CHUNK, SYNC_CHUNK_DONE,
            SYNC_DONE, SYNC_DONE_ACK, LIST_INODE_CHUNKS, INODE_CHUNKS, SCRUB_CONTROL, SCRUB_REPORT);

    /** What a storage node speaks: the core messages (ping) and the storage messages. */
    public static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, TYPES);

    private StorageMessages() {
    }

    private static void writeRequest(ByteBuf out, RequestId r) {
        out.writeLong(r.client()).writeLong(r.seq());
    }

    private static RequestId readRequest(ByteBuf in) {
        return new RequestId(Wire.readLong(in, "request client"), Wire.readLong(in, "request seq"));
    }
}
