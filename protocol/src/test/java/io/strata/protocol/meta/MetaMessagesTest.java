package io.strata.protocol.meta;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChainId;
import io.strata.core.InodeId;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Wire;
import io.strata.testing.Seeded;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Every meta message round-trips; decoders reject truncated and corrupted bodies as malformed. */
class MetaMessagesTest {
    static final Protocol PROTOCOL = MetaMessages.PROTOCOL;
    static final Caller C = Caller.of(1000, 100, 4, 5, 6);
    static final InodeId I = InodeId.of(0x0102030405060708L);
    static final RequestId R = new RequestId(-7, 42);

    static InodeAttrs file() {
        Layout l = new Layout(1 << 20, 3, 1, 2, 3, 1, 5, -99L, List.of(ChainId.of(7), ChainId.of(8), ChainId.of(9)));
        return new InodeAttrs(I, InodeType.FILE, 0644, 1000, 100, 2, 12345, 9, 1, 2, 3, null, "", "", l,
                Map.of("replicas", "3", "qos", "interactive"), 4, 0);
    }

    static InodeAttrs dir() {
        return new InodeAttrs(InodeId.of(9), InodeType.DIRECTORY, 02775, 0, 0, 1, 0, 1, 1, 2, 3, InodeId.ROOT, "ckpt", "", null,
                Map.of("stripe.width", "8"), 0, 0);
    }

    static InodeAttrs device() {
        return new InodeAttrs(InodeId.of(11), InodeType.CHAR_DEVICE, 0620, 0, 5, 2, 0, 1, 1, 2, 3, null, "", "", null, Map.of(), 0,
                DeviceNumber.of(4095, 1_048_575));
    }

    static InodeAttrs fifo() {
        return new InodeAttrs(InodeId.of(12), InodeType.FIFO, 0644, 1000, 100, 1, 0, 1, 1, 2, 3, null, "", "", null, Map.of(), 0, 0);
    }

    static Staging staging() {
        return Staging.begin(I, 2, 1, 2, List.of(new Staging.Candidate(21, "gpu-1"), new Staging.Candidate(22, "gpu-2")), 1000)
                .publish(new Staging.Delta(Map.of(1, List.of(22)), List.of(new Staging.Range(0, 3))), 2000)
                .drained(1, false, 3000);
    }

