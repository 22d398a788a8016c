package io.strata.core.rpc;

/**
 * A request or response body. Each service declares its messages as records under a sealed
 * interface extending this one, and a {@link MessageType} per record with an explicit wire tag.
 * Bulk data never lives in a message: it travels beside it as the frame's payload.
 */
public interface Message {
}
