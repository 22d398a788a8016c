package io.strata.core;

/** One chunk store on one disk of one storage node. Positive. */
public record TargetId(long value) implements Comparable<TargetId> {
    public TargetId {
        if (value <= 0) {
            throw new IllegalArgumentException("target id must be positive, got " + value);
        }
    }

    public static TargetId of(long value) {
        return new TargetId(value);
    }

    @Override
    public int compareTo(TargetId o) {
        return Long.compare(value, o.value);
    }

    @Override
    public String toString() {
        return "target-" + value;
    }
}
