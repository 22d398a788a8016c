package io.strata.protocol.l2;

import io.strata.core.rpc.Message;
import io.strata.core.tier.QosClass;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;
import java.util.List;

/**
 * The L2 agent protocol (wire tags 400-499; docs/internals/l2.md). A staged chunk has an ordered
 * list of holders (agent node ids, the first one writes enter at); every update enters at the
 * first holder, which orders it, stores it and forwards it to the others before it answers.
 * Chunk addresses are the file's L3 addresses (the drain writes there). Chunk bytes travel as the
 * frame payload.
 */
public sealed interface L2Message extends Message {
    /**
     * Client to a chunk's first holder: apply an update (WRITE with the payload's bytes at
     * {@code offset}, TRUNCATE to {@code length}, REMOVE) in staging epoch {@code epoch} of the
     * file. {@code crc32c} is the payload's. A holder without a copy of this epoch first takes
     * the chunk's L3 content as the base, unless the update replaces the whole chunk; with
     * {@code mustHaveCopy} (the chunk was written in L2 in this epoch, so L3 may be older) it
     * refuses with NOT_FOUND instead. {@code qos} orders the update on every holder's disk.
     */
    record Write(ChunkRef chunk, long epoch, RequestId request, UpdateKind kind, long offset, long length, int crc32c,
                 boolean mustHaveCopy, List<Integer> holders, QosClass qos) implements L2Message {
        public Write {
            holders = List.copyOf(holders);
        }
    }

    /** First holder to client: the update is stored on every holder as {@code seq}; the chunk's length after it. */
    record Written(long seq, long chunkLength) implements L2Message {
    }

    /**
     * First holder to the next: store update {@code seq}. With {@code whole}, the payload is the
     * chunk's entire content after the update (a holder that had no copy gets one); else the
     * update's own bytes. {@code qos} is the client's class of the update.
     */
    record Forward(ChunkRef chunk, long epoch, RequestId request, UpdateKind kind, long seq, boolean whole, long offset, long length,
                   int crc32c, List<Integer> holders, QosClass qos) implements L2Message {
        public Forward {
            holders = List.copyOf(holders);
        }
    }

    /** Holder to first holder: stored. */
    record Forwarded(long seq) implements L2Message {
    }

    /**
     * Anyone to a holder: read {@code length} bytes at {@code offset} of the chunk, if this agent
     * holds a copy of staging epoch {@code epoch} or later (length 0: only its state), scheduled
     * on the agent's disk in class {@code qos}.
     */
    record Read(ChunkRef chunk, long epoch, long offset, int length, QosClass qos) implements L2Message {
    }

    /**
     * Agent to reader: {@code present} when this agent holds the chunk (then the payload is the
     * bytes, {@code seq} the update they reflect, {@code chunkLength} the chunk's length and
     * {@code crc32c} the payload's); absent: this agent has no copy, ask elsewhere or below.
     * {@code drainedSeq} is the last update of the chunk this agent knows durable in L3 (-1: none);
     * an absent copy with {@code drainedSeq >= 0} was drained and then evicted, so L3 has it.
     */
    record ReadDone(boolean present, long seq, long chunkLength, int crc32c, long drainedSeq) implements L2Message {
    }

    /** Client to agent: make every update of the file this agent stored durable (fdatasync). */
    record Sync(long inode) implements L2Message {
    }

    /** Agent to client: synced; the highest update sequence it holds for the file. */
    record Synced(long maxSeq) implements L2Message {
    }

    /** Anyone to agent: the indexes of the file's chunks this agent holds at or past {@code fromIndex}. */
    record ListChunks(long inode, int fromIndex, int max) implements L2Message {
    }

    /** One page of chunk indexes; {@code more} when more follow. */
    record Chunks(List<Integer> indexes, boolean more) implements L2Message {
        public Chunks {
            indexes = List.copyOf(indexes);
        }
    }

    /** The drain, to a chunk's other holders: update {@code seq} of the chunk is durable in L3 (the copy may be evicted). */
    record Drained(ChunkRef chunk, long seq) implements L2Message {
    }

    /**
     * A reader about to restore, to a holder of a chunk durable in L3: have a copy of it (of
     * epoch {@code epoch}), fetching it back from L3 if it was evicted; {@code holders} are the
     * chunk's holders, kept with the copy.
     */
    record Warm(ChunkRef chunk, long epoch, List<Integer> holders) implements L2Message {
        public Warm {
            holders = List.copyOf(holders);
        }
    }

    /** The copy is there: it was already ({@code fetched} false), or {@code bytes} were fetched from L3. */
    record Warmed(boolean fetched, long bytes) implements L2Message {
    }

    /**
     * A prefetch planner to an agent: have a copy of the chunk and pin it for {@code owner} (a
     * scheduler's hint) until {@link Unpin}. Epoch 0 is a chunk of a file never staged: the agent
     * keeps a copy of the file's data version {@code version} (its sequence), reading the chunk
     * from L3 when it has none at that version; a staged chunk is fetched with its staging epoch
     * and warmed as by {@link Warm} ({@code version} unused). {@code holders} are kept with the
     * copy: a staged chunk's holders; for epoch 0, the agents the file's copies were placed among
     * (or none). {@code qos} is the hint's class: the L3 read and the copy's write are scheduled in it.
     */
    record Fetch(ChunkRef chunk, long epoch, long version, List<Integer> holders, long owner, QosClass qos) implements L2Message {
        public Fetch {
            holders = List.copyOf(holders);
        }
    }

    /** The copy is there and pinned: {@code fromL3} when {@code bytes} were read from L3 now, else it was already. */
    record Fetched(boolean fromL3, long bytes) implements L2Message {
    }

    /** A prefetch planner to an agent: drop every pin {@code owner} holds here (the copies become evictable). */
    record Unpin(long owner) implements L2Message {
    }

    /** The pins removed: one per chunk the owner had pinned here. */
    record Unpinned(long chunks) implements L2Message {
    }

    /** A plain acknowledgement. */
    record Ack() implements L2Message {
    }

    /** Tools to agent: what it holds and does. */
    record GetStatus() implements L2Message {
    }

    /**
     * What an agent holds: capacity and used bytes of its store, staged (not yet durable in L3)
     * and cached (drained, evictable) bytes and chunks, bytes drained and the current drain rate,
     * the drain lag (seconds since the oldest undrained update was acknowledged), writes refused
     * for lack of room (a writer wrote those through to L3) and evictions; whether it is fenced,
     * and whether its disk failed (it then takes no new copies until it is restarted); the
     * chunks and bytes pinned by prefetch hints, and the chunks and bytes {@link Fetch} read from L3.
     */
    record Status(long capacityBytes, long usedBytes, long stagedBytes, long stagedChunks, long cachedBytes, long cachedChunks,
                  long drainedBytes, long drainBytesPerSecond, double drainLagSeconds, long refusedFull, long evictions, boolean fenced,
                  boolean diskFailed, long pinnedChunks, long pinnedBytes, long prefetchFetches, long prefetchBytes)
            implements L2Message {
    }
}
