package io.strata.namespace;

import io.strata.protocol.meta.RequestId;
import io.strata.core.InodeId;
import io.strata.namespace.kv.Bytes;
import java.nio.charset.StandardCharsets;

/**
 * The namespace's keys, the same on LMDB and FoundationDB (docs/internals/keyspace.md draws the
 * tree). Each key starts with a 4-byte prefix; inode ids inside keys are little-endian so that
 * consecutive ids spread over FoundationDB shards; names are raw UTF-8, so a directory's
 * entries form one range in byte order.
 */
public enum KeySpace {
    /**
     * {@code INOD|inode(le64)} -> inode record; {@code INOD|inode|'N'} -> a directory's number of
     * subdirectories (atomic add); {@code INOD|inode|'T'} -> directory change time (atomic max).
     */
    INODE("INOD"),
    /** {@code DENT|parent(le64)|name} -> child inode (le64) + type (u8). */
    DENTRY("DENT"),
    /** {@code XATR|inode(le64)|name} -> extended attribute value. */
    XATTR("XATR"),
    /** {@code SESS|inode(le64)|session(be64)} -> open session (client, flags, time). */
    SESSION("SESS"),
    /** {@code IDEM|request(16 bytes)} -> time + result of a completed read-write operation. */
    IDEMPOTENCY("IDEM"),
    /** {@code GCQU|inode(le64)} -> layout + chunk count of a deleted file whose chunks must be freed. */
    GC_QUEUE("GCQU"),
    /** {@code STAG|inode(le64)} -> the file's L2 staging record ({@code io.strata.protocol.meta.Staging}). */
    STAGING("STAG"),
    /** {@code CKPT|root(le64)|generation dir(le64)} -> a checkpoint generation's record ({@code Checkpoint.Generation}). */
    CHECKPOINT("CKPT"),
    /** {@code CKPM|generation dir(le64)|path} -> one manifest entry of a committed generation: inode, type, size, CRC32C. */
    CHECKPOINT_MANIFEST("CKPM"),
    /** {@code CKPF|inode(le64)} -> root(le64) + generation(le64): the file or directory belongs to that committed generation. */
    CHECKPOINT_MEMBER("CKPF"),
    /** {@code CKPR|root(le64)} -> (empty): a checkpoint root, for the keeper's passes. */
    CHECKPOINT_ROOT("CKPR"),
    /** {@code CRCS|inode(le64)} -> length(le64) + CRC32C(le64) of the file's whole content, as its writer computed it; length -1: two writers overlapped, unknown. */
    CONTENT_CRC("CRCS"),
    /** {@code PREF|inode(le64)} -> the file's prefetched L2 copies: data version, agents, owning hints ({@code io.strata.protocol.meta.Cached.Record}). */
    CACHED("PREF"),
    /**
     * {@code LEAS|client(le64)} -> when a meta instance last heard from that client: u64 LE ms,
     * raised with an atomic max by its keep-alives, so every instance sharing the store sees it.
     */
    CLIENT_LEASE("LEAS"),
    /**
     * {@code TRIM|inode(le64)} -> queued at (u64 LE ms): a writer of the file died without
     * publishing, so chunks past the file's length may hold bytes nobody published; the collector
     * removes them before the file may be opened for writing again.
     */
    TRIM("TRIM"),
    /** {@code META|name} -> namespace-wide values: format, inode allocator, usage counters. */
    META("META");

    private final byte[] prefix;

    KeySpace(String prefix) {
        this.prefix = prefix.getBytes(StandardCharsets.US_ASCII);
    }

    public byte[] prefix() {
        return prefix.clone();
    }

    /** The end of this prefix's range. */
    public byte[] end() {
        return Bytes.strinc(prefix);
    }

    static final byte DIR_TIME_SUFFIX = 'T';
    static final byte SUBDIRS_SUFFIX = 'N';

