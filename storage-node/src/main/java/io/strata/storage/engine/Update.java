package io.strata.storage.engine;

import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;

/**
 * One change to a chunk as the engine applies it. {@code length} is the payload length for
 * WRITE and REPLACE, the new chunk length for TRUNCATE, and 0 for REMOVE; {@code offset} only
 * matters for WRITE.
 */
public record Update(UpdateKind kind, long offset, long length, RequestId request) {
    public Update {
        if (kind == null || request == null) {
            throw new IllegalArgumentException("an update needs a kind and a request id");
        }
    }

    /** The chunk length after this update is applied to content of {@code baseLength} bytes. */
    public long resultLength(long baseLength) {
        return switch (kind) {
            case WRITE -> Math.max(baseLength, offset + length);
            case TRUNCATE, REPLACE -> length;
            case REMOVE -> 0;
        };
    }
}
