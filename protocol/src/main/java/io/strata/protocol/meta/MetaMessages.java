package io.strata.protocol.meta;

import io.netty.buffer.ByteBuf;
import io.strata.core.InodeId;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Wire;
import io.strata.protocol.meta.MetaMessage.Attrs;
import io.strata.protocol.meta.MetaMessage.Ckpt;
import io.strata.protocol.meta.MetaMessage.CkptReply;
import io.strata.protocol.meta.MetaMessage.Close;
import io.strata.protocol.meta.MetaMessage.Create;
import io.strata.protocol.meta.MetaMessage.CreateOpen;
import io.strata.protocol.meta.MetaMessage.AttrsIn;
import io.strata.protocol.meta.MetaMessage.CreateOpenIn;
import io.strata.protocol.meta.MetaMessage.MkdirIn;
import io.strata.protocol.meta.MetaMessage.SymlinkIn;
import io.strata.protocol.meta.MetaMessage.OpenedIn;
import io.strata.protocol.meta.MetaMessage.Remove;
import io.strata.protocol.meta.MetaMessage.Done;
import io.strata.protocol.meta.MetaMessage.Fsync;
import io.strata.protocol.meta.MetaMessage.GetAttr;
import io.strata.protocol.meta.MetaMessage.GetXattr;
import io.strata.protocol.meta.MetaMessage.KeepAlive;
import io.strata.protocol.meta.MetaMessage.LeaseReply;
import io.strata.protocol.meta.MetaMessage.Link;
import io.strata.protocol.meta.MetaMessage.LinkTarget;
import io.strata.protocol.meta.MetaMessage.ListXattr;
import io.strata.protocol.meta.MetaMessage.Listing;
import io.strata.protocol.meta.MetaMessage.Lookup;
import io.strata.protocol.meta.MetaMessage.Mkdir;
import io.strata.protocol.meta.MetaMessage.Mknod;
import io.strata.protocol.meta.MetaMessage.Open;
import io.strata.protocol.meta.MetaMessage.Opened;
import io.strata.protocol.meta.MetaMessage.Cache;
import io.strata.protocol.meta.MetaMessage.CacheReply;
import io.strata.protocol.meta.MetaMessage.PolicyGet;
import io.strata.protocol.meta.MetaMessage.PolicyReply;
import io.strata.protocol.meta.MetaMessage.PolicySet;
import io.strata.protocol.meta.MetaMessage.ReadDir;
import io.strata.protocol.meta.MetaMessage.ReadLink;
import io.strata.protocol.meta.MetaMessage.RemoveXattr;
import io.strata.protocol.meta.MetaMessage.Rename;
import io.strata.protocol.meta.MetaMessage.Resolve;
import io.strata.protocol.meta.MetaMessage.Rmdir;
import io.strata.protocol.meta.MetaMessage.SetAttrs;
import io.strata.protocol.meta.MetaMessage.SetAttrsThrough;
import io.strata.protocol.meta.MetaMessage.SetXattr;
import io.strata.protocol.meta.MetaMessage.StatFsRequest;
import io.strata.protocol.meta.MetaMessage.StatFsReply;
import io.strata.protocol.meta.MetaMessage.Symlink;
import io.strata.protocol.meta.MetaMessage.StagingList;
import io.strata.protocol.meta.MetaMessage.StagingReply;
import io.strata.protocol.meta.MetaMessage.ListStaging;
import io.strata.protocol.meta.MetaMessage.StageLost;
import io.strata.protocol.meta.MetaMessage.DrainReport;
import io.strata.protocol.meta.MetaMessage.StagePublish;
import io.strata.protocol.meta.MetaMessage.GetStaging;
import io.strata.protocol.meta.MetaMessage.StageOpen;
import io.strata.protocol.meta.MetaMessage.Unlink;
import io.strata.protocol.meta.MetaMessage.XattrNames;
import io.strata.protocol.meta.MetaMessage.XattrValue;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Wire types of {@link MetaMessage} (tags 300-399). Strings are bounded generously on the wire
 * (names up to {@value #MAX_NAME} bytes) so that an over-long name reaches the service and gets
 * its errno-style status (NAME_TOO_LONG) instead of a dropped frame.
 */
public final class MetaMessages {
    static final int MAX_NAME = 4096;
    static final int MAX_PATH = 64 * 1024;
    static final int MAX_ENTRIES = 10_000;
    static final int MAX_XATTR = 64 * 1024 + 1;

    private MetaMessages() {
    }

    // ---- field codecs ----------------------------------------------------------------------

    static void caller(ByteBuf out, Caller c) {
        out.writeInt(c.uid());
        out.writeInt(c.gid());
        out.writeByte(c.groups().length);
        for (int g : c.groups()) {
            out.writeInt(g);
        }
    }

    static Caller caller(ByteBuf in) {
        int uid = Wire.readInt(in, "uid");
        int gid = Wire.readInt(in, "gid");
        int n = Wire.readU8(in, "group count");
        if (n > Caller.MAX_GROUPS) {
            throw new Wire.Malformed("group count " + n + " exceeds " + Caller.MAX_GROUPS);
        }
        Wire.need(in, n * 4, "groups");
        int[] gs = new int[n];
        for (int i = 0; i < n; i++) {
            gs[i] = in.readInt();
        }
        return new Caller(uid, gid, gs);
    }

    static void inode(ByteBuf out, InodeId id) {
        out.writeLong(id.value());
    }

    static InodeId inode(ByteBuf in, String what) {
        long v = Wire.readLong(in, what);
        if (v == 0) {
            throw new Wire.Malformed(what + ": inode 0");
        }
        return InodeId.of(v);
    }

    static void req(ByteBuf out, RequestId r) {
        out.writeLong(r.hi());
        out.writeLong(r.lo());
    }

    static RequestId req(ByteBuf in) {
        return new RequestId(Wire.readLong(in, "request id"), Wire.readLong(in, "request id"));
    }

    static String name(ByteBuf in) {
        return Wire.readString(in, MAX_NAME, "name");
    }

    static void attrs(ByteBuf out, SetAttr s) {
        int mask = (s.mode() != null ? 1 : 0) | (s.uid() != null ? 2 : 0) | (s.gid() != null ? 4 : 0)
                | (s.size() != null ? 8 : 0) | (s.atimeNanos() != null ? 16 : 0) | (s.mtimeNanos() != null ? 32 : 0);
        out.writeByte(mask);
        if (s.mode() != null) {
            out.writeInt(s.mode());
        }
        if (s.uid() != null) {
            out.writeInt(s.uid());
        }
        if (s.gid() != null) {
            out.writeInt(s.gid());
        }
        if (s.size() != null) {
            out.writeLong(s.size());
        }
        if (s.atimeNanos() != null) {
            out.writeLong(s.atimeNanos());
        }
        if (s.mtimeNanos() != null) {
            out.writeLong(s.mtimeNanos());
        }
    }

    static SetAttr attrs(ByteBuf in) {
        int mask = Wire.readU8(in, "setattr mask");
        if ((mask & ~63) != 0) {
            throw new Wire.Malformed("setattr mask " + mask);
        }
        Integer mode = (mask & 1) != 0 ? Wire.readInt(in, "mode") : null;
        Integer uid = (mask & 2) != 0 ? Wire.readInt(in, "uid") : null;
        Integer gid = (mask & 4) != 0 ? Wire.readInt(in, "gid") : null;
        Long size = (mask & 8) != 0 ? Wire.readLong(in, "size") : null;
        Long at = (mask & 16) != 0 ? Wire.readLong(in, "atime") : null;
        Long mt = (mask & 32) != 0 ? Wire.readLong(in, "mtime") : null;
        return new SetAttr(mode, uid, gid, size, at, mt);
    }

    static void strings(ByteBuf out, List<String> s) {
        out.writeInt(s.size());
        s.forEach(x -> Wire.writeString(out, x));
    }

    static List<String> strings(ByteBuf in, int max, int maxBytes, String what) {
        int n = Wire.readCount(in, what, max, 4);
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(Wire.readString(in, maxBytes, what));
        }
        return out;
    }

    // ---- requests --------------------------------------------------------------------------

    public static final MessageType<Lookup> LOOKUP = MessageType.of(300, Lookup.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
            },
            in -> new Lookup(caller(in), inode(in, "parent"), name(in)));
    public static final MessageType<GetAttr> GET_ATTR = MessageType.of(301, GetAttr.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
            },
            in -> new GetAttr(caller(in), inode(in, "inode")));
    public static final MessageType<Resolve> RESOLVE = MessageType.of(302, Resolve.class,
            (m, out) -> {
                caller(out, m.caller());
                Wire.writeString(out, m.path());
            },
            in -> new Resolve(caller(in), Wire.readString(in, MAX_PATH, "path")));
    public static final MessageType<SetAttrs> SET_ATTRS = MessageType.of(303, SetAttrs.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                attrs(out, m.attrs());
                req(out, m.req());
            },
            in -> new SetAttrs(caller(in), inode(in, "inode"), attrs(in), req(in)));
    public static final MessageType<Create> CREATE = MessageType.of(304, Create.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
                out.writeInt(m.mode());
                Wire.writeBool(out, m.exclusive());
                req(out, m.req());
            },
            in -> new Create(caller(in), inode(in, "parent"), name(in), Wire.readInt(in, "mode"), Wire.readBool(in, "exclusive"), req(in)));
    public static final MessageType<Mkdir> MKDIR = MessageType.of(305, Mkdir.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
                out.writeInt(m.mode());
                req(out, m.req());
            },
            in -> new Mkdir(caller(in), inode(in, "parent"), name(in), Wire.readInt(in, "mode"), req(in)));
    public static final MessageType<Symlink> SYMLINK = MessageType.of(306, Symlink.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
                Wire.writeString(out, m.target());
                req(out, m.req());
            },
            in -> new Symlink(caller(in), inode(in, "parent"), name(in), Wire.readString(in, MAX_PATH, "target"), req(in)));
    public static final MessageType<MkdirIn> MKDIR_IN = MessageType.of(337, MkdirIn.class,
            (m, out) -> MKDIR.encode(m.request(), out),
            in -> new MkdirIn(MKDIR.decode(in)));
    public static final MessageType<SymlinkIn> SYMLINK_IN = MessageType.of(338, SymlinkIn.class,
            (m, out) -> SYMLINK.encode(m.request(), out),
            in -> new SymlinkIn(SYMLINK.decode(in)));
    public static final MessageType<ReadLink> READ_LINK = MessageType.of(307, ReadLink.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
            },
            in -> new ReadLink(caller(in), inode(in, "inode")));
    public static final MessageType<Link> LINK = MessageType.of(308, Link.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                inode(out, m.newParent());
                Wire.writeString(out, m.newName());
                req(out, m.req());
            },
            in -> new Link(caller(in), inode(in, "inode"), inode(in, "new parent"), name(in), req(in)));
    public static final MessageType<Unlink> UNLINK = MessageType.of(309, Unlink.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
                req(out, m.req());
            },
            in -> new Unlink(caller(in), inode(in, "parent"), name(in), req(in)));
    public static final MessageType<Rmdir> RMDIR = MessageType.of(310, Rmdir.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
                req(out, m.req());
            },
            in -> new Rmdir(caller(in), inode(in, "parent"), name(in), req(in)));
    public static final MessageType<Remove> REMOVE = MessageType.of(335, Remove.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
                Wire.writeBool(out, m.directory());
                req(out, m.req());
            },
            in -> new Remove(caller(in), inode(in, "parent"), name(in), Wire.readBool(in, "directory"), req(in)));
    public static final MessageType<Rename> RENAME = MessageType.of(311, Rename.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.srcParent());
                Wire.writeString(out, m.srcName());
                inode(out, m.dstParent());
                Wire.writeString(out, m.dstName());
                Wire.writeBool(out, m.noReplace());
                req(out, m.req());
            },
            in -> new Rename(caller(in), inode(in, "source parent"), name(in), inode(in, "target parent"), name(in),
                    Wire.readBool(in, "no replace"), req(in)));
    public static final MessageType<ReadDir> READ_DIR = MessageType.of(312, ReadDir.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.dir());
                Wire.writeString(out, m.after());
                out.writeInt(m.limit());
                Wire.writeBool(out, m.withAttrs());
            },
            in -> new ReadDir(caller(in), inode(in, "dir"), name(in), Wire.readInt(in, "limit", 1, MAX_ENTRIES), Wire.readBool(in, "with attrs")));
    public static final MessageType<Open> OPEN = MessageType.of(313, Open.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                out.writeInt(m.flags());
                out.writeLong(m.clientId());
                req(out, m.req());
            },
            in -> new Open(caller(in), inode(in, "inode"), Wire.readInt(in, "flags"), Wire.readLong(in, "client"), req(in)));
    public static final MessageType<Close> CLOSE = MessageType.of(314, Close.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                out.writeLong(m.session());
                out.writeLong(m.writtenLength());
                Wire.writeBool(out, m.wrote());
                out.writeLong(m.contentCrc()).writeLong(m.crcLength());
                req(out, m.req());
            },
            in -> new Close(caller(in), inode(in, "inode"), Wire.readLong(in, "session"), Wire.readLong(in, "written length"),
                    Wire.readBool(in, "wrote"), Wire.readLong(in, "content crc"), Wire.readLong(in, "crc length"), req(in)));
    public static final MessageType<Fsync> FSYNC = MessageType.of(315, Fsync.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                out.writeLong(m.session());
                out.writeLong(m.writtenLength());
                req(out, m.req());
            },
            in -> new Fsync(caller(in), inode(in, "inode"), Wire.readLong(in, "session"), Wire.readLong(in, "written length"), req(in)));
    public static final MessageType<StatFsRequest> STAT_FS = MessageType.of(316, StatFsRequest.class,
            (m, out) -> caller(out, m.caller()),
            in -> new StatFsRequest(caller(in)));
    public static final MessageType<GetXattr> GET_XATTR = MessageType.of(317, GetXattr.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                Wire.writeString(out, m.name());
            },
            in -> new GetXattr(caller(in), inode(in, "inode"), name(in)));
    public static final MessageType<SetXattr> SET_XATTR = MessageType.of(318, SetXattr.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                Wire.writeString(out, m.name());
                Wire.writeBytes(out, m.value());
                out.writeInt(m.flags());
                req(out, m.req());
            },
            in -> new SetXattr(caller(in), inode(in, "inode"), name(in), Wire.readBytes(in, MAX_XATTR, "value"),
                    Wire.readInt(in, "flags"), req(in)));
    public static final MessageType<ListXattr> LIST_XATTR = MessageType.of(319, ListXattr.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
            },
            in -> new ListXattr(caller(in), inode(in, "inode")));
    public static final MessageType<RemoveXattr> REMOVE_XATTR = MessageType.of(320, RemoveXattr.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                Wire.writeString(out, m.name());
                req(out, m.req());
            },
            in -> new RemoveXattr(caller(in), inode(in, "inode"), name(in), req(in)));
    public static final MessageType<PolicyGet> POLICY_GET = MessageType.of(321, PolicyGet.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.dir());
            },
            in -> new PolicyGet(caller(in), inode(in, "dir")));
    public static final MessageType<PolicySet> POLICY_SET = MessageType.of(322, PolicySet.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.dir());
                strings(out, m.assignments());
                req(out, m.req());
            },
            in -> new PolicySet(caller(in), inode(in, "dir"), strings(in, 64, 1024, "assignment"), req(in)));

    public static final MessageType<StageOpen> STAGE_OPEN = MessageType.of(323, StageOpen.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                out.writeInt(m.placementVersion());
                out.writeByte(m.replicas());
                out.writeInt(m.proposed().size());
                for (Staging.Candidate c : m.proposed()) {
                    out.writeInt(c.node());
                    Wire.writeString(out, c.domain());
                }
                req(out, m.req());
            },
            in -> {
                Caller c = caller(in);
                InodeId inode = inode(in, "inode");
                int pv = Wire.readInt(in, "placement version", 1, Integer.MAX_VALUE);
                int replicas = Wire.readU8(in, "replicas");
                int n = Wire.readCount(in, "candidates", Staging.MAX_ITEMS, 8);
                List<Staging.Candidate> cs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    try {
                        cs.add(new Staging.Candidate(Wire.readInt(in, "candidate"), Wire.readString(in, 256, "domain")));
                    } catch (IllegalArgumentException e) {
                        throw new Wire.Malformed(e.getMessage());
                    }
                }
                return new StageOpen(c, inode, pv, replicas, cs, req(in));
            });
    public static final MessageType<GetStaging> GET_STAGING = MessageType.of(324, GetStaging.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
            },
            in -> new GetStaging(caller(in), inode(in, "inode")));
    public static final MessageType<StagePublish> STAGE_PUBLISH = MessageType.of(325, StagePublish.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                out.writeLong(m.epoch());
                m.delta().encode(out);
                req(out, m.req());
            },
            in -> new StagePublish(caller(in), inode(in, "inode"), Wire.readLong(in, "epoch"), Staging.Delta.decode(in), req(in)));
    public static final MessageType<DrainReport> DRAIN_REPORT = MessageType.of(326, DrainReport.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                out.writeLong(m.epoch()).writeLong(m.version());
                Wire.writeBool(out, m.durable());
                req(out, m.req());
            },
            in -> new DrainReport(caller(in), inode(in, "inode"), Wire.readLong(in, "epoch"), Wire.readLong(in, "version"),
                    Wire.readBool(in, "durable"), req(in)));
    public static final MessageType<StageLost> STAGE_LOST = MessageType.of(327, StageLost.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.inode());
                Wire.writeString(out, m.why());
                req(out, m.req());
            },
            in -> new StageLost(caller(in), inode(in, "inode"), Wire.readString(in, 1024, "why"), req(in)));
    public static final MessageType<ListStaging> LIST_STAGING = MessageType.of(328, ListStaging.class,
            (m, out) -> {
                caller(out, m.caller());
                Wire.writeBool(out, m.pendingOnly());
                out.writeLong(m.after()).writeInt(m.limit());
            },
            in -> new ListStaging(caller(in), Wire.readBool(in, "pending only"), Wire.readLong(in, "after"),
                    Wire.readInt(in, "limit", 1, 10_000)));
    public static final MessageType<Mknod> MKNOD = MessageType.of(329, Mknod.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
                Wire.writeEnum(out, m.type());
                out.writeInt(m.mode());
                out.writeLong(m.rdev());
                req(out, m.req());
            },
            in -> new Mknod(caller(in), inode(in, "parent"), name(in), Wire.readEnum(in, InodeType.class, "type"),
                    Wire.readInt(in, "mode"), Wire.readLong(in, "device number"), req(in)));
    public static final MessageType<CreateOpen> CREATE_OPEN = MessageType.of(330, CreateOpen.class,
            (m, out) -> {
                caller(out, m.caller());
                inode(out, m.parent());
                Wire.writeString(out, m.name());
                out.writeInt(m.mode());
                Wire.writeBool(out, m.exclusive());
                out.writeInt(m.flags());
                out.writeLong(m.clientId());
                req(out, m.req());
            },
            in -> new CreateOpen(caller(in), inode(in, "parent"), name(in), Wire.readInt(in, "mode"), Wire.readBool(in, "exclusive"),
                    Wire.readInt(in, "flags"), Wire.readLong(in, "client"), req(in)));
    public static final MessageType<CreateOpenIn> CREATE_OPEN_IN = MessageType.of(336, CreateOpenIn.class,
            (m, out) -> CREATE_OPEN.encode(m.request(), out),
            in -> new CreateOpenIn(CREATE_OPEN.decode(in)));
    public static final MessageType<SetAttrsThrough> SET_ATTRS_THROUGH = MessageType.of(331, SetAttrsThrough.class,
            (m, out) -> {
                caller(out, m.caller());
                out.writeLong(m.caller().session());
                inode(out, m.inode());
                attrs(out, m.attrs());
                req(out, m.req());
            },
            in -> {
                Caller c = caller(in);
                long session = Wire.readLong(in, "session");
                if (session == 0) {
                    throw new Wire.Malformed("setattr through session 0 (a setattr without a session is SetAttrs)");
                }
                return new SetAttrsThrough(c.through(session), inode(in, "inode"), attrs(in), req(in));
            });
    public static final MessageType<Ckpt> CKPT = MessageType.of(332, Ckpt.class,
            (m, out) -> {
                caller(out, m.caller());
                Wire.writeEnum(out, m.op());
                inode(out, m.inode());
                out.writeByte(m.level() == null ? 0 : m.level().wireTag());
                out.writeInt(m.expected().size());
                for (Checkpoint.Expected e : m.expected()) {
                    Wire.writeString(out, e.path());
                    out.writeLong(e.size());
                }
                Wire.writeString(out, m.after());
                out.writeInt(m.limit());
                req(out, m.req());
            },
            in -> {
                Caller c = caller(in);
                Checkpoint.Op op = Wire.readEnum(in, Checkpoint.Op.class, "checkpoint op");
                InodeId inode = inode(in, "inode");
                int lt = Wire.readU8(in, "level");
                Checkpoint.Level level = lt == 0 ? null : lt == Checkpoint.Level.L2.wireTag() ? Checkpoint.Level.L2
                        : lt == Checkpoint.Level.L3.wireTag() ? Checkpoint.Level.L3 : null;
                if (lt != 0 && level == null) {
                    throw new Wire.Malformed("unknown checkpoint level tag " + lt);
                }
                int n = Wire.readCount(in, "expected files", Checkpoint.MAX_ENTRIES, 12);
                List<Checkpoint.Expected> expected = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    try {
                        expected.add(new Checkpoint.Expected(Wire.readString(in, MAX_PATH, "expected path"), Wire.readLong(in, "expected size")));
                    } catch (IllegalArgumentException e) {
                        throw new Wire.Malformed(e.getMessage());
                    }
                }
                return new Ckpt(c, op, inode, level, expected, Wire.readString(in, MAX_PATH, "after"), Wire.readInt(in, "limit", 0, 100_000),
                        req(in));
            });

    public static final MessageType<KeepAlive> KEEP_ALIVE = MessageType.of(334, KeepAlive.class,
            (m, out) -> {
                caller(out, m.caller());
                out.writeLong(m.clientId());
            },
            in -> new KeepAlive(caller(in), Wire.readLong(in, "client")));

    // ---- replies ---------------------------------------------------------------------------

    public static final MessageType<Attrs> ATTRS = MessageType.of(350, Attrs.class,
            (m, out) -> Codec.writeInode(out, m.attrs()),
            in -> new Attrs(Codec.readInode(in)));
    public static final MessageType<Done> DONE = MessageType.of(351, Done.class,
            (m, out) -> { },
            in -> new Done());
    public static final MessageType<LinkTarget> LINK_TARGET = MessageType.of(352, LinkTarget.class,
            (m, out) -> Wire.writeString(out, m.target()),
            in -> new LinkTarget(Wire.readString(in, MAX_PATH, "target")));
    public static final MessageType<Listing> LISTING = MessageType.of(353, Listing.class,
            (m, out) -> {
                out.writeInt(m.entries().size());
                for (DirEntry e : m.entries()) {
                    Wire.writeString(out, e.name());
                    inode(out, e.inode());
                    Wire.writeEnum(out, e.type());
                    Wire.writeBool(out, e.attrs() != null);
                    if (e.attrs() != null) {
                        Codec.writeInode(out, e.attrs());
                    }
                }
                Wire.writeString(out, m.next());
            },
            in -> {
                int n = Wire.readCount(in, "entries", MAX_ENTRIES, 15);
                List<DirEntry> es = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    String name = name(in);
                    InodeId id = inode(in, "entry");
                    InodeType type = Wire.readEnum(in, InodeType.class, "entry type");
                    InodeAttrs a = Wire.readBool(in, "has attrs") ? Codec.readInode(in) : null;
                    es.add(new DirEntry(name, id, type, a));
                }
                return new Listing(es, name(in));
            });
    public static final MessageType<Opened> OPENED = MessageType.of(354, Opened.class,
            (m, out) -> {
                out.writeLong(m.session());
                Codec.writeInode(out, m.attrs());
                Cached.writeCopies(out, m.cached());
            },
            in -> new Opened(Wire.readLong(in, "session"), Codec.readInode(in), Cached.readCopies(in)));
    public static final MessageType<AttrsIn> ATTRS_IN = MessageType.of(365, AttrsIn.class,
            (m, out) -> {
                Codec.writeInode(out, m.attrs());
                Codec.writeInode(out, m.dir());
            },
            in -> new AttrsIn(Codec.readInode(in), Codec.readInode(in)));
    public static final MessageType<OpenedIn> OPENED_IN = MessageType.of(364, OpenedIn.class,
            (m, out) -> {
                OPENED.encode(m.opened(), out);
                Codec.writeInode(out, m.dir());
            },
            in -> new OpenedIn(OPENED.decode(in), Codec.readInode(in)));
    public static final MessageType<StatFsReply> STAT_FS_REPLY = MessageType.of(355, StatFsReply.class,
            (m, out) -> {
                out.writeLong(m.inodes());
                out.writeLong(m.bytes());
            },
            in -> new StatFsReply(Wire.readLong(in, "inodes"), Wire.readLong(in, "bytes")));
    public static final MessageType<XattrValue> XATTR_VALUE = MessageType.of(356, XattrValue.class,
            (m, out) -> Wire.writeBytes(out, m.value()),
            in -> new XattrValue(Wire.readBytes(in, MAX_XATTR, "value")));
    public static final MessageType<XattrNames> XATTR_NAMES = MessageType.of(357, XattrNames.class,
            (m, out) -> strings(out, m.names()),
            in -> new XattrNames(strings(in, 65_536, MAX_NAME, "attribute name")));
    public static final MessageType<PolicyReply> POLICY_REPLY = MessageType.of(358, PolicyReply.class,
            (m, out) -> {
                Wire.writeString(out, m.path());
                Map<String, String> sorted = new TreeMap<>(m.overrides());
                out.writeInt(sorted.size());
                sorted.forEach((k, v) -> {
                    Wire.writeString(out, k);
                    Wire.writeString(out, v);
                });
                out.writeInt(m.effective().size());
                for (PolicyInfo.Field s : m.effective()) {
                    Wire.writeString(out, s.key());
                    Wire.writeString(out, s.value());
                    Wire.writeString(out, s.from());
                }
            },
            in -> {
                String path = Wire.readString(in, MAX_PATH, "path");
                int n = Wire.readCount(in, "overrides", 64, 8);
                Map<String, String> o = new TreeMap<>();
                for (int i = 0; i < n; i++) {
                    o.put(Wire.readString(in, 256, "key"), Wire.readString(in, 256, "value"));
                }
                int m = Wire.readCount(in, "sources", 64, 12);
                List<PolicyInfo.Field> src = new ArrayList<>(m);
                for (int i = 0; i < m; i++) {
                    src.add(new PolicyInfo.Field(Wire.readString(in, 256, "field"), Wire.readString(in, 256, "value"),
                            Wire.readString(in, MAX_PATH, "from")));
                }
                return new PolicyReply(path, o, src);
            });

    public static final MessageType<StagingReply> STAGING_REPLY = MessageType.of(359, StagingReply.class,
            (m, out) -> {
                Wire.writeBool(out, m.staging() != null);
                if (m.staging() != null) {
                    m.staging().encode(out);
                }
            },
            in -> new StagingReply(Wire.readBool(in, "has staging") ? Staging.decode(in) : null));
    public static final MessageType<StagingList> STAGING_LIST = MessageType.of(360, StagingList.class,
            (m, out) -> {
                out.writeInt(m.records().size());
                m.records().forEach(r -> r.encode(out));
                Wire.writeBool(out, m.more());
            },
            in -> {
                int n = Wire.readCount(in, "staging records", 10_000, 40);
                List<Staging> rs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    rs.add(Staging.decode(in));
                }
                return new StagingList(rs, Wire.readBool(in, "more"));
            });
    public static final MessageType<CkptReply> CKPT_REPLY = MessageType.of(361, CkptReply.class,
            (m, out) -> {
                out.writeInt(m.generations().size());
                m.generations().forEach(g -> g.encode(out));
                out.writeInt(m.entries().size());
                m.entries().forEach(e -> e.encode(out));
                Wire.writeBool(out, m.more());
            },
            in -> {
                int n = Wire.readCount(in, "generations", 1_000_000, 40);
                List<Checkpoint.Generation> gs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    gs.add(Checkpoint.Generation.decode(in));
                }
                int m = Wire.readCount(in, "manifest entries", 100_000, 20);
                List<Checkpoint.Entry> es = new ArrayList<>(m);
                for (int i = 0; i < m; i++) {
                    es.add(Checkpoint.Entry.decode(in));
                }
                return new CkptReply(gs, es, Wire.readBool(in, "more"));
            });

    public static final MessageType<Cache> CACHE = MessageType.of(333, Cache.class,
            (m, out) -> {
                caller(out, m.caller());
                Wire.writeEnum(out, m.op());
                out.writeLong(m.owner());
                Cached.ints(out, m.agents());
                Cached.files(out, m.files());
                req(out, m.req());
            },
            in -> new Cache(caller(in), Wire.readEnum(in, Cached.Op.class, "cache op"), Wire.readLong(in, "owner"),
                    Cached.ints(in, "agents", Cached.MAX_AGENTS), Cached.files(in), req(in)));
    public static final MessageType<CacheReply> CACHE_REPLY = MessageType.of(362, CacheReply.class,
            (m, out) -> {
                out.writeInt(m.records().size());
                m.records().forEach(r -> r.encode(out));
                out.writeInt(m.stale().size());
                m.stale().forEach(id -> out.writeLong(id.value()));
            },
            in -> {
                int n = Wire.readCount(in, "cached records", Cached.MAX_FILES, 28);
                List<Cached.Record> rs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    rs.add(Cached.Record.decode(in));
                }
                int k = Wire.readCount(in, "stale files", Cached.MAX_FILES, 8);
                List<InodeId> stale = new ArrayList<>(k);
                for (int i = 0; i < k; i++) {
                    stale.add(InodeId.of(Wire.readLong(in, "stale inode")));
                }
                return new CacheReply(rs, stale);
            });

    public static final MessageType<LeaseReply> LEASE_REPLY = MessageType.of(363, LeaseReply.class,
            (m, out) -> out.writeLong(m.leaseMillis()),
            in -> new LeaseReply(Wire.readLong(in, "lease")));

    public static final List<MessageType<?>> TYPES = List.of(LOOKUP, GET_ATTR, RESOLVE, SET_ATTRS, CREATE, MKDIR, SYMLINK,
            READ_LINK, LINK, UNLINK, RMDIR, RENAME, READ_DIR, OPEN, CLOSE, FSYNC, STAT_FS, GET_XATTR, SET_XATTR, LIST_XATTR,
            REMOVE_XATTR, POLICY_GET, POLICY_SET, ATTRS, DONE, LINK_TARGET, LISTING, OPENED, STAT_FS_REPLY, XATTR_VALUE,
            XATTR_NAMES, POLICY_REPLY, STAGE_OPEN, GET_STAGING, STAGE_PUBLISH, DRAIN_REPORT, STAGE_LOST, LIST_STAGING,
            STAGING_REPLY, STAGING_LIST, MKNOD, CREATE_OPEN, SET_ATTRS_THROUGH, CKPT, CKPT_REPLY, CACHE,
            CACHE_REPLY, KEEP_ALIVE, LEASE_REPLY, REMOVE, CREATE_OPEN_IN, OPENED_IN, MKDIR_IN, SYMLINK_IN, ATTRS_IN);

    /** What a meta service speaks: the core messages (ping) and the meta messages. */
    public static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, TYPES);
}
