package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;

/**
 * One decoded inbound frame (wire format v1, docs/internals/wire.md). It <b>owns</b> {@code body}
 * and {@code payload} (retained slices of the connection's receive buffer) until
 * {@link #release()} or until ownership of the payload is handed on with {@link #takePayload()}.
 */
public final class Frame {
    public static final int MAGIC = 0x5354; // "ST"
    public static final int VERSION = 1;
    public static final int HEADER_BYTES = 28;
    public static final int FLAG_RESPONSE = 1;
    /** A request whose body starts with the u64 trace id of the user operation it serves. */
    public static final int FLAG_TRACE = 2;
    static final int KNOWN_FLAGS = FLAG_RESPONSE | FLAG_TRACE;

    private final int flags;
    private final int tag;
    private final int status;
    private final long requestId;
    private final int timeoutMillis;
    private final long traceId;
    private ByteBuf body;
    private ByteBuf payload;

    Frame(int flags, int tag, int status, long requestId, int timeoutMillis, long traceId, ByteBuf body, ByteBuf payload) {
        this.flags = flags;
        this.traceId = traceId;
        this.tag = tag;
        this.status = status;
        this.requestId = requestId;
        this.timeoutMillis = timeoutMillis;
        this.body = body;
        this.payload = payload;
    }

    public boolean isResponse() {
        return (flags & FLAG_RESPONSE) != 0;
    }

    public int tag() {
        return tag;
    }

    public int status() {
        return status;
    }

    public long requestId() {
        return requestId;
    }

    /** For requests: the caller's remaining time budget in ms, 0 for none. */
    public int timeoutMillis() {
        return timeoutMillis;
    }

    /** For requests: the trace id of the user operation it serves, 0 for none. */
    public long traceId() {
        return traceId;
    }

    /** Borrowed: valid until {@link #release()}. */
    public ByteBuf body() {
        return body;
    }

    /** Hands the payload's ownership to the caller; the frame no longer releases it. */
    public ByteBuf takePayload() {
        ByteBuf p = payload;
        payload = null;
        return p;
    }

    public void release() {
        if (body != null) {
            body.release();
            body = null;
        }
        if (payload != null) {
            payload.release();
            payload = null;
        }
    }

    @Override
    public String toString() {
        return (isResponse() ? "response" : "request") + "[id=" + requestId + ", tag=" + tag + ", status=" + status + "]";
    }
}