    static List<Message> samples() {
        List<PolicyInfo.Field> src = List.of(new PolicyInfo.Field("replicas", "2", "/a"),
                new PolicyInfo.Field("qos", "interactive", "default"));
        return List.of(
                new MetaMessage.Lookup(C, I, "name"),
                new MetaMessage.GetAttr(C, I),
                new MetaMessage.Resolve(Caller.ROOT, "/a/b/c"),
                new MetaMessage.SetAttrs(C, I, new SetAttr(0600, 1, 2, 99L, SetAttr.NOW, 5L), R),
                new MetaMessage.SetAttrs(C, I, SetAttr.NONE, R),
                new MetaMessage.Create(C, I, "f", 0644, true, R),
                new MetaMessage.Mkdir(C, I, "d", 0755, R),
                new MetaMessage.Symlink(C, I, "s", "../target", R),
                new MetaMessage.ReadLink(C, I),
                new MetaMessage.Link(C, I, InodeId.ROOT, "l", R),
                new MetaMessage.Unlink(C, I, "u", R),
                new MetaMessage.Rmdir(C, I, "r", R),
                new MetaMessage.Rename(C, I, "a", InodeId.ROOT, "b", true, R),
                new MetaMessage.ReadDir(C, I, "", 1000, true),
                new MetaMessage.Open(C, I, 3, 77, R),
                new MetaMessage.Close(C, I, -5, 4096, true, 0xCAFEBABEL, 4096, R),
                new MetaMessage.Ckpt(C, Checkpoint.Op.COMMIT, I, Checkpoint.Level.L3, List.of(new Checkpoint.Expected("a/__0_0.distcp", 123),
                        new Checkpoint.Expected(".metadata", -1)), "", 0, R),
                new MetaMessage.Ckpt(C, Checkpoint.Op.MANIFEST, I, null, List.of(), "a/b", 500, R),
                new MetaMessage.CkptReply(List.of(new Checkpoint.Generation(InodeId.of(5), I, "step-100", Checkpoint.State.COMMITTED,
                        Checkpoint.Durability.DRAINING, Checkpoint.Level.L2, 7, 8, 1 << 30, 1, true, 1, 2, 3, 4, 0)),
                        List.of(new Checkpoint.Entry("a/x", InodeId.of(77), InodeType.FILE, 10, 0xFFFFFFFFL),
                                new Checkpoint.Entry("a", InodeId.of(76), InodeType.DIRECTORY, 0, Checkpoint.NO_CRC)), true),
                new MetaMessage.Cache(C, Cached.Op.MARK, 42, List.of(1, 2), List.of(new Cached.File(I, 3)), R),
                new MetaMessage.Cache(C, Cached.Op.GET, 0, List.of(), List.of(), R),
                new MetaMessage.CacheReply(List.of(new Cached.Record(I, 3, List.of(1, 2), List.of(42L, 43L))), List.of(InodeId.of(9))),
                new MetaMessage.Fsync(C, I, 5, -1, R),
                new MetaMessage.StatFsRequest(C),
                new MetaMessage.GetXattr(C, I, "user.x"),
                new MetaMessage.SetXattr(C, I, "user.x", new byte[] {1, 2, 3}, 1, R),
                new MetaMessage.ListXattr(C, I),
                new MetaMessage.RemoveXattr(C, I, "user.x", R),
                new MetaMessage.PolicyGet(C, I),
                new MetaMessage.PolicySet(C, I, List.of("replicas=2", "qos=checkpoint"), R),
                new MetaMessage.Attrs(file()),
                new MetaMessage.Attrs(dir()),
                new MetaMessage.Done(),
                new MetaMessage.KeepAlive(C, 0x7EADBEEF01020304L),
                new MetaMessage.LeaseReply(60_000),
                new MetaMessage.LinkTarget("/x/y"),
                new MetaMessage.Listing(List.of(new DirEntry("a", I, InodeType.FILE, null),
                        new DirEntry("b", InodeId.of(9), InodeType.DIRECTORY, dir())), "b"),
                new MetaMessage.Opened(123, file(), null),
                new MetaMessage.Opened(124, file(), new io.strata.core.tier.CachedCopies(7, List.of(3, 4))),
                new MetaMessage.StatFsReply(10, 20),
                new MetaMessage.XattrValue(new byte[0]),
                new MetaMessage.XattrNames(List.of("user.a", "user.b")),
                new MetaMessage.PolicyReply("/a", Map.of("replicas", "2"), src),
                new MetaMessage.StageOpen(C, I, 1, 2, List.of(new Staging.Candidate(21, "gpu-1"), new Staging.Candidate(22, "gpu-2")), R),
                new MetaMessage.GetStaging(C, I),
                new MetaMessage.StagePublish(C, I, 3, new Staging.Delta(Map.of(5, List.of(22, 23), 6, List.of()),
                        List.of(new Staging.Range(0, 4), new Staging.Range(6, 9))), R),
                new MetaMessage.DrainReport(Caller.ROOT, I, 3, 7, true, R),
                new MetaMessage.StageLost(Caller.ROOT, I, "chunk 3: agents 21 and 22 lost their copies", R),
                new MetaMessage.ListStaging(Caller.ROOT, true, 0, 100),
                new MetaMessage.StagingReply(staging()),
                new MetaMessage.StagingReply(null),
                new MetaMessage.StagingList(List.of(staging(), staging().markLost("gone")), true),
                new MetaMessage.Mknod(C, I, "fifo", InodeType.FIFO, 0644, 0, R),
                new MetaMessage.Mknod(Caller.ROOT, I, "null", InodeType.CHAR_DEVICE, 0666, DeviceNumber.of(1, 3), R),
                new MetaMessage.CreateOpen(C, I, "f", 0, false, 3, 77, R),
                new MetaMessage.CreateOpenIn(new MetaMessage.CreateOpen(C, I, "g", 0644, true, 2, 78, R)),
                new MetaMessage.OpenedIn(new MetaMessage.Opened(125, file(), null), dir()),
                new MetaMessage.Remove(C, I, "f", false, R),
                new MetaMessage.MkdirIn(new MetaMessage.Mkdir(C, I, "d", 0755, R)),
                new MetaMessage.SymlinkIn(new MetaMessage.Symlink(C, I, "l", "../x", R)),
                new MetaMessage.AttrsIn(dir(), dir()),
                new MetaMessage.Remove(Caller.ROOT, I, "d", true, R),
                new MetaMessage.Attrs(device()),
                new MetaMessage.Attrs(fifo()),
                new MetaMessage.SetAttrsThrough(C.through(0x0102030405060708L), I, SetAttr.size(0), R),
                new MetaMessage.SetAttrsThrough(Caller.ROOT.through(-1), I, new SetAttr(0644, null, null, 5L, null, null), R),
                new MetaMessage.Listing(List.of(new DirEntry("p", fifo().id(), InodeType.FIFO, fifo()),
                        new DirEntry("s", InodeId.of(13), InodeType.SOCKET, null),
                        new DirEntry("b", InodeId.of(14), InodeType.BLOCK_DEVICE, null),
                        new DirEntry("c", device().id(), InodeType.CHAR_DEVICE, device())), ""));
    }

