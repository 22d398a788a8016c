package io.strata.protocol.storage;

import io.strata.core.rpc.Wire;

/** What an update does to a chunk. Wire tags are explicit and never reused. */
public enum UpdateKind implements Wire.Tagged {
    /** Bytes at an offset; the chunk grows to cover them (a gap reads as zeros). */
    WRITE(1),
    /** Sets the length: shrinking drops bytes, growing adds zeros. */
    TRUNCATE(2),
    /** Removes the chunk (it then reads as empty). */
    REMOVE(3),
    /** Replaces the whole content with the payload (a chunk rebuilt elsewhere: resync, roll-forward). */
    REPLACE(4);

    private final int tag;

    UpdateKind(int tag) {
        this.tag = tag;
    }

    @Override
    public int wireTag() {
        return tag;
    }
}
