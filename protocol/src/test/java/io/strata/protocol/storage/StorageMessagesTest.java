package io.strata.protocol.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Wire;
import io.strata.core.tier.QosClass;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import io.strata.protocol.storage.StorageMessage.ForwardUpdate;
import io.strata.protocol.storage.StorageMessage.QueryVersion;
import io.strata.protocol.storage.StorageMessage.ReadChunk;
import io.strata.protocol.storage.StorageMessage.ReadDone;
import io.strata.protocol.storage.StorageMessage.StatChunk;
import io.strata.protocol.storage.StorageMessage.UpdateAcked;
import io.strata.protocol.storage.StorageMessage.VersionIs;
import io.strata.protocol.storage.StorageMessage.WriteChunk;
import io.strata.protocol.storage.StorageMessage.WriteDone;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Every storage message round-trips, and every decoder rejects malformed bodies with BAD_FRAME. */
class StorageMessagesTest {
    static final Protocol PROTOCOL = Protocol.of(StorageMessages.TYPES);
    static final ChunkRef REF = new ChunkRef(-3L, 17, 4, 1 << 22);

    static List<Message> samples() {
        return List.of(
                new WriteChunk(REF, 7, new RequestId(-1, 99), UpdateKind.WRITE, 4096, 1 << 20, 0xCAFEBABE, QosClass.CHECKPOINT, 3),
                new WriteChunk(REF, 1, new RequestId(5, 6), UpdateKind.REMOVE, 0, 0, 0, QosClass.BACKGROUND),
                new WriteDone(3, 1 << 20, -17),
                new ReadChunk(REF, 9, 123, 4567, QosClass.TRAINING_READ),
                new ReadDone(8, 65536, true, 0x12345678),
                new ReadDone(0, 0, false, 0),
                new ReadDone(5, 0, true, 0, true),
                new ForwardUpdate(REF, 2, new RequestId(1, 2), 44, UpdateKind.REPLACE, 0, 77, 5, QosClass.PREFETCH),
                new ForwardUpdate(REF, 2, new RequestId(1, 3), 45, UpdateKind.TRUNCATE, 0, 1000, 0, QosClass.INTERACTIVE),
                new UpdateAcked(44, 77, 5, 2),
                new QueryVersion(REF, 12),
                new VersionIs(Long.MAX_VALUE),
                new StatChunk(REF, 1),
                new ChunkStat(3, 4, 5, 6, true),
                new StorageMessage.ListChunks(4, 9, true, 0, 0, 4096),
                new StorageMessage.ListChunks(4, 9, false, -7L, 12, 1),
                new StorageMessage.ChunkList(List.of(
                        new ChunkSummary(5, 1, 1 << 20, 3, 7, new RequestId(8, 9), 4096, 0xABCD, false, 0, -42L),
                        new ChunkSummary(-5L, 0, 1 << 16, 1, 2, RequestId.NONE, 0, 0, true, 3, 0)), true),
                new StorageMessage.ChunkList(List.of(), false),
                new StorageMessage.SyncChunk(REF, 6, false, 12, new RequestId(3, 4), 1 << 20, 0x1234, false,
                        List.of(new Applied(new RequestId(3, 4), 12),
                                new Applied(new RequestId(3, 2), 11))),
                new StorageMessage.SyncChunk(REF, 6, true, 0, RequestId.NONE, 0, 0, false, List.of()),
                new StorageMessage.SyncChunkDone(true),
                new StorageMessage.SyncDone(4, 10, 100, 2, 1L << 30),
                new StorageMessage.SyncDoneAck(10),
                new StorageMessage.ListInodeChunks(4, 9, -12L, 0, 16384),
                new StorageMessage.ListInodeChunks(4, 9, 12L, Integer.MAX_VALUE, 1),
                new StorageMessage.InodeChunks(List.of(0, 7, Integer.MAX_VALUE), true),
                new StorageMessage.InodeChunks(List.of(), false),
                new StorageMessage.ScrubControl(true),
                new StorageMessage.ScrubReport(List.of(new TargetScrub(101, true, 10, 4, 1 << 22, 2, 3, 2, 1, 1_700_000_000_000L, 0),
                        new TargetScrub(-1, false, 0, 0, 0, 0, 0, 0, 0, 0, Long.MAX_VALUE))),
                new StorageMessage.ScrubReport(List.of()));
    }

    static ByteBuf encode(Message m) {
        ByteBuf b = Unpooled.buffer();
        PROTOCOL.typeOf(m).encode(m, b);
        return b;
    }

