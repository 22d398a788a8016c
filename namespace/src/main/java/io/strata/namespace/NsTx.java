package io.strata.namespace;

import io.strata.protocol.meta.Codec;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.Layout;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Wire;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.namespace.kv.KvReader;
import io.strata.namespace.kv.KvTransaction;
import java.util.List;

/**
 * Typed access to the keyspace inside one transaction. Reads go through {@code reader}: the
 * transaction itself (conflict-checked) for read-write operations, its snapshot view for
 * read-only ones.
 */
final class NsTx {
    final KvTransaction tx;
    final KvReader reader;
    final long now;

    NsTx(KvTransaction tx, boolean readOnly, long now) {
        this.tx = tx;
        this.reader = readOnly ? tx.snapshot() : tx;
        this.now = now;
    }

    record Dentry(InodeId child, InodeType type) {
    }

    InodeAttrs inode(InodeId id) {
        byte[] v = reader.get(KeySpace.inode(id));
        return v == null ? null : Codec.inodeFrom(v);
    }

    InodeAttrs requireInode(InodeId id) {
        InodeAttrs a = inode(id);
        if (a == null) {
            throw new StrataException(Status.NOT_FOUND, "no inode " + id);
        }
        return a;
    }

    InodeAttrs requireDir(InodeId id) {
        InodeAttrs a = requireInode(id);
        if (!a.isDirectory()) {
            throw new StrataException(Status.NOT_A_DIRECTORY, id + " is not a directory");
        }
        return a;
    }

    /**
     * The inode as operations return it: a directory's latest change time and its link count
     * (from its subdirectory counter) folded in. One range read, no conflicts.
     */
    InodeAttrs attrs(InodeId id) {
        byte[] k = KeySpace.inode(id);
        List<KeyValue> kvs = tx.snapshot().getRange(k, Bytes.strinc(k), 3);
        if (kvs.isEmpty() || kvs.get(0).key().length != 12) {
            throw new StrataException(Status.NOT_FOUND, "no inode " + id);
        }
        InodeAttrs a = Codec.inodeFrom(kvs.get(0).value());
        long subdirs = 0;
        for (int i = 1; i < kvs.size(); i++) {
            byte[] key = kvs.get(i).key();
            long v = Bytes.readLe64(kvs.get(i).value());
            if (key[12] == KeySpace.DIR_TIME_SUFFIX && (v > a.mtimeNanos() || v > a.ctimeNanos())) {
                a = a.withTimes(a.atimeNanos(), Math.max(v, a.mtimeNanos()), Math.max(v, a.ctimeNanos()));
            } else if (key[12] == KeySpace.SUBDIRS_SUFFIX) {
                subdirs = v;
            }
        }
        return linksFolded(a, subdirs);
    }

    /**
     * Directory {@code before} (as {@link #attrs} read it in this transaction) as it reads once
     * this transaction's change to its entries is in: its times moved to now ({@link #touchDir}),
     * {@code subdirDelta} more subdirectories counted. Reading before or after the
     * {@link #touchDir} of the same transaction gives the same answer (a maximum); the
     * subdirectory count must be read before it changes.
     */
    InodeAttrs touched(InodeAttrs before, int subdirDelta) {
        InodeAttrs a = before.withTimes(before.atimeNanos(), Math.max(now, before.mtimeNanos()), Math.max(now, before.ctimeNanos()));
        return countsSubdirs(a) && subdirDelta != 0 ? a.withLinkCount(a.nlink() + subdirDelta) : a;
    }

    /** {@code a} as operations return it, for a record this transaction just wrote or read. */
    InodeAttrs withLinks(InodeAttrs a) {
        if (!countsSubdirs(a)) {
            return a;
        }
        byte[] n = tx.snapshot().get(KeySpace.subdirs(a.id()));
        return linksFolded(a, n == null ? 0 : Bytes.readLe64(n));
    }

    private static InodeAttrs linksFolded(InodeAttrs a, long subdirs) {
        return countsSubdirs(a) ? a.withLinkCount(COUNTED_DIR_LINKS + subdirs) : a;
    }

    /**
     * The stored link count of a directory that counts its subdirectories: its reported count is
     * this plus the {@code 'N'} counter. Directories stored with 1 were made before subdirectories
     * were counted and report 1 ("not counted", as btrfs does), since their counter never saw
     * the subdirectories they already had.
     */
    static final long COUNTED_DIR_LINKS = 2;

    static boolean countsSubdirs(InodeAttrs dir) {
        return dir.isDirectory() && dir.nlink() >= COUNTED_DIR_LINKS;
    }

    /** A subdirectory of {@code dir} appeared (+1) or went (-1); nothing for a directory that does not count them. */
    void countSubdir(InodeAttrs dir, long delta) {
        if (countsSubdirs(dir)) {
            tx.atomicAdd(KeySpace.subdirs(dir.id()), delta);
        }
    }

    void putInode(InodeAttrs a) {
        tx.set(KeySpace.inode(a.id()), Codec.inodeBytes(a));
    }

    /** Removes the inode record, its directory time and subdirectory counter, and its extended attributes. */
    void deleteInode(InodeId id) {
        byte[] k = KeySpace.inode(id);
        tx.clearRange(k, Bytes.strinc(k));
        byte[] x = KeySpace.under(KeySpace.XATTR, id);
        tx.clearRange(x, Bytes.strinc(x));
    }

