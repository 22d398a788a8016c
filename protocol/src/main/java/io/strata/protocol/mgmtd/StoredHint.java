package io.strata.protocol.mgmtd;

import java.util.Arrays;
import java.util.Objects;

/**
 * A scheduler hint as the cluster manager keeps it: an opaque value (the scheduler hooks encode
 * it as JSON; the manager never looks inside) under an id the manager gave it, and a version
 * that starts at 1 and grows by one with every replacement, for compare-and-set updates. Ids
 * start at 1 and are never reused, even after a delete.
 *
 * <p>The array is not copied: whoever builds a hint hands the array over and nobody changes it
 * afterwards.
 */
public record StoredHint(long id, long version, byte[] value) {
    /** Largest value one hint may hold. */
    public static final int MAX_VALUE_BYTES = 256 * 1024;
    /** Most hints the manager holds at once. */
    public static final int MAX_HINTS = 65_536;
    /**
     * Most value bytes the manager holds at once, over all hints. The manager keeps every hint in
     * memory on each peer and writes them into every snapshot, so the total is bounded too, well
     * below {@link #MAX_HINTS} full-size values.
     */
    public static final long MAX_TOTAL_BYTES = 64L << 20;

    public StoredHint {
        Objects.requireNonNull(value, "value");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredHint h && h.id == id && h.version == version && Arrays.equals(h.value, value);
    }

    @Override
    public int hashCode() {
        return (Long.hashCode(id) * 31 + Long.hashCode(version)) * 31 + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
        return "StoredHint[id=" + id + ", version=" + version + ", " + value.length + " bytes]";
    }
}