    @Test
    void filesDirectoriesAndSymlinksKeepInodeFormat1SpecialFilesUseFormat2() {
        assertThat(Codec.inodeBytes(file())[0]).isEqualTo((byte) Codec.INODE_FORMAT);
        assertThat(Codec.inodeBytes(dir())[0]).isEqualTo((byte) Codec.INODE_FORMAT);
        byte[] dev = Codec.inodeBytes(device());
        assertThat(dev[0]).isEqualTo((byte) Codec.INODE_FORMAT_SPECIAL);
        assertThat(Codec.inodeFrom(dev)).isEqualTo(device());
        assertThat(Codec.inodeFrom(Codec.inodeBytes(fifo()))).isEqualTo(fifo());
        // a format that does not match the type is refused, never misread
        byte[] wrong = Codec.inodeBytes(file());
        wrong[0] = (byte) Codec.INODE_FORMAT_SPECIAL;
        assertThatThrownBy(() -> Codec.inodeFrom(wrong)).isInstanceOf(Wire.Malformed.class).hasMessageContaining("format 2");
        byte[] fifoAsFormat1 = Arrays.copyOf(Codec.inodeBytes(fifo()), Codec.inodeBytes(fifo()).length - 8);
        fifoAsFormat1[0] = (byte) Codec.INODE_FORMAT;
        assertThatThrownBy(() -> Codec.inodeFrom(fifoAsFormat1)).isInstanceOf(Wire.Malformed.class);
    }

    @Test
    void onlyDevicesCarryADeviceNumber() {
        assertThatThrownBy(() -> new InodeAttrs(I, InodeType.FIFO, 0644, 0, 0, 1, 0, 1, 1, 2, 3, null, "", "", null, Map.of(), 0, 7))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("FIFO has no device number");
        byte[] b = Codec.inodeBytes(fifo());
        b[b.length - 1] = 7; // the device number of a FIFO
        assertThatThrownBy(() -> Codec.inodeFrom(b)).isInstanceOf(Wire.Malformed.class).hasMessageContaining("no device number");
    }

