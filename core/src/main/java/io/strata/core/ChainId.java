package io.strata.core;

/** A replication chain (an ordered list of targets). Chain ids are global; tables list them. */
public record ChainId(int value) implements Comparable<ChainId> {
    public ChainId {
        if (value <= 0) {
            throw new IllegalArgumentException("chain id must be positive, got " + value);
        }
    }

    public static ChainId of(int value) {
        return new ChainId(value);
    }

    @Override
    public int compareTo(ChainId o) {
        return Integer.compare(value, o.value);
    }

    @Override
    public String toString() {
        return "chain-" + value;
    }
}
