package io.strata.core;

/** A 64-bit inode number; {@link #ROOT} is the root directory. Zero is never an inode. */
public record InodeId(long value) implements Comparable<InodeId> {
    public static final InodeId ROOT = new InodeId(1);

    public InodeId {
        if (value == 0) {
            throw new IllegalArgumentException("inode id 0 is reserved");
        }
    }

    public static InodeId of(long value) {
        return new InodeId(value);
    }

    @Override
    public int compareTo(InodeId o) {
        return Long.compareUnsigned(value, o.value);
    }

    @Override
    public String toString() {
        return "inode-" + Long.toUnsignedString(value);
    }
}
