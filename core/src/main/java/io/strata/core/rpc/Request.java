package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.net.SocketAddress;

/**
 * One inbound request as a handler sees it. The payload is <b>borrowed</b>: valid until the
 * future the handler returned completes, then released by the RPC layer. A handler that keeps
 * the bytes longer (to forward them down a chain, say) calls {@link #takePayload()} and then
 * owns them.
 */
public final class Request<M extends Message> {
    private final M message;
    private final SocketAddress peer;
    private final long requestId;
    private final long deadlineNanos;
    private final ByteBufAllocator alloc;
    private ByteBuf payload;

    Request(M message, ByteBuf payload, SocketAddress peer, long requestId, long deadlineNanos, ByteBufAllocator alloc) {
        this.alloc = alloc;
        this.message = message;
        this.payload = payload == null ? Unpooled.EMPTY_BUFFER : payload;
        this.peer = peer;
        this.requestId = requestId;
        this.deadlineNanos = deadlineNanos;
    }

    public M message() {
        return message;
    }

    /** Borrowed until the handler's future completes. */
    public ByteBuf payload() {
        return payload;
    }

    /** Transfers ownership of the payload to the handler. */
    public ByteBuf takePayload() {
        ByteBuf p = payload;
        payload = Unpooled.EMPTY_BUFFER;
        return p;
    }

    /** The connection's allocator, for reply payloads. */
    public ByteBufAllocator alloc() {
        return alloc;
    }

    public SocketAddress peer() {
        return peer;
    }

    public long requestId() {
        return requestId;
    }

    /** The node clock's nanoTime by which the caller stops waiting; Long.MAX_VALUE when it gave none. */
    public long deadlineNanos() {
        return deadlineNanos;
    }

    void releasePayload() {
        ByteBuf p = payload;
        payload = Unpooled.EMPTY_BUFFER;
        if (p != Unpooled.EMPTY_BUFFER && p.refCnt() > 0) {
            p.release();
        }
    }
}
