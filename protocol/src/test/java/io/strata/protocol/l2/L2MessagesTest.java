package io.strata.protocol.l2;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Wire;
import io.strata.core.tier.QosClass;
import io.strata.protocol.TagRange;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Every L2 message round-trips, stays in its tag range, and every decoder rejects malformed bodies. */
class L2MessagesTest {
    static final ChunkRef REF = new ChunkRef(77, 3, 2, 1 << 22);

    static List<Message> samples() {
        return List.of(
                new L2Message.Write(REF, 3, new RequestId(5, 6), UpdateKind.WRITE, 4096, 1 << 20, 0xCAFE, true, List.of(21, 22), QosClass.CHECKPOINT),
                new L2Message.Write(REF, 1, new RequestId(5, 7), UpdateKind.TRUNCATE, 0, 100, 0, false, List.of(21), QosClass.INTERACTIVE),
                new L2Message.Written(9, 1 << 22),
                new L2Message.Forward(REF, 2, new RequestId(1, 2), UpdateKind.WRITE, 10, true, 0, 1 << 22, -1, List.of(21, 22, 23), QosClass.TRAINING_READ),
                new L2Message.Forwarded(10),
                new L2Message.Read(REF, 1, 123, 4567, QosClass.BACKGROUND),
                new L2Message.ReadDone(true, 4, 65536, 0x1234, 3),
                new L2Message.ReadDone(false, 0, 0, 0, -1),
                new L2Message.Sync(77),
                new L2Message.Synced(Long.MAX_VALUE),
                new L2Message.ListChunks(77, 0, 16384),
                new L2Message.Chunks(List.of(0, 5, Integer.MAX_VALUE), true),
                new L2Message.Chunks(List.of(), false),
                new L2Message.Drained(REF, 11),
                new L2Message.Ack(),
                new L2Message.GetStatus(),
                new L2Message.Status(1L << 40, 1L << 30, 1 << 20, 4, 2 << 20, 8, 1L << 33, 300 << 20, 1.5, 2, 3, false, true, 5, 5 << 20, 7,
                        7 << 20),
                new L2Message.Warm(REF, 4, List.of(21, 22)),
                new L2Message.Warmed(true, 1 << 20),
                new L2Message.Warmed(false, 0),
                new L2Message.Fetch(REF, 0, 42, List.of(21), Long.MIN_VALUE, QosClass.PREFETCH),
                new L2Message.Fetch(REF, 3, 0, List.of(), 9, QosClass.TRAINING_READ),
                new L2Message.Fetch(REF, 2, 0, List.of(21, 22, 23, 24, 25, 26, 27, 28), -1, QosClass.BACKGROUND),
                new L2Message.Fetched(true, 1 << 22),
                new L2Message.Fetched(false, 0),
                new L2Message.Unpin(Long.MAX_VALUE),
                new L2Message.Unpinned(12));
    }

    static ByteBuf encode(Message m) {
        ByteBuf b = Unpooled.buffer();
        L2Messages.PROTOCOL.typeOf(m).encode(m, b);
        return b;
    }

    @Test
    void everyMessageRoundTripsInTheL2Range() {
        TagRange.L2.check(L2Messages.TYPES);
        Set<Class<?>> covered = new HashSet<>();
        for (Message m : samples()) {
            MessageType<?> t = L2Messages.PROTOCOL.typeOf(m);
            ByteBuf b = encode(m);
            try {
                assertThat(L2Messages.PROTOCOL.decode(t, b)).isEqualTo(m);
            } finally {
                b.release();
            }
            covered.add(m.getClass());
        }
        Set<Class<?>> all = new HashSet<>();
        L2Messages.TYPES.forEach(t -> all.add(t.type()));
        assertThat(covered).as("a sample of every message type").isEqualTo(all);
    }

    @Test
    void truncatedOrOverlongBodiesAreMalformed() {
        for (Message m : samples()) {
            MessageType<?> t = L2Messages.PROTOCOL.typeOf(m);
            ByteBuf full = encode(m);
            try {
                for (int cut = 0; cut < full.readableBytes(); cut++) {
                    ByteBuf part = full.retainedSlice(0, cut);
                    try {
                        assertThatThrownBy(() -> L2Messages.PROTOCOL.decode(t, part)).as("%s cut at %d", t, cut)
                                .isInstanceOf(Wire.Malformed.class);
                    } finally {
                        part.release();
                    }
                }
                ByteBuf longer = Unpooled.buffer().writeBytes(full, full.readerIndex(), full.readableBytes()).writeByte(0);
                try {
                    assertThatThrownBy(() -> L2Messages.PROTOCOL.decode(t, longer)).isInstanceOf(Wire.Malformed.class)
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
    void holderListsAreBounded() {
        ByteBuf b = encode(new L2Message.Write(REF, 1, new RequestId(1, 1), UpdateKind.WRITE, 0, 1, 0, false, List.of(21), QosClass.CHECKPOINT));
        try {
            b.setByte(b.writerIndex() - 6, 0); // holder count 0, before the holder and the class
            assertThatThrownBy(() -> L2Messages.PROTOCOL.decode(L2Messages.WRITE, b)).hasMessageContaining("holder count 0");
        } finally {
            b.release();
        }
        ByteBuf f = encode(new L2Message.Fetch(REF, 0, 1, List.of(), 5, QosClass.PREFETCH));
        try {
            f.setByte(f.writerIndex() - 10, L2Messages.MAX_HOLDERS + 1); // the holder count, before the owner and the class
            assertThatThrownBy(() -> L2Messages.PROTOCOL.decode(L2Messages.FETCH, f)).hasMessageContaining("holder count 9");
        } finally {
            f.release();
        }
    }

    @Test
    void anUnknownQosClassIsRefused() {
        ByteBuf b = encode(new L2Message.Read(REF, 1, 0, 4096, QosClass.TRAINING_READ));
        try {
            b.setByte(b.writerIndex() - 1, 99);
            assertThatThrownBy(() -> L2Messages.PROTOCOL.decode(L2Messages.READ, b)).hasMessageContaining("unknown qos class tag 99");
        } finally {
            b.release();
        }
    }

    @Test
    void randomBytesNeverCrashADecoder() {
        Random rnd = new Random(4);
        for (MessageType<?> t : L2Messages.TYPES) {
            for (int i = 0; i < 2000; i++) {
                byte[] b = new byte[rnd.nextInt(120)];
                rnd.nextBytes(b);
                ByteBuf in = Unpooled.wrappedBuffer(b);
                try {
                    L2Messages.PROTOCOL.decode(t, in);
                } catch (Wire.Malformed expected) {
                    // rejected with a reason
                } finally {
                    in.release();
                }
            }
        }
    }
}
