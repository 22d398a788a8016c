package io.strata.l3;

/** Which serving replica of a chain a read goes to first (the others are its fallbacks). */
public enum ReadPolicy {
    /** A replica drawn at random per read: spreads load without coordination. */
    RANDOM,
    /** Replicas in turn, per client. */
    ROUND_ROBIN,
    /** A replica on the client's own host when there is one, else random. */
    PREFER_LOCAL
}
