package io.strata.protocol.meta;

import io.strata.core.InodeId;

/** One name in a directory; {@code attrs} is filled only when the caller asked for attributes. */
public record DirEntry(String name, InodeId inode, InodeType type, InodeAttrs attrs) {
}