    /** A directory's entries changed: its mtime/ctime move forward without conflicting with other changes. */
    void touchDir(InodeId dir) {
        tx.atomicMax(KeySpace.dirTime(dir), now);
    }

    Dentry dentry(InodeId parent, String name) {
        byte[] v = reader.get(KeySpace.dentry(parent, name));
        if (v == null) {
            return null;
        }
        if (v.length != 9) {
            throw new StrataException(Status.INTERNAL, "corrupt dentry " + parent + "/" + name);
        }
        return new Dentry(InodeId.of(Bytes.readLe64(v, 0, 8)), typeOf(v[8]));
    }

    void putDentry(InodeId parent, String name, InodeId child, InodeType type) {
        byte[] v = new byte[9];
        Bytes.putLe64(v, 0, child.value());
        v[8] = (byte) type.wireTag();
        tx.set(KeySpace.dentry(parent, name), v);
    }

    void clearDentry(InodeId parent, String name) {
        tx.clear(KeySpace.dentry(parent, name));
    }

    static InodeType typeOf(byte tag) {
        for (InodeType t : InodeType.values()) {
            if (t.wireTag() == tag) {
                return t;
            }
        }
        throw new StrataException(Status.INTERNAL, "corrupt dentry type " + tag);
    }

    boolean isEmptyDir(InodeId dir) {
        byte[] p = KeySpace.under(KeySpace.DENTRY, dir);
        return reader.getRange(p, Bytes.strinc(p), 1).isEmpty();
    }

    boolean hasSessions(InodeId id) {
        byte[] p = KeySpace.under(KeySpace.SESSION, id);
        return !reader.getRange(p, Bytes.strinc(p), 1).isEmpty();
    }

    /** Whether any session of {@code id} was opened for writing (one range read of its sessions, conflict-checked). */
    boolean hasWriteSessions(InodeId id) {
        byte[] p = KeySpace.under(KeySpace.SESSION, id);
        for (KeyValue kv : reader.getRange(p, Bytes.strinc(p), 0)) {
            if (isWriteSession(kv.value())) {
                return true;
            }
        }
        return false;
    }

    /** Whether a {@code SESS} value (client, flags, opened) is a session opened for writing. */
    static boolean isWriteSession(byte[] v) {
        return v.length > 8 && (v[8] & io.strata.protocol.meta.OpenFlags.WRITE) != 0;
    }

    /** Queues a trim of what lies past the file's length (kept if one is queued already: the older time stays). */
    void enqueueTrim(InodeId id, long nowMillis) {
        byte[] k = KeySpace.trim(id);
        if (tx.get(k) == null) {
            tx.set(k, Bytes.le64(nowMillis));
        }
    }

    void countInodes(long delta) {
        tx.atomicAdd(KeySpace.STAT_INODES, delta);
    }

    void countBytes(long delta) {
        if (delta != 0) {
            tx.atomicAdd(KeySpace.STAT_BYTES, delta);
        }
    }

    /** The file's staging record, or null. */
    io.strata.protocol.meta.Staging staging(InodeId id) {
        byte[] v = reader.get(KeySpace.staging(id));
        return v == null ? null : io.strata.protocol.meta.Staging.decode(Unpooled.wrappedBuffer(v));
    }

    void putStaging(io.strata.protocol.meta.Staging s) {
        ByteBuf b = Unpooled.buffer(256);
        try {
            s.encode(b);
            tx.set(KeySpace.staging(s.inode()), ByteBufUtil.getBytes(b));
        } finally {
            b.release();
        }
    }

    void clearStaging(InodeId id) {
        tx.clear(KeySpace.staging(id));
    }

    /** The file's prefetch record, or null. */
    io.strata.protocol.meta.Cached.Record cached(InodeId id) {
        byte[] v = reader.get(KeySpace.cached(id));
        return v == null ? null : io.strata.protocol.meta.Cached.Record.decode(Unpooled.wrappedBuffer(v));
    }

    void putCached(io.strata.protocol.meta.Cached.Record r) {
        ByteBuf b = Unpooled.buffer(64);
        try {
            r.encode(b);
            tx.set(KeySpace.cached(r.inode()), ByteBufUtil.getBytes(b));
        } finally {
            b.release();
        }
    }

    void clearCached(InodeId id) {
        tx.clear(KeySpace.cached(id));
    }

    /** Queues a deleted file's chunks for the collector. */
    void enqueueGc(InodeAttrs file, long nowMillis) {
        long chunks = Math.max(file.chunkHighWater(), file.layout().chunksFor(file.length()));
        ByteBuf b = Unpooled.buffer(64);
        try {
            b.writeLong(nowMillis);
            b.writeLong(chunks);
            Codec.writeLayout(b, file.layout());
            tx.set(KeySpace.gc(file.id()), ByteBufUtil.getBytes(b));
        } finally {
            b.release();
        }
    }

    record GcEntry(InodeId inode, long enqueuedMillis, long chunks, Layout layout) {
    }

    static GcEntry gcEntry(KeyValue kv) {
        ByteBuf b = Unpooled.wrappedBuffer(kv.value());
        long t = Wire.readLong(b, "gc time");
        long n = Wire.readLong(b, "gc chunks");
        return new GcEntry(KeySpace.idAt(kv.key()), t, n, Codec.readLayout(b));
    }
}
