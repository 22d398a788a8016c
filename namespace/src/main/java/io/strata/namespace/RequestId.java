package io.strata.namespace;

import java.util.random.RandomGenerator;

/**
 * Identifies one logical operation across its retries (by the KV layer, by the meta client, on
 * another meta instance): the namespace records the result under it, so an operation whose
 * commit may or may not have happened is applied once. 128 random bits.
 */
public record RequestId(long hi, long lo) {
    public static RequestId random(RandomGenerator r) {
        return new RequestId(r.nextLong(), r.nextLong());
    }

    @Override
    public String toString() {
        return String.format("%016x%016x", hi, lo);
    }
}
