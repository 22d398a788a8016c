package io.strata.protocol.meta;

/**
 * A new entry and the directory it was made in, as the directory is right after the change (its
 * times moved on, a subdirectory more for a mkdir): what {@code mkdir} and {@code symlink}
 * answer, so that a client keeping directory attributes need not look the directory up again.
 */
public record InDir(InodeAttrs attrs, InodeAttrs dir) {
}
