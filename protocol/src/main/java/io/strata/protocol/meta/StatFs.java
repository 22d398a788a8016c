package io.strata.protocol.meta;

/** Namespace-wide usage: inodes in use and the bytes their recorded lengths add up to. */
public record StatFs(long inodes, long bytes) {
}
