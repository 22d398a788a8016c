package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;

/**
 * A successful reply: its message and its payload. The caller <b>owns</b> the payload and must
 * {@link #close()} the response (or take the payload with {@link #takePayload()} and release it).
 */
public final class Response implements AutoCloseable {
    private final Message message;
    private ByteBuf payload;

    Response(Message message, ByteBuf payload) {
        this.message = message;
        this.payload = payload == null ? Unpooled.EMPTY_BUFFER : payload;
    }

    public Message message() {
        return message;
    }

    /** The message as {@code type}; a different reply is a protocol error (BAD_FRAME). */
    public <M extends Message> M message(Class<M> type) {
        if (!type.isInstance(message)) {
            throw new StrataException(Status.BAD_FRAME,
                    "expected a " + type.getSimpleName() + " reply, got " + message.getClass().getSimpleName());
        }
        return type.cast(message);
    }

    /** Borrowed: valid until {@link #close()}. */
    public ByteBuf payload() {
        return payload;
    }

    /** Transfers ownership of the payload to the caller. */
    public ByteBuf takePayload() {
        ByteBuf p = payload;
        payload = Unpooled.EMPTY_BUFFER;
        return p;
    }

    @Override
    public void close() {
        if (payload.refCnt() > 0 && payload != Unpooled.EMPTY_BUFFER) {
            payload.release();
        }
        payload = Unpooled.EMPTY_BUFFER;
    }
}
