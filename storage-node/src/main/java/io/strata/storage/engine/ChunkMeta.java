package io.strata.storage.engine;

import io.strata.protocol.storage.Applied;
import io.strata.protocol.storage.ChunkSummary;
import io.strata.protocol.storage.RequestId;
import io.strata.core.ChunkId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What a target knows about one chunk, as stored in LMDB: the chunk size of its layout, the
 * chain version of its last update, the committed version, the pending version (written and
 * durable, not yet known to be committed at the chain's tail), and the last few request ids
 * applied to it (so a retried write is recognised even after a restart).
 *
 * <p>Stored form (big-endian): u8 format (1), u32 chunk size, u64 chain version, u8 flags
 * (bit 0 committed present, bit 1 pending present), the versions (u64 version, u64 file, u32
 * length, u32 crc, u8 removed, u64+u64 request, u32 block count, u32 per block), u8 count of
 * recent requests (u64+u64 request, u64 version each).
 */
public record ChunkMeta(ChunkId id, int chunkSize, long chainVersion, ChunkVersion committed, ChunkVersion pending,
                        List<Applied> recent) {
    /** How many recent request ids a chunk remembers. */
    public static final int RECENT = Applied.REMEMBERED;
    private static final int FORMAT = 1;

    public ChunkMeta {
        recent = List.copyOf(recent);
    }

    /** A chunk nobody wrote: no versions. */
    public static ChunkMeta absent(ChunkId id, int chunkSize) {
        return new ChunkMeta(id, chunkSize, 0, null, null, List.of());
    }

    /** True when a pending version exists (a write is in flight or its commit was not recorded yet). */
    public boolean dirty() {
        return pending != null;
    }

    /** The committed version number; 0 when none. */
    public long committedVersion() {
        return committed == null ? 0 : committed.version();
    }

    /** The newest version number, pending or committed; 0 when none. */
    public long latestVersion() {
        return pending != null ? pending.version() : committedVersion();
    }

    /** The committed content's length (0 when absent or removed). */
    public int committedLength() {
        return committed == null || committed.removed() ? 0 : committed.length();
    }

    /** The version {@code v}, committed or pending. */
    public Optional<ChunkVersion> version(long v) {
        if (committed != null && committed.version() == v) {
            return Optional.of(committed);
        }
        if (pending != null && pending.version() == v) {
            return Optional.of(pending);
        }
        return Optional.empty();
    }

    /** The version produced by {@code request}, when this chunk remembers it. */
    public Optional<Long> versionOf(RequestId request) {
        for (Applied a : recent) {
            if (a.request().equals(request)) {
                return Optional.of(a.version());
            }
        }
        return Optional.empty();
    }

    /** This meta with a new pending version (replacing any pending one). */
    public ChunkMeta withPending(ChunkVersion v, long chainVersion) {
        return new ChunkMeta(id, chunkSize, chainVersion, committed, v, remember(v));
    }

    /** This meta with {@code v} committed and no pending version. */
    public ChunkMeta withCommitted(ChunkVersion v, long chainVersion) {
        return new ChunkMeta(id, chunkSize, chainVersion, v, null, remember(v));
    }

    /** Promotes the pending version to committed. */
    public ChunkMeta commitPending() {
        if (pending == null) {
            return this;
        }
        return new ChunkMeta(id, chunkSize, chainVersion, pending, null, recent);
    }

    private List<Applied> remember(ChunkVersion v) {
        List<Applied> out = new ArrayList<>(RECENT);
        if (!v.request().equals(RequestId.NONE)) {
            out.add(new Applied(v.request(), v.version()));
        }
        for (Applied a : recent) {
            if (out.size() == RECENT) {
                break;
            }
            if (!a.request().equals(v.request())) {
                out.add(a);
            }
        }
        return out;
    }

    // ---- stored form ----

    /** The 12-byte LMDB key: inode (u64) then index (u32), big-endian, so a file's chunks sort together. */
    public static ByteBuffer key(ChunkId id, ByteBuffer out) {
        out.clear();
        out.putLong(id.inode().value()).putInt(id.index()).flip();
        return out;
    }

    static ChunkId keyToId(ByteBuffer key) {
        ByteBuffer k = key.duplicate();
        return ChunkId.of(k.getLong(), k.getInt());
    }

    int encodedSize() {
        return 1 + 4 + 8 + 1 + size(committed) + size(pending) + 1 + recent.size() * 24;
    }

    private static int size(ChunkVersion v) {
        return v == null ? 0 : 8 + 8 + 4 + 4 + 1 + 16 + 4 + 4 * v.blockCrcs().length;
    }

    void encode(ByteBuffer out) {
        out.put((byte) FORMAT).putInt(chunkSize).putLong(chainVersion);
        out.put((byte) ((committed != null ? 1 : 0) | (pending != null ? 2 : 0)));
        put(out, committed);
        put(out, pending);
        out.put((byte) recent.size());
        for (Applied a : recent) {
            out.putLong(a.request().client()).putLong(a.request().seq()).putLong(a.version());
        }
    }

    private static void put(ByteBuffer out, ChunkVersion v) {
        if (v == null) {
            return;
        }
        out.putLong(v.version()).putLong(v.file()).putInt(v.length()).putInt(v.crc()).put((byte) (v.removed() ? 1 : 0));
        out.putLong(v.request().client()).putLong(v.request().seq());
        int[] crcs = v.blockCrcs();
        out.putInt(crcs.length);
        for (int c : crcs) {
            out.putInt(c);
        }
    }

    /** Decodes a stored value (borrowed: LMDB memory, valid only inside its transaction). */
    static ChunkMeta decode(ChunkId id, ByteBuffer stored) {
        ByteBuffer in = stored.duplicate();
        try {
            int format = in.get() & 0xFF;
            if (format != FORMAT) {
                throw new IllegalArgumentException("unknown format " + format);
            }
            int chunkSize = in.getInt();
            long chainVersion = in.getLong();
            int flags = in.get() & 0xFF;
            ChunkVersion c = (flags & 1) != 0 ? get(in) : null;
            ChunkVersion p = (flags & 2) != 0 ? get(in) : null;
            int n = in.get() & 0xFF;
            List<Applied> recent = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                recent.add(new Applied(new RequestId(in.getLong(), in.getLong()), in.getLong()));
            }
            if (in.hasRemaining()) {
                throw new IllegalArgumentException(in.remaining() + " bytes left over");
            }
            return new ChunkMeta(id, chunkSize, chainVersion, c, p, recent);
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            throw new StrataException(Status.CHUNK_CORRUPT, "metadata of chunk " + id + " is unreadable: " + e);
        }
    }

    private static ChunkVersion get(ByteBuffer in) {
        long version = in.getLong();
        long file = in.getLong();
        int length = in.getInt();
        int crc = in.getInt();
        boolean removed = in.get() != 0;
        RequestId req = new RequestId(in.getLong(), in.getLong());
        int n = in.getInt();
        if (n < 0 || n > in.remaining() / 4) {
            throw new IllegalArgumentException("block count " + n);
        }
        int[] crcs = new int[n];
        for (int i = 0; i < n; i++) {
            crcs[i] = in.getInt();
        }
        return new ChunkVersion(version, file, length, crc, crcs, removed, req);
    }

    @Override
    public String toString() {
        return "ChunkMeta[" + id + ", size " + chunkSize + ", chain v" + chainVersion + ", committed " + committed
                + ", pending " + pending + "]";
    }

    /** What resync compares: this chunk's summary on the wire. */
    public ChunkSummary summary() {
        ChunkVersion c = committed;
        return new ChunkSummary(id.inode().value(), id.index(), chunkSize, chainVersion,
                c == null ? 0 : c.version(), c == null ? RequestId.NONE : c.request(), c == null ? 0 : c.length(),
                c == null ? 0 : c.crc(), c != null && c.removed(), pending == null ? 0 : pending.version(), ChunkSummary.recentHash(recent));
    }
}
