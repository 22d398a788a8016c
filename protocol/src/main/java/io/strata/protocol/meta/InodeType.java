package io.strata.protocol.meta;

import io.strata.core.rpc.Wire;

/**
 * What an inode is. Wire and storage tags are explicit. The four special types (FIFO, socket,
 * character and block device) are names only: the namespace stores their type, mode, owner and
 * times (and a device's number), never data; the kernel serves their I/O.
 */
public enum InodeType implements Wire.Tagged {
    FILE(1),
    DIRECTORY(2),
    SYMLINK(3),
    FIFO(4),
    SOCKET(5),
    CHAR_DEVICE(6),
    BLOCK_DEVICE(7);

    private final int tag;

    InodeType(int tag) {
        this.tag = tag;
    }

    @Override
    public int wireTag() {
        return tag;
    }

    /** A FIFO, socket or device: created by mknod, never opened through the namespace. */
    public boolean isSpecial() {
        return this == FIFO || this == SOCKET || this == CHAR_DEVICE || this == BLOCK_DEVICE;
    }

    /** A character or block device: the only types with a device number. */
    public boolean isDevice() {
        return this == CHAR_DEVICE || this == BLOCK_DEVICE;
    }
}