    @Test
    void everyMessageRoundTripsAndTagsAreInTheStorageRange() {
        Set<Class<?>> covered = new HashSet<>();
        for (Message m : samples()) {
            MessageType<?> t = PROTOCOL.typeOf(m);
            assertThat(t.tag()).isBetween(100, 199);
            ByteBuf b = encode(m);
            try {
                assertThat(PROTOCOL.decode(t, b)).isEqualTo(m);
            } finally {
                b.release();
            }
            covered.add(m.getClass());
        }
        Set<Class<?>> all = new HashSet<>();
        for (MessageType<?> t : StorageMessages.TYPES) {
            all.add(t.type());
        }
        assertThat(covered).as("a sample of every message type").isEqualTo(all);
    }

    @Test
    void truncatedOrOverlongBodiesAreMalformed() {
        for (Message m : samples()) {
            MessageType<?> t = PROTOCOL.typeOf(m);
            ByteBuf full = encode(m);
            try {
                for (int cut = 0; cut < full.readableBytes(); cut++) {
                    ByteBuf part = full.retainedSlice(0, cut);
                    try {
                        assertThatThrownBy(() -> PROTOCOL.decode(t, part)).as("%s cut at %d", t, cut)
                                .isInstanceOf(Wire.Malformed.class);
                    } finally {
                        part.release();
                    }
                }
                ByteBuf longer = Unpooled.buffer().writeBytes(full, full.readerIndex(), full.readableBytes()).writeByte(0);
                try {
                    assertThatThrownBy(() -> PROTOCOL.decode(t, longer)).isInstanceOf(Wire.Malformed.class)
                            .extracting(e -> ((StrataException) e).status()).isEqualTo(Status.BAD_FRAME);
                } finally {
                    longer.release();
                }
            } finally {
                full.release();
            }
        }
    }

    @Test
    void badEnumTagsAndBooleansAreMalformed() {
        ByteBuf w = encode(new WriteChunk(REF, 1, new RequestId(1, 1), UpdateKind.WRITE, 0, 1, 0, QosClass.INTERACTIVE));
        w.setByte(ChunkRef.BYTES + 8 + 16, 99); // the update kind
        assertThatThrownBy(() -> PROTOCOL.decode(StorageMessages.WRITE_CHUNK, w)).isInstanceOf(Wire.Malformed.class)
                .hasMessageContaining("update kind");
        w.release();
        ByteBuf r = encode(new ReadDone(1, 2, true, 3));
        r.setByte(16, 2); // the checked flag
        assertThatThrownBy(() -> PROTOCOL.decode(StorageMessages.READ_DONE, r)).isInstanceOf(Wire.Malformed.class);
        r.release();
        ByteBuf removed = encode(new ReadDone(1, 0, true, 0, true));
        removed.setByte(8 + 8 + 1 + 4, 2); // the removed flag
        assertThatThrownBy(() -> PROTOCOL.decode(StorageMessages.READ_DONE, removed)).isInstanceOf(Wire.Malformed.class)
                .hasMessageContaining("removed");
        removed.release();
    }

    @Test
    void randomBytesNeverCrashADecoder() {
        Random rnd = new Random(3);
        for (MessageType<?> t : StorageMessages.TYPES) {
            for (int i = 0; i < 2000; i++) {
                byte[] b = new byte[rnd.nextInt(120)];
                rnd.nextBytes(b);
                ByteBuf in = Unpooled.wrappedBuffer(b);
                try {
                    PROTOCOL.decode(t, in);
                } catch (Wire.Malformed expected) {
                    // fine: rejected with a reason
                } finally {
                    in.release();
                }
            }
        }
    }

    @Test
    void chunkRefChecksItsFields() {
        assertThat(REF.address().chunkSize()).isEqualTo(1 << 22);
        assertThatThrownBy(() -> new ChunkRef(0, 1, 1, 1 << 20).address()).extracting(e -> ((StrataException) e).status())
                .isEqualTo(Status.CHUNK_ID_OUT_OF_RANGE);
        assertThatThrownBy(() -> new ChunkRef(5, -1, 1, 1 << 20).address()).extracting(e -> ((StrataException) e).status())
                .isEqualTo(Status.CHUNK_ID_OUT_OF_RANGE);
        assertThatThrownBy(() -> new ChunkRef(5, 1, 0, 1 << 20).address()).extracting(e -> ((StrataException) e).status())
                .isEqualTo(Status.NO_SUCH_CHAIN);
        assertThatThrownBy(() -> new ChunkRef(5, 1, 1, 1000).address()).extracting(e -> ((StrataException) e).status())
                .isEqualTo(Status.INVALID_ARGUMENT);
    }
}
