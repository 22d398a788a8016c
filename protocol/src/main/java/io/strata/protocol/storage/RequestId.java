package io.strata.protocol.storage;

/**
 * Identifies one client update across retries: the client's random 64-bit id and its own
 * sequence number. A retried (or duplicated) write carries the same id, so the chain applies it
 * once. {@link #NONE} marks internal updates (none today).
 */
public record RequestId(long client, long seq) {
    public static final RequestId NONE = new RequestId(0, 0);

    @Override
    public String toString() {
        return Long.toHexString(client) + "/" + seq;
    }
}