    public static byte[] inode(InodeId id) {
        byte[] k = new byte[12];
        System.arraycopy(INODE.prefix, 0, k, 0, 4);
        Bytes.putLe64(k, 4, id.value());
        return k;
    }

    static byte[] dirTime(InodeId id) {
        return inodeSuffix(id, DIR_TIME_SUFFIX);
    }

    static byte[] subdirs(InodeId id) {
        return inodeSuffix(id, SUBDIRS_SUFFIX);
    }

    private static byte[] inodeSuffix(InodeId id, byte suffix) {
        byte[] k = new byte[13];
        System.arraycopy(INODE.prefix, 0, k, 0, 4);
        Bytes.putLe64(k, 4, id.value());
        k[12] = suffix;
        return k;
    }

    /** Prefix of every key under one id: {@code P|id(le64)}. */
    static byte[] under(KeySpace space, InodeId id) {
        byte[] k = new byte[12];
        System.arraycopy(space.prefix, 0, k, 0, 4);
        Bytes.putLe64(k, 4, id.value());
        return k;
    }

    public static byte[] dentry(InodeId parent, String name) {
        return Bytes.concat(under(DENTRY, parent), name.getBytes(StandardCharsets.UTF_8));
    }

    static byte[] xattr(InodeId inode, String name) {
        return Bytes.concat(under(XATTR, inode), name.getBytes(StandardCharsets.UTF_8));
    }

    static byte[] session(InodeId inode, long session) {
        byte[] k = new byte[20];
        System.arraycopy(under(SESSION, inode), 0, k, 0, 12);
        for (int i = 0; i < 8; i++) {
            k[12 + i] = (byte) (session >>> (56 - 8 * i));
        }
        return k;
    }

    static byte[] idempotency(RequestId id) {
        byte[] k = new byte[20];
        System.arraycopy(IDEMPOTENCY.prefix, 0, k, 0, 4);
        for (int i = 0; i < 8; i++) {
            k[4 + i] = (byte) (id.hi() >>> (56 - 8 * i));
            k[12 + i] = (byte) (id.lo() >>> (56 - 8 * i));
        }
        return k;
    }

    static byte[] staging(InodeId inode) {
        return under(STAGING, inode);
    }

    static byte[] cached(InodeId inode) {
        return under(CACHED, inode);
    }

    static byte[] generation(InodeId root, InodeId gen) {
        byte[] k = new byte[20];
        System.arraycopy(under(CHECKPOINT, root), 0, k, 0, 12);
        Bytes.putLe64(k, 12, gen.value());
        return k;
    }

    static byte[] manifest(InodeId gen, String path) {
        return Bytes.concat(under(CHECKPOINT_MANIFEST, gen), path.getBytes(StandardCharsets.UTF_8));
    }

    static byte[] lease(long clientId) {
        byte[] k = new byte[12];
        System.arraycopy(CLIENT_LEASE.prefix, 0, k, 0, 4);
        Bytes.putLe64(k, 4, clientId);
        return k;
    }

    static byte[] trim(InodeId inode) {
        return under(TRIM, inode);
    }

    static byte[] gc(InodeId inode) {
        return under(GC_QUEUE, inode);
    }

    static byte[] meta(String name) {
        return Bytes.concat(META.prefix, name.getBytes(StandardCharsets.US_ASCII));
    }

    static final byte[] NEXT_INODE = meta("/next-inode");
    static final byte[] STAT_INODES = meta("/stat/inodes");
    static final byte[] STAT_BYTES = meta("/stat/bytes");
    static final byte[] FORMAT = meta("/format");

    /** The inode id in bytes 4..11 of a key under {@link #under}. */
    static InodeId idAt(byte[] key) {
        return InodeId.of(Bytes.readLe64(key, 4, 8));
    }

    /** The name after the 12-byte {@code P|id} prefix of a dentry or xattr key. */
    static String nameAt(byte[] key) {
        return new String(key, 12, key.length - 12, StandardCharsets.UTF_8);
    }
}
