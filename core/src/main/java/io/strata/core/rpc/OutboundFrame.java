package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.util.AbstractReferenceCounted;
import io.netty.util.ReferenceCounted;
import io.strata.core.StrataException;

/**
 * A frame on its way out: a message (or an error) and a payload it <b>owns</b>. It is reference
 * counted so that Netty releases the payload even when the write never reaches the encoder (a
 * channel that closed meanwhile). {@link FrameEncoder} takes the payload over with
 * {@link #takePayload()} and emits header+body and the untouched payload.
 */
final class OutboundFrame extends AbstractReferenceCounted {
    private final boolean response;
    private final long requestId;
    private final int timeoutMillis;
    private final long traceId;
    private final MessageType<?> type;
    private final Message message;
    private final StrataException error;
    private Payload payload;

    private OutboundFrame(boolean response, long requestId, int timeoutMillis, long traceId, MessageType<?> type,
                          Message message, StrataException error, Payload payload) {
        this.response = response;
        this.traceId = traceId;
        this.requestId = requestId;
        this.timeoutMillis = timeoutMillis;
        this.type = type;
        this.message = message;
        this.error = error;
        this.payload = payload;
    }

    static OutboundFrame request(long id, int timeoutMillis, MessageType<?> type, Message m, Payload p) {
        return request(id, timeoutMillis, 0, type, m, p);
    }

    /** A request serving the user operation {@code traceId} (0: none). */
    static OutboundFrame request(long id, int timeoutMillis, long traceId, MessageType<?> type, Message m, Payload p) {
        return new OutboundFrame(false, id, timeoutMillis, traceId, type, m, null, p);
    }

    static OutboundFrame response(long id, MessageType<?> type, Message m, Payload p) {
        return new OutboundFrame(true, id, 0, 0, type, m, null, p);
    }

    static OutboundFrame error(long id, StrataException e) {
        return new OutboundFrame(true, id, 0, 0, null, null, e, Payload.NONE);
    }

    boolean response() {
        return response;
    }

    long requestId() {
        return requestId;
    }

    int timeoutMillis() {
        return timeoutMillis;
    }

    long traceId() {
        return traceId;
    }

    MessageType<?> type() {
        return type;
    }

    Message message() {
        return message;
    }

    StrataException error() {
        return error;
    }

    long payloadLength() {
        return payload == null ? 0 : payload.length();
    }

    /** Hands the payload to the caller; releasing this frame no longer touches it. */
    Payload takePayload() {
        Payload p = payload == null ? Payload.NONE : payload;
        payload = null;
        return p;
    }

    String name() {
        return error != null ? "Error(" + error.status() + ")" : type.name();
    }

    /** A second frame sharing the payload bytes (retained), for the duplicate-message fault. */
    OutboundFrame retainedDuplicate() {
        Payload p = payload instanceof Payload.Bytes b ? Payload.of(b.buf().retainedDuplicate()) : Payload.NONE;
        return new OutboundFrame(response, requestId, timeoutMillis, traceId, type, message, error, p);
    }

    /** Writes the error body: message (u32 length + UTF-8), then the exception's own detail. */
    static void encodeError(StrataException e, ByteBuf out) {
        String msg = e.getMessage() == null ? "" : e.getMessage();
        if (msg.length() > 4096) {
            msg = msg.substring(0, 4096) + "...";
        }
        Wire.writeString(out, msg);
        e.encodeDetail(out);
    }

    @Override
    protected void deallocate() {
        if (payload != null) {
            payload.release();
            payload = null;
        }
    }

    @Override
    public ReferenceCounted touch(Object hint) {
        return this;
    }
}
