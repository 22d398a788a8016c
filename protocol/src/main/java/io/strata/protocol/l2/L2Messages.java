package io.strata.protocol.l2;

import io.netty.buffer.ByteBuf;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Wire;
import io.strata.core.tier.QosClass;
import io.strata.protocol.l2.L2Message.Ack;
import io.strata.protocol.l2.L2Message.Chunks;
import io.strata.protocol.l2.L2Message.Drained;
import io.strata.protocol.l2.L2Message.Fetch;
import io.strata.protocol.l2.L2Message.Fetched;
import io.strata.protocol.l2.L2Message.Forward;
import io.strata.protocol.l2.L2Message.Forwarded;
import io.strata.protocol.l2.L2Message.GetStatus;
import io.strata.protocol.l2.L2Message.ListChunks;
import io.strata.protocol.l2.L2Message.Read;
import io.strata.protocol.l2.L2Message.ReadDone;
import io.strata.protocol.l2.L2Message.Status;
import io.strata.protocol.l2.L2Message.Sync;
import io.strata.protocol.l2.L2Message.Synced;
import io.strata.protocol.l2.L2Message.Unpin;
import io.strata.protocol.l2.L2Message.Unpinned;
import io.strata.protocol.l2.L2Message.Write;
import io.strata.protocol.l2.L2Message.Warm;
import io.strata.protocol.l2.L2Message.Warmed;
import io.strata.protocol.l2.L2Message.Written;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;
import java.util.ArrayList;
import java.util.List;

/**
 * Wire types of {@link L2Message} (tags 400-499). Integers are big-endian; a request id is two
 * u64; holders are a u8 count of u32 node ids (at most {@link #MAX_HOLDERS}); a QoS class is its
 * one-byte tag. Field ranges are
 * checked by the agent, which answers with a status.
 */
public final class L2Messages {
    /** Most copies of one staged chunk. */
    public static final int MAX_HOLDERS = 8;
    /** Most indexes in one {@link Chunks} page. */
    public static final int MAX_LIST = 16384;

