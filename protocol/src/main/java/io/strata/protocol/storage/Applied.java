package io.strata.protocol.storage;

/** A request id a replica remembers and the chunk version it produced (a retried write is recognised by it). */
public record Applied(RequestId request, long version) {
    /** How many applied requests a replica remembers per chunk (and resync copies). */
    public static final int REMEMBERED = 8;
}
