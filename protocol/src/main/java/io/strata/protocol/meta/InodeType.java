package io.strata.protocol.meta;

import io.strata.core.rpc.Wire;

/** What an inode is. Wire and storage tags are explicit. */
public enum InodeType implements Wire.Tagged {
    FILE(1),
    DIRECTORY(2),
    SYMLINK(3);

    private final int tag;

    InodeType(int tag) {
        this.tag = tag;
    }

    @Override
    public int wireTag() {
        return tag;
    }
}