    public static final MessageType<Write> WRITE = MessageType.of(400, Write.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.epoch());
                writeRequest(out, m.request());
                Wire.writeEnum(out, m.kind());
                out.writeLong(m.offset()).writeLong(m.length()).writeInt(m.crc32c());
                Wire.writeBool(out, m.mustHaveCopy());
                writeHolders(out, m.holders());
                Wire.writeEnum(out, m.qos());
            },
            in -> new Write(ChunkRef.decode(in), Wire.readLong(in, "epoch"), readRequest(in), Wire.readEnum(in, UpdateKind.class, "update kind"),
                    Wire.readLong(in, "offset"), Wire.readLong(in, "length"), Wire.readInt(in, "crc32c"), Wire.readBool(in, "must have copy"),
                    readHolders(in), readQos(in)));
    public static final MessageType<Written> WRITTEN = MessageType.of(401, Written.class,
            (m, out) -> out.writeLong(m.seq()).writeLong(m.chunkLength()),
            in -> new Written(Wire.readLong(in, "seq"), Wire.readLong(in, "chunk length")));
    public static final MessageType<Forward> FORWARD = MessageType.of(402, Forward.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.epoch());
                writeRequest(out, m.request());
                Wire.writeEnum(out, m.kind());
                out.writeLong(m.seq());
                Wire.writeBool(out, m.whole());
                out.writeLong(m.offset()).writeLong(m.length()).writeInt(m.crc32c());
                writeHolders(out, m.holders());
                Wire.writeEnum(out, m.qos());
            },
            in -> new Forward(ChunkRef.decode(in), Wire.readLong(in, "epoch"), readRequest(in), Wire.readEnum(in, UpdateKind.class, "update kind"),
                    Wire.readLong(in, "seq"), Wire.readBool(in, "whole"), Wire.readLong(in, "offset"), Wire.readLong(in, "length"),
                    Wire.readInt(in, "crc32c"), readHolders(in), readQos(in)));
    public static final MessageType<Forwarded> FORWARDED = MessageType.of(403, Forwarded.class,
            (m, out) -> out.writeLong(m.seq()),
            in -> new Forwarded(Wire.readLong(in, "seq")));
    public static final MessageType<Read> READ = MessageType.of(404, Read.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.epoch()).writeLong(m.offset()).writeInt(m.length());
                Wire.writeEnum(out, m.qos());
            },
            in -> new Read(ChunkRef.decode(in), Wire.readLong(in, "epoch"), Wire.readLong(in, "offset"), Wire.readInt(in, "length"),
                    readQos(in)));
    public static final MessageType<ReadDone> READ_DONE = MessageType.of(405, ReadDone.class,
            (m, out) -> {
                Wire.writeBool(out, m.present());
                out.writeLong(m.seq()).writeLong(m.chunkLength()).writeInt(m.crc32c()).writeLong(m.drainedSeq());
            },
            in -> new ReadDone(Wire.readBool(in, "present"), Wire.readLong(in, "seq"), Wire.readLong(in, "chunk length"),
                    Wire.readInt(in, "crc32c"), Wire.readLong(in, "drained seq")));
    public static final MessageType<Sync> SYNC = MessageType.of(406, Sync.class,
            (m, out) -> out.writeLong(m.inode()),
            in -> new Sync(Wire.readLong(in, "inode")));
    public static final MessageType<Synced> SYNCED = MessageType.of(407, Synced.class,
            (m, out) -> out.writeLong(m.maxSeq()),
            in -> new Synced(Wire.readLong(in, "max seq")));
    public static final MessageType<ListChunks> LIST_CHUNKS = MessageType.of(408, ListChunks.class,
            (m, out) -> out.writeLong(m.inode()).writeInt(m.fromIndex()).writeInt(m.max()),
            in -> new ListChunks(Wire.readLong(in, "inode"), Wire.readInt(in, "from index", 0, Integer.MAX_VALUE),
                    Wire.readInt(in, "max", 1, MAX_LIST)));
    public static final MessageType<Chunks> CHUNKS = MessageType.of(409, Chunks.class,
            (m, out) -> {
                out.writeInt(m.indexes().size());
                m.indexes().forEach(out::writeInt);
                Wire.writeBool(out, m.more());
            },
            in -> {
                int n = Wire.readCount(in, "indexes", MAX_LIST, 4);
                List<Integer> idx = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    idx.add(Wire.readInt(in, "index", 0, Integer.MAX_VALUE));
                }
                return new Chunks(idx, Wire.readBool(in, "more"));
            });
    public static final MessageType<Drained> DRAINED = MessageType.of(410, Drained.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.seq());
            },
            in -> new Drained(ChunkRef.decode(in), Wire.readLong(in, "seq")));
    public static final MessageType<Ack> ACK = MessageType.of(411, Ack.class, (m, out) -> { }, in -> new Ack());
    public static final MessageType<GetStatus> GET_STATUS = MessageType.of(412, GetStatus.class, (m, out) -> { }, in -> new GetStatus());
    public static final MessageType<Status> STATUS = MessageType.of(413, Status.class,
            (m, out) -> {
                out.writeLong(m.capacityBytes()).writeLong(m.usedBytes()).writeLong(m.stagedBytes()).writeLong(m.stagedChunks());
                out.writeLong(m.cachedBytes()).writeLong(m.cachedChunks()).writeLong(m.drainedBytes()).writeLong(m.drainBytesPerSecond());
                out.writeDouble(m.drainLagSeconds()).writeLong(m.refusedFull()).writeLong(m.evictions());
                Wire.writeBool(out, m.fenced());
                Wire.writeBool(out, m.diskFailed());
                out.writeLong(m.pinnedChunks()).writeLong(m.pinnedBytes()).writeLong(m.prefetchFetches()).writeLong(m.prefetchBytes());
            },
            in -> new Status(Wire.readLong(in, "capacity"), Wire.readLong(in, "used"), Wire.readLong(in, "staged bytes"),
                    Wire.readLong(in, "staged chunks"), Wire.readLong(in, "cached bytes"), Wire.readLong(in, "cached chunks"),
                    Wire.readLong(in, "drained bytes"), Wire.readLong(in, "drain rate"), readDouble(in, "drain lag"),
                    Wire.readLong(in, "refused"), Wire.readLong(in, "evictions"), Wire.readBool(in, "fenced"),
                    Wire.readBool(in, "disk failed"), Wire.readLong(in, "pinned chunks"), Wire.readLong(in, "pinned bytes"),
                    Wire.readLong(in, "prefetch fetches"), Wire.readLong(in, "prefetch bytes")));

    public static final MessageType<Warm> WARM = MessageType.of(414, Warm.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.epoch());
                out.writeInt(m.holders().size());
                m.holders().forEach(out::writeInt);
            },
            in -> {
                ChunkRef c = ChunkRef.decode(in);
                long epoch = Wire.readLong(in, "epoch");
                int n = Wire.readCount(in, "holders", 64, 4);
                List<Integer> hs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    hs.add(in.readInt());
                }
                return new Warm(c, epoch, hs);
            });
    public static final MessageType<Warmed> WARMED = MessageType.of(415, Warmed.class,
            (m, out) -> {
                Wire.writeBool(out, m.fetched());
                out.writeLong(m.bytes());
            },
            in -> new Warmed(Wire.readBool(in, "fetched"), Wire.readLong(in, "bytes")));

    public static final MessageType<Fetch> FETCH = MessageType.of(416, Fetch.class,
            (m, out) -> {
                m.chunk().encode(out);
                out.writeLong(m.epoch()).writeLong(m.version());
                out.writeByte(m.holders().size());
                m.holders().forEach(out::writeInt);
                out.writeLong(m.owner());
                Wire.writeEnum(out, m.qos());
            },
            in -> {
                ChunkRef c = ChunkRef.decode(in);
                long epoch = Wire.readLong(in, "epoch");
                long version = Wire.readLong(in, "version");
                int n = Wire.readU8(in, "holder count");
                if (n > MAX_HOLDERS) {
                    throw new Wire.Malformed("holder count " + n + " out of range [0, " + MAX_HOLDERS + "]");
                }
                List<Integer> hs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    hs.add(Wire.readInt(in, "holder", 1, Integer.MAX_VALUE));
                }
                return new Fetch(c, epoch, version, hs, Wire.readLong(in, "owner"), readQos(in));
            });
    public static final MessageType<Fetched> FETCHED = MessageType.of(417, Fetched.class,
            (m, out) -> {
                Wire.writeBool(out, m.fromL3());
                out.writeLong(m.bytes());
            },
            in -> new Fetched(Wire.readBool(in, "from L3"), Wire.readLong(in, "bytes")));
    public static final MessageType<Unpin> UNPIN = MessageType.of(418, Unpin.class,
            (m, out) -> out.writeLong(m.owner()),
            in -> new Unpin(Wire.readLong(in, "owner")));
    public static final MessageType<Unpinned> UNPINNED = MessageType.of(419, Unpinned.class,
            (m, out) -> out.writeLong(m.chunks()),
            in -> new Unpinned(Wire.readLong(in, "chunks")));

    public static final List<MessageType<?>> TYPES = List.of(WRITE, WRITTEN, FORWARD, FORWARDED, READ, READ_DONE, SYNC, SYNCED,
            LIST_CHUNKS, CHUNKS, DRAINED, ACK, GET_STATUS, STATUS, WARM, WARMED, FETCH, FETCHED, UNPIN, UNPINNED);

    /** What an L2 agent speaks: the core messages (ping) and the L2 messages. */
    public static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, TYPES);

    private L2Messages() {
    }

    private static void writeRequest(ByteBuf out, RequestId r) {
        out.writeLong(r.client()).writeLong(r.seq());
    }

    private static RequestId readRequest(ByteBuf in) {
        return new RequestId(Wire.readLong(in, "request client"), Wire.readLong(in, "request seq"));
    }

    private static void writeHolders(ByteBuf out, List<Integer> holders) {
        out.writeByte(holders.size());
        holders.forEach(out::writeInt);
    }

    private static List<Integer> readHolders(ByteBuf in) {
        int n = Wire.readU8(in, "holder count");
        if (n < 1 || n > MAX_HOLDERS) {
            throw new Wire.Malformed("holder count " + n + " out of range [1, " + MAX_HOLDERS + "]");
        }
        List<Integer> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(Wire.readInt(in, "holder", 1, Integer.MAX_VALUE));
        }
        return out;
    }

    private static QosClass readQos(ByteBuf in) {
        return Wire.readEnum(in, QosClass.class, "qos class");
    }

    private static double readDouble(ByteBuf in, String what) {
        return Double.longBitsToDouble(Wire.readLong(in, what));
    }
}
