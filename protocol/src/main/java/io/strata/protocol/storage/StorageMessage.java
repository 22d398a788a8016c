package io.strata.protocol.storage;

import io.strata.core.rpc.Message;
import io.strata.core.tier.QosClass;
import java.util.List;

/**
 * The storage protocol (wire tags 100-199; docs/internals/craq.md). Every request names the
 * chain version its sender routes by; a node whose version differs answers
 * {@code STALE_CHAIN_VERSION} with its own version. Chunk bytes travel as the frame payload.
 */
public sealed interface StorageMessage extends Message {
    /**
     * Client to chain head: apply an update. Payload: the bytes for WRITE/REPLACE. {@code length}
     * is the payload length, or the new chunk length for TRUNCATE; {@code crc32c} is the CRC32C
     * of the payload (checked on every node). {@code minAck}: the fewest replicas that must
     * store the update before the head acknowledges it (capped at the chain's replicas; below
     * that the head holds the write, then refuses it with {@code TOO_FEW_REPLICAS}).
     */
    record WriteChunk(ChunkRef chunk, long chainVersion, RequestId request, UpdateKind kind, long offset, long length,
                      int crc32c, QosClass qos, int minAck) implements StorageMessage {
        /** A write with the default minimum ({@link io.strata.core.tier.IoOptions#DEFAULT_MIN_ACK}). */
        public WriteChunk(ChunkRef chunk, long chainVersion, RequestId request, UpdateKind kind, long offset, long length,
                          int crc32c, QosClass qos) {
            this(chunk, chainVersion, request, kind, offset, length, crc32c, qos, io.strata.core.tier.IoOptions.DEFAULT_MIN_ACK);
        }
    }

    /** Head to client: the update is committed at the tail as {@code version}; the chunk's length and CRC32C after it. */
    record WriteDone(long version, long length, int crc32c) implements StorageMessage {
    }

    /** Client to any serving replica: read {@code length} bytes at {@code offset}, scheduled in class {@code qos}. */
    record ReadChunk(ChunkRef chunk, long chainVersion, long offset, int length, QosClass qos) implements StorageMessage {
    }

    /**
     * Replica to client: the committed version served, the chunk's length in that version, and
     * (when {@code checked}) the CRC32C of the payload, which holds the bytes read. {@code removed}:
     * the version is a removal (a tombstone, read as empty); a replica catching up from the tail
     * installs it as one, not as an empty chunk (an empty chunk still exists, a removed one does not).
     */
    record ReadDone(long version, long chunkLength, boolean checked, int crc32c, boolean removed) implements StorageMessage {
        /** A version that is not a removal. */
        public ReadDone(long version, long chunkLength, boolean checked, int crc32c) {
            this(version, chunkLength, checked, crc32c, false);
        }
    }

    /** Predecessor to successor: store version {@code version} (pending, or committed at the tail). Payload as in WriteChunk. */
    record ForwardUpdate(ChunkRef chunk, long chainVersion, RequestId request, long version, UpdateKind kind, long offset,
                         long length, int crc32c, QosClass qos) implements StorageMessage {
    }

    /**
     * Successor to predecessor: {@code version} is committed from here to the tail, where
     * {@code replicas} targets (this one included) store it.
     */
    record UpdateAcked(long version, long length, int crc32c, int replicas) implements StorageMessage {
    }

    /** Replica with a dirty chunk to the tail: which version is committed? */
    record QueryVersion(ChunkRef chunk, long chainVersion) implements StorageMessage {
    }

    /** Tail to replica: the committed version (0 when the chunk was never written). */
    record VersionIs(long committedVersion) implements StorageMessage {
    }

    /** Anyone to a replica: what does this replica hold for the chunk? */
    record StatChunk(ChunkRef chunk, long chainVersion) implements StorageMessage {
    }

    /** A replica's view of a chunk: committed and pending versions (0 when none), committed length and CRC32C. */
    record ChunkStat(long committedVersion, long pendingVersion, long length, int crc32c, boolean removed)
            implements StorageMessage {
    }

    /**
     * Client (the garbage collector, truncate) to a chain's head: the indexes of the chunks of
     * {@code inode} this replica holds at or past {@code fromIndex}, ascending, at most {@code max}
     * of them. Chunks whose newest version is a removal are left out.
     */
    record ListInodeChunks(int chain, long chainVersion, long inode, int fromIndex, int max) implements StorageMessage {
    }

    /** One page of an inode's chunk indexes; {@code more} when more follow the last one. */
    record InodeChunks(List<Integer> indexes, boolean more) implements StorageMessage {
        public InodeChunks {
            indexes = List.copyOf(indexes);
        }
    }

    // ---- resync (docs/internals/resync.md) ----

    /**
     * Predecessor (or a tool) to a replica: list the replica's chunks of {@code chain}, in key
     * order, after ({@code afterInode}, {@code afterIndex}) or from the first when {@code first},
     * at most {@code max} of them.
     */
    record ListChunks(int chain, long chainVersion, boolean first, long afterInode, int afterIndex, int max)
            implements StorageMessage {
    }

    /** One page of a replica's chunks; {@code more} when chunks follow the last one. */
    record ChunkList(List<ChunkSummary> chunks, boolean more) implements StorageMessage {
    }

    /**
     * Predecessor to syncing target: make the chunk an exact copy of the predecessor's, i.e. one
     * committed version ({@code version}, {@code request}, {@code length}, {@code crc32c},
     * {@code removed}) whose content is the payload, with {@code recent} as its remembered
     * request ids; or forget the chunk when {@code absent} (the predecessor has none).
     */
    record SyncChunk(ChunkRef chunk, long chainVersion, boolean absent, long version, RequestId request, long length, int crc32c,
                     boolean removed, List<Applied> recent) implements StorageMessage {
    }

    /** Syncing target to predecessor: the copy is stored ({@code applied}), or was older than what the target has. */
    record SyncChunkDone(boolean applied) implements StorageMessage {
    }

    /**
     * Predecessor to syncing target: every chunk of {@code chain} was compared and copied under
     * {@code chainVersion}; the target reports itself up to date.
     */
    record SyncDone(int chain, long chainVersion, long copied, long removed, long bytes) implements StorageMessage {
    }

    /** Syncing target to predecessor: sync-done taken. */
    record SyncDoneAck(long chainVersion) implements StorageMessage {
    }

    // ---- scrub (docs/internals/scrub.md) ----

    /**
     * Admin to a storage node: report every target's scrub and, when {@code start}, first start a
     * pass on each target that is not scrubbing now.
     */
    record ScrubControl(boolean start) implements StorageMessage {
    }

    /** Storage node to admin: one line per target. */
    record ScrubReport(List<TargetScrub> targets) implements StorageMessage {
        public ScrubReport {
            targets = List.copyOf(targets);
        }
    }
}
