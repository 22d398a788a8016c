package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.trace.Trace;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import io.strata.core.fault.FaultScope;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Server side of one connection: decodes requests, runs their handlers, writes responses, and
 * keeps the number of running requests under {@link RpcOptions#serverMaxInFlight()} by pausing
 * reads. Requests decoded from bytes already read when the limit is reached wait in
 * {@link #held} (at most what one socket read carried) and run as slots free up.
 *
 * <p>It also closes the connection when the {@code IdleStateHandler} ahead of it reports that
 * the peer stopped sending in the middle of a frame for {@link RpcOptions#readTimeout()}, or
 * that nothing has moved either way for {@link RpcOptions#idleTimeout()} while no request was
 * outstanding.
 *
 * <p>With a {@link TokenVerifier} (the node context's), the connection must authenticate first:
 * the first frame has to be an {@code Authenticate} whose token the verifier accepts, of a role
 * in {@link #admitted}. Anything else is answered with UNAUTHENTICATED or PERMISSION_DENIED and
 * the connection is closed; nothing the peer sent is decoded beyond that first frame. Once
 * authenticated, every request carries the token's claims ({@link Request#caller()}) and is
 * checked against its message's allowed roles, and against the verifier's revocation list: the
 * first request after its token is revoked is answered UNAUTHENTICATED and the connection closed.
 *
 * <p>All its fields are touched only on the channel's event loop.
 */
final class ServerConnection extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(ServerConnection.class);

    private final NodeContext node;
    private final Protocol protocol;
    private final Map<Integer, RpcServer.Registered<?>> handlers;
    private final TokenVerifier verifier;
    private final Set<Role> admitted;
    private final RpcOptions options;
    private final RpcMetrics metrics;
    private final FrameDecoder decoder;
    private final ArrayDeque<Frame> held = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    private Flusher flusher;
    private int inFlight;
    private boolean open = true;
    private boolean servingHeld;
    /** The verified token of this connection; null until it authenticated (or always, without a verifier). */
    private Token caller;
    private final IdentityLimits limits;
    /** The caller's share of the server ({@link IdentityLimits}); null until it authenticated, or without a verifier. */
    private IdentityLimits.Identity identity;
    /** Whether this connection stopped reading because its identity was at its limit (for the count of pauses). */
    private boolean pausedByIdentity;
    /** Serves held requests again once a request of this connection's identity finished elsewhere. */
    private final Runnable wake = () -> {
        try {
            ctx.executor().execute(() -> {
                serveHeld();
                updateReading();
            });
        } catch (RejectedExecutionException e) {
            // shutting down: nothing more is served
        }
    };

    ServerConnection(NodeContext node, Protocol protocol, Map<Integer, RpcServer.Registered<?>> handlers, Set<Role> admitted,
                     RpcOptions options, RpcMetrics metrics, FrameDecoder decoder, IdentityLimits limits) {
        this.node = node;
        this.protocol = protocol;
        this.handlers = handlers;
        this.verifier = node.verifier().orElse(null);
        this.admitted = admitted;
        this.options = options;
        this.metrics = metrics;
        this.decoder = decoder;
        this.limits = limits;
    }

    /** Whether this connection's identity runs as many requests on this server as it may. */
    private boolean identityFull() {
        return identity != null && identity.full();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.flusher = new Flusher(ctx.channel());
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Frame frame = (Frame) msg;
        if (!open) { // refused: what the peer sent behind it is not looked at
            frame.release();
            return;
        }
        if (inFlight < options.serverMaxInFlight() && held.isEmpty() && !identityFull()) {
            serve(frame);
        } else {
            held.add(frame);
        }
        updateReading();
    }

    private void serve(Frame frame) {
        try {
            dispatch(frame);
        } catch (Wire.Malformed e) {
            frame.release();
            throw e;
        }
    }

    /** Runs held requests while there are free slots; a handler that answers at once re-enters here. */
    private void serveHeld() {
        if (servingHeld) {
            return;
        }
        servingHeld = true;
        try {
            while (open && !held.isEmpty() && inFlight < options.serverMaxInFlight() && !identityFull()) {
                serve(held.poll());
            }
        } catch (Wire.Malformed e) {
            exceptionCaught(ctx, e);
        } finally {
            servingHeld = false;
        }
    }

    private void dispatch(Frame frame) {
        if (frame.isResponse()) {
            throw new Wire.Malformed("a server received a response frame (id " + frame.requestId() + ")");
        }
        if (frame.tag() == CoreMessages.AUTHENTICATE.tag()) {
            authenticate(frame);
            return;
        }
        MessageType<?> type = protocol.byTag(frame.tag());
        String name = type == null ? "tag-" + frame.tag() : type.name();
        if (verifier != null && caller == null) {
            frame.release();
            refuse(frame.requestId(), name, new StrataException(Status.UNAUTHENTICATED, node.name()
                    + " requires authentication: the first message on a connection must be Authenticate with a token, got " + name));
            return;
        }
        if (caller != null && verifier.isRevoked(caller)) {
            frame.release();
            refuse(frame.requestId(), name, new StrataException(Status.UNAUTHENTICATED, node.name() + " closes the connection: "
                    + TokenVerifier.revokedError(caller).getMessage()));
            return;
        }
        RpcServer.Registered<?> reg = type == null ? null : handlers.get(type.tag());
        if (reg != null && caller != null && reg.roles() != null && !reg.roles().contains(caller.role())) {
            frame.release();
            send(OutboundFrame.error(frame.requestId(), new StrataException(Status.PERMISSION_DENIED, "role " + caller.role()
                    + " (subject " + caller.subject() + ") may not send " + name + " to " + node.name() + "; allowed: "
                    + roles(reg.roles()))), name);
            metrics.served(name, Status.PERMISSION_DENIED.name());
            return;
        }
        if (reg == null) {
            frame.release();
            String what = type == null ? "unknown message tag " + frame.tag() : "no handler for " + type.name();
            send(OutboundFrame.error(frame.requestId(), new StrataException(Status.UNKNOWN_MESSAGE, what + " on " + node.name())), name);
            return;
        }
        Message message = protocol.decode(type, frame.body());
        long now = node.clock().nanoTime();
        long deadline = frame.timeoutMillis() == 0 ? Long.MAX_VALUE
                : now + TimeUnit.MILLISECONDS.toNanos(frame.timeoutMillis());
        ByteBuf payload = frame.takePayload(); // null when the frame has none
        frame.release();
        metrics.bytesIn(payload == null ? 0 : payload.readableBytes());
        inFlight++;
        if (identity != null) {
            identity.started();
        }
        updateReading();
        run(reg, message, payload, frame.requestId(), deadline, frame.traceId(), now);
    }

    /**
     * The handshake: verifies the token and admits the connection, or refuses it. A server
     * without a verifier answers too (unverified), so that a client holding a token can talk to
     * any server.
     */
    private void authenticate(Frame frame) {
        String name = CoreMessages.AUTHENTICATE.name();
        CoreMessage.Authenticate m;
        try {
            m = (CoreMessage.Authenticate) protocol.decode(CoreMessages.AUTHENTICATE, frame.body());
        } finally {
            frame.release();
        }
        if (verifier == null) {
            send(OutboundFrame.response(frame.requestId(), CoreMessages.AUTHENTICATED,
                    new CoreMessage.Authenticated(node.name(), false), Payload.NONE), name);
            return;
        }
        if (caller != null) {
            refuse(frame.requestId(), name, new StrataException(Status.UNAUTHENTICATED,
                    "this connection is authenticated already (as " + caller.role() + " " + caller.subject() + ")"));
            return;
        }
        Token t;
        try {
            t = verifier.verify(m.token(), node.clock().now());
        } catch (StrataException e) {
            refuse(frame.requestId(), name, new StrataException(Status.UNAUTHENTICATED, node.name() + " refused the connection: "
                    + e.getMessage()));
            return;
        }
        if (!admitted.contains(t.role())) {
            refuse(frame.requestId(), name, new StrataException(Status.PERMISSION_DENIED, "role " + t.role() + " (subject "
                    + t.subject() + ") may not connect to " + node.name() + "; it admits " + roles(admitted)));
            return;
        }
        caller = t;
        identity = limits == null ? null : limits.of(t);
        LOG.debug("{}: connection from {} authenticated as {}", node.name(), ctx.channel().remoteAddress(), t);
        metrics.served(name, "OK");
        send(OutboundFrame.response(frame.requestId(), CoreMessages.AUTHENTICATED,
                new CoreMessage.Authenticated(node.name(), true), Payload.NONE), name);
    }

    /** Answers {@code id} with {@code why} and closes the connection once the answer is out; reads nothing more. */
    private void refuse(long id, String name, StrataException why) {
        LOG.debug("{}: closing connection from {}: {}", node.name(), ctx.channel().remoteAddress(), why.getMessage());
        metrics.served(name, why.status().name());
        open = false;
        ctx.channel().config().setAutoRead(false);
        ctx.writeAndFlush(OutboundFrame.error(id, why)).addListener(ChannelFutureListener.CLOSE);
    }

    private static String roles(Set<Role> roles) {
        return roles.stream().sorted().map(Role::id).collect(java.util.stream.Collectors.joining(", "));
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private void run(RpcServer.Registered reg, Message message, ByteBuf payload, long id, long deadline, long trace, long received) {
        Request request = new Request(message, payload, ctx.channel().remoteAddress(), caller, id, deadline, ctx.alloc(), trace, received);
        String name = reg.type().name();
        Runnable task = () -> {
            CompletableFuture<Reply> f;
            try (Trace.Scope scope = Trace.open(trace, note -> request.note(note))) {
                f = reg.handler().handle(request);
                if (f == null) {
                    f = CompletableFuture.failedFuture(new StrataException(Status.INTERNAL, name + " handler returned null"));
                }
            } catch (Throwable t) {
                f = CompletableFuture.failedFuture(t);
            }
            // a long poll holds no slot of its identity while it waits: many processes may share one token
            boolean holdsSlot = identity == null || request.keepIfSlow();
            if (!holdsSlot) {
                identity.finished();
            }
            f.whenComplete((reply, error) -> complete(request, name, reply, error, holdsSlot));
        };
        if (reg.executor() == null) {
            task.run();
        } else {
            try {
                reg.executor().execute(task);
            } catch (RejectedExecutionException e) {
                complete(request, name, null, new StrataException(Status.SHUTTING_DOWN, node.name() + " is shutting down"), true);
            }
        }
    }

    private void complete(Request<?> request, String name, Reply reply, Throwable error, boolean holdsSlot) {
        request.releasePayload();
        OutboundFrame out = null;
        String status = "OK";
        if (error == null && reply == null) {
            error = new StrataException(Status.INTERNAL, name + " handler completed with no reply");
        }
        if (error == null) {
            try {
                out = OutboundFrame.response(request.requestId(), protocol.typeOf(reply.message()), reply.message(), reply.payload());
            } catch (RuntimeException e) { // a reply this protocol cannot send: answered as an error, the slots still freed
                reply.payload().release();
                error = e;
            }
        }
        if (error != null) {
            StrataException se = StrataException.wrap(error);
            if (se.status() == Status.INTERNAL) {
                LOG.warn("{}: {} from {} failed", node.name(), name, request.peer(), error);
            }
            out = OutboundFrame.error(request.requestId(), se);
            status = se.status().name();
        }
        metrics.served(name, status);
        long took = node.clock().nanoTime() - request.receivedNanos();
        if (request.keepIfSlow() && node.slowOps().isSlow(took)) {
            String notes = request.notes();
            node.slowOps().record(request.trace(), "serve", name + " from " + request.peer(), took,
                    notes.isEmpty() ? status : status + "; " + notes);
        }
        OutboundFrame answer = out;
        if (ctx.executor().inEventLoop()) {
            finish(answer, name, holdsSlot);
        } else {
            try {
                ctx.executor().execute(() -> finish(answer, name, holdsSlot));
            } catch (RejectedExecutionException e) {
                answer.release();
                if (identity != null && holdsSlot) {
                    identity.finished();
                }
            }
        }
    }

    private void finish(OutboundFrame out, String name, boolean holdsSlot) {
        inFlight--;
        if (identity != null && holdsSlot) {
            identity.finished();
        }
        send(out, name);
        serveHeld();
        updateReading();
    }

    private void send(OutboundFrame out, String name) {
        if (!open) {
            out.release();
            return;
        }
        metrics.bytesOut(out.payloadLength());
        Optional<Fault> fault = node.faults().check(FaultPoint.RPC_SEND,
                FaultScope.of(name, String.valueOf(ctx.channel().remoteAddress())));
        if (fault.isPresent()) {
            switch (fault.get()) {
                case Fault.Drop d -> {
                    out.release();
                    return;
                }
                case Fault.Delay d -> {
                    ctx.executor().schedule(() -> send(out, name + "(delayed)"), d.delay().toNanos(), TimeUnit.NANOSECONDS);
                    return;
                }
                case Fault.Duplicate d -> flusher.write(out.retainedDuplicate());
                case Fault.Disconnect d -> {
                    out.release();
                    ctx.close();
                    return;
                }
                case Fault.Fail f -> {
                    out.release();
                    flusher.write(OutboundFrame.error(out.requestId(), f.error()));
                    return;
                }
                case Fault.Crash c -> Runtime.getRuntime().halt(137);
            }
        }
        flusher.write(out);
    }

    /**
     * Reads only while under the in-flight limits (the connection's and its identity's), with
     * nothing held, and while responses drain; a connection paused by its identity's limit is
     * woken when a request of that identity finishes.
     */
    private void updateReading() {
        boolean full = identityFull();
        boolean read = open && inFlight < options.serverMaxInFlight() && held.isEmpty() && ctx.channel().isWritable() && !full;
        if (full && open) {
            if (!pausedByIdentity) {
                pausedByIdentity = true;
                identity.paused();
            }
            identity.await(wake);
        } else if (read) {
            pausedByIdentity = false;
        }
        if (ctx.channel().config().isAutoRead() != read) {
            ctx.channel().config().setAutoRead(read);
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        updateReading();
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof SslHandshakeCompletionEvent hs && !hs.isSuccess()) {
            // a plaintext peer, a certificate of another CA, an expired one: the SslHandler closes the connection
            metrics.tlsFailure();
            LOG.debug("{}: TLS handshake with {} failed: {}", node.name(), ctx.channel().remoteAddress(), String.valueOf(hs.cause()));
            open = false;
            ctx.close();
            return;
        }
        if (!(evt instanceof IdleStateEvent idle)) {
            ctx.fireUserEventTriggered(evt);
            return;
        }
        // Not reading because this side paused reads is not the peer's stall.
        if (idle.state() == IdleState.READER_IDLE && decoder.midFrame() && ctx.channel().config().isAutoRead()) {
            timedOut("read", "sent part of a frame and then nothing for " + options.readTimeout());
        } else if (idle.state() == IdleState.ALL_IDLE && inFlight == 0 && held.isEmpty()) {
            timedOut("idle", "idle for " + options.idleTimeout());
        }
    }

    private void timedOut(String timeout, String why) {
        LOG.debug("{}: closing connection from {}: {}", node.name(), ctx.channel().remoteAddress(), why);
        metrics.connectionTimedOut(timeout);
        decoder.abandon();
        open = false;
        ctx.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        open = false;
        if (identity != null) {
            identity.forget(wake);
        }
        Frame f;
        while ((f = held.poll()) != null) {
            f.release();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable c = cause instanceof io.netty.handler.codec.DecoderException && cause.getCause() != null
                ? cause.getCause() : cause;
        if (c instanceof Wire.Malformed) {
            metrics.badFrame();
            LOG.warn("{}: closing connection from {}: malformed frame: {}", node.name(), ctx.channel().remoteAddress(), c.getMessage());
        } else if (c instanceof java.io.IOException) {
            LOG.debug("{}: connection from {} failed: {}", node.name(), ctx.channel().remoteAddress(), c.toString());
        } else {
            LOG.warn("{}: closing connection from {}", node.name(), ctx.channel().remoteAddress(), c);
        }
        open = false;
        ctx.close();
    }
}
