package io.strata.protocol.meta;

/** An open file: the session to close it with, and its attributes (layout, length, dataVersion). */
public record OpenResult(long sessionId, InodeAttrs attrs) {
}
