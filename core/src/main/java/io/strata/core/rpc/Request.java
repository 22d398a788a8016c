package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.Token;
import java.net.SocketAddress;
import java.util.Optional;

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
    private final Token caller;
    private final long trace;
    private final long receivedNanos;
    private ByteBuf payload;
    private java.util.List<java.util.function.Supplier<String>> notes;
    private volatile boolean waitsByDesign;

    Request(M message, ByteBuf payload, SocketAddress peer, Token caller, long requestId, long deadlineNanos, ByteBufAllocator alloc,
            long trace, long receivedNanos) {
        this.alloc = alloc;
        this.trace = trace;
        this.receivedNanos = receivedNanos;
        this.caller = caller;
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

    /**
     * Who sent it: the verified token of its connection. Empty when the server does not
     * authenticate (no {@link io.strata.core.NodeContext#verifier()}): then anyone may send
     * anything, and a handler's own identity checks must let the request through.
     */
    public Optional<Token> caller() {
        return Optional.ofNullable(caller);
    }

    /**
     * Fails with PERMISSION_DENIED unless the caller's subject is {@code subject} (when the
     * server authenticates): for requests that speak for one identity, such as a node
     * registering itself.
     */
    public void requireSubject(String subject, String what) {
        if (caller != null && !caller.subject().equals(subject)) {
            throw new StrataException(Status.PERMISSION_DENIED, caller.role() + " "
                    + caller.subject() + " may not " + what + " (its token speaks for " + caller.subject() + " only)");
        }
    }

    public long requestId() {
        return requestId;
    }

    /** The trace id of the user operation this request serves (0: none); the handler runs under it. */
    public long trace() {
        return trace;
    }

    /** The node clock's nanoTime when the request was read. */
    public long receivedNanos() {
        return receivedNanos;
    }

    /**
     * Adds a note ("queued 12 ms for a device slot") that is shown with this request if it turns
     * out slow ({@link io.strata.core.trace.SlowOps}). Any thread.
     */
    public void note(String note) {
        note(() -> note);
    }

    /** As {@link #note(String)}, the text built only if the request is shown as slow. */
    public synchronized void note(java.util.function.Supplier<String> note) {
        if (notes == null) {
            notes = new java.util.ArrayList<>(2);
        }
        notes.add(note);
    }

    /** Marks a request that waits by design (a long poll): it is never kept as a slow operation. */
    public void waitsByDesign() {
        waitsByDesign = true;
    }

    boolean keepIfSlow() {
        return !waitsByDesign;
    }

    synchronized String notes() {
        if (notes == null) {
            return "";
        }
        StringBuilder b = new StringBuilder();
        for (java.util.function.Supplier<String> n : notes) {
            b.append(b.isEmpty() ? "" : "; ").append(n.get());
        }
        return b.toString();
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
