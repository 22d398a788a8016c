package io.strata.protocol.meta;

import java.util.random.RandomGenerator;

/**
 * Identifies one logical operation across its retries (by the KV layer, by the meta client, on
 * another meta instance): the namespace records the result under it, so an operation whose
 * commit may or may not have happened is applied once. The high 48 bits of {@code hi} are the
 * creation time in epoch milliseconds, the other 80 bits random: records then sort by time and
 * expire as one key range (docs/internals/keyspace.md, "Idempotency").
 */
public record RequestId(long hi, long lo) {
    /** A new id stamped with {@code epochMillis}. */
    public static RequestId create(long epochMillis, RandomGenerator r) {
        return new RequestId((epochMillis << 16) | (r.nextInt() & 0xFFFF), r.nextLong());
    }

    /** A new id stamped with the system clock. */
    public static RequestId random(RandomGenerator r) {
        return create(System.currentTimeMillis(), r);
    }

    /** The time the id was made (epoch milliseconds). */
    public long epochMillis() {
        return hi >>> 16;
    }

    @Override
    public String toString() {
        return String.format("%016x%016x", hi, lo);
    }
}