    @Test
    void deviceNumbersSplitAsGlibcMakedevDoes() {
        assertThat(DeviceNumber.of(1, 3)).isEqualTo(0x103);                       // /dev/null
        assertThat(DeviceNumber.of(8, 17)).isEqualTo(0x811);                      // /dev/sdb1
        assertThat(DeviceNumber.of(4095, 1_048_575)).isEqualTo(0xFFFFFFFFL);      // the most FUSE's 32 bits hold
        long big = DeviceNumber.of(0xFFFF_FFFFL, 0xFFFF_FFFFL);
        assertThat(big).isEqualTo(-1L);
        for (long[] mm : new long[][] {{0, 0}, {1, 3}, {4095, 1_048_575}, {4096, 256}, {0xFFFF_FFFFL, 0}, {0, 0xFFFF_FFFFL}, {123_456, 789_012}}) {
            long d = DeviceNumber.of(mm[0], mm[1]);
            assertThat(DeviceNumber.major(d)).as("major of %s", DeviceNumber.toString(d)).isEqualTo(mm[0]);
            assertThat(DeviceNumber.minor(d)).as("minor of %s", DeviceNumber.toString(d)).isEqualTo(mm[1]);
        }
        assertThat(DeviceNumber.toString(DeviceNumber.of(10, 200))).isEqualTo("10:200");
        assertThatThrownBy(() -> DeviceNumber.of(-1, 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("out of range");
        assertThatThrownBy(() -> DeviceNumber.of(0, 1L << 32)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aCallersSessionTravelsWithSetattrAlone() {
        assertThat(C.through(5)).isNotEqualTo(C);
        assertThat(C.through(5).through(0)).isEqualTo(C);
        assertThat(C.through(5).toString()).contains("session=5");
        assertThat(new Caller(1, 2, new int[0]).session()).isZero();
        // every other request's caller arrives without its session: their encodings are unchanged
        MetaMessage.Lookup withSession = new MetaMessage.Lookup(C.through(5), I, "n");
        ByteBuf b = encode(withSession);
        ByteBuf plain = encode(new MetaMessage.Lookup(C, I, "n"));
        try {
            assertThat(b).isEqualTo(plain);
            assertThat(PROTOCOL.decode(MetaMessages.LOOKUP, b)).isEqualTo(new MetaMessage.Lookup(C, I, "n"));
        } finally {
            b.release();
            plain.release();
        }
        // a setattr "through" session 0 is not one
        ByteBuf zero = encode(new MetaMessage.SetAttrsThrough(C.through(1), I, SetAttr.size(0), R));
        try {
            zero.setLong(4 + 4 + 1 + 4 * 3, 0); // uid, gid, group count, C's three groups, then the session
            assertThatThrownBy(() -> PROTOCOL.decode(MetaMessages.SET_ATTRS_THROUGH, zero)).isInstanceOf(Wire.Malformed.class)
                    .hasMessageContaining("session 0");
        } finally {
            zero.release();
        }
    }

    static ByteBuf encode(Message m) {
        ByteBuf b = Unpooled.buffer();
        PROTOCOL.typeOf(m).encode(m, b);
        return b;
    }

    @Test
    void everyMessageRoundTripsAndEveryTypeHasASample() {
        List<Integer> covered = new ArrayList<>();
        for (Message m : samples()) {
            MessageType<?> t = PROTOCOL.typeOf(m);
            assertThat(t.tag()).isBetween(300, 399);
            ByteBuf b = encode(m);
            try {
                assertThat(PROTOCOL.decode(t, b)).isEqualTo(m);
            } finally {
                b.release();
            }
            covered.add(t.tag());
        }
        assertThat(covered).containsAll(MetaMessages.TYPES.stream().map(MessageType::tag).toList());
    }

    @Test
    void truncatedBodiesAreMalformed() {
        for (Message m : samples()) {
            MessageType<?> t = PROTOCOL.typeOf(m);
            ByteBuf full = encode(m);
            try {
                for (int cut = 0; cut < full.readableBytes(); cut++) {
                    ByteBuf part = full.slice(0, cut);
                    assertThatThrownBy(() -> PROTOCOL.decode(t, part)).as("%s cut at %d", t, cut).isInstanceOf(Wire.Malformed.class);
                }
                ByteBuf longer = Unpooled.buffer().writeBytes(full.duplicate()).writeByte(0);
                assertThatThrownBy(() -> PROTOCOL.decode(t, longer)).isInstanceOf(Wire.Malformed.class);
                longer.release();
            } finally {
                full.release();
            }
        }
    }

    @Seeded
    @Test
    void corruptedBodiesDecodeOrFailAsMalformedNeverOtherwise(long seed) {
        Random r = new Random(seed);
        for (int round = 0; round < 3000; round++) {
            List<Message> all = samples();
            Message m = all.get(r.nextInt(all.size()));
            MessageType<?> t = PROTOCOL.typeOf(m);
            ByteBuf b = encode(m);
            try {
                for (int flips = 1 + r.nextInt(3); flips > 0 && b.readableBytes() > 0; flips--) {
                    int at = r.nextInt(b.readableBytes());
                    b.setByte(at, b.getByte(at) ^ (1 << r.nextInt(8)));
                }
                try {
                    PROTOCOL.decode(t, b);
                } catch (Wire.Malformed expected) {
                    // fine: rejected with a reason
                }
            } finally {
                b.release();
            }
        }
    }
}
