package io.strata.l3;

/** Which serving replica of a chain a read goes to first (the others are its fallbacks). */
public enum ReadPolicy {
    /** A replica drawn at random per read: spreads load without coordination. */
    RANDOM,
    /** Replicas in turn, per client. */
    ROUND_ROBIN,
    /** A replica on the client's own host when there is one, else random. */
    PREFER_LOCAL,
    /**
     * The replica the chunk's id picks: every client reads a chunk from the same replica (while
     * the chain's serving replicas stay the same), so each node's page cache holds its share of
     * the chunks instead of all of them; load spreads over chunks instead of over reads.
     */
    BY_CHUNK
}
