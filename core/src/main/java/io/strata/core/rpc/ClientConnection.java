package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.concurrent.ScheduledFuture;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.Credentials;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import io.strata.core.fault.FaultScope;
import java.util.ArrayDeque;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Client side of one TCP connection: assigns request ids, matches responses to callers, enforces
 * deadlines, and bounds the requests in flight. A call beyond {@link RpcOptions#maxInFlight()}
 * (or while the socket's send buffer is full) waits in a queue of at most
 * {@link RpcOptions#maxQueued()} calls; beyond that it fails at once with OVERLOADED.
 *
 * <p>With {@link Credentials}, the first frame on the connection is an {@code Authenticate}
 * with the token, and calls wait (as while connecting) until the server accepted it; a refusal
 * fails them, and every later call on this connection, with the server's UNAUTHENTICATED or
 * PERMISSION_DENIED.
 *
 * <p>Over TLS ({@link NodeContext#tls()}) nothing is sent before the handshake completed; a
 * failed handshake, or a server that refuses this side's certificate before it answered the
 * {@code Authenticate}, fails the waiting calls with CONNECTION_FAILED and the TLS reason.
 *
 * <p>All state is confined to the channel's event loop; {@link #call} hops there.
 */
final class ClientConnection extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(ClientConnection.class);

    private final NodeContext node;
    private final Protocol protocol;
    private final RpcOptions options;
    private final RpcMetrics metrics;
    private final String peer;
    private final Credentials credentials;
    /** An SslHandler is in front of this handler: start once its handshake succeeded. */
    private final boolean tls;
    private final LongObjectHashMap<Call> pending = new LongObjectHashMap<>();
    private final ArrayDeque<Call> waiting = new ArrayDeque<>();
    private final EventLoop loop;
    private Channel channel;
    private Flusher flusher;
    private long nextId = 1;
    /** False until connected and, with credentials, authenticated; calls made meanwhile wait in {@link #waiting}. */
    private boolean connected;
    /** The request id of the {@code Authenticate} awaiting its answer; 0 when none is. */
    private long authId;
    private volatile boolean closed;
    /** Why connecting failed, when it did: what later calls on this connection fail with too. */
    private volatile StrataException connectFailure;
    private String closeReason = "connection closed";
    private boolean closingByThisClient;
    /** Calls claimed on this connection that have not completed (any thread). */
    private final AtomicInteger users = new AtomicInteger();
    /** When the last claimed call completed, or when the connection was made: see {@link #quietFor}. */
    private volatile long quietSinceNanos;

    ClientConnection(NodeContext node, Protocol protocol, RpcOptions options, RpcMetrics metrics, String peer, EventLoop loop,
                     Credentials credentials, boolean tls) {
        this.node = node;
        this.credentials = credentials;
        this.tls = tls;
        this.protocol = protocol;
        this.options = options;
        this.metrics = metrics;
        this.peer = peer;
        this.loop = loop;
        this.quietSinceNanos = node.clock().nanoTime();
    }

    /** One outstanding call; touched on the event loop only, except for the future. */
    private final class Call {
        final MessageType<?> type;
        final Message message;
        Payload payload;
        final CompletableFuture<Response> future;
        final long timeoutNanos;
        final long startNanos;
        final long trace;
        final boolean keepIfSlow;
        long id;
        ScheduledFuture<?> timer;

        Call(MessageType<?> type, Message message, Payload payload, CompletableFuture<Response> future, long timeoutNanos, long trace,
             boolean keepIfSlow) {
            this.type = type;
            this.trace = trace;
            this.keepIfSlow = keepIfSlow;
            this.message = message;
            this.payload = payload;
            this.future = future;
            this.timeoutNanos = timeoutNanos;
            this.startNanos = node.clock().nanoTime();
        }

        void fail(StrataException e) {
            releasePayload();
            if (timer != null) {
                timer.cancel(false);
            }
            // counted before the caller's continuations run, so that whoever saw the call end sees it counted
            if (!future.isDone()) {
                ended(e.status().name());
                future.completeExceptionally(e);
            }
        }

        /** Counts the call, and keeps it if it was slow. */
        void ended(String status) {
            long took = node.clock().nanoTime() - startNanos;
            metrics.call(type.name(), status, took);
            if (keepIfSlow && node.slowOps().isSlow(took)) {
                node.slowOps().record(trace, "call", type.name() + " to " + peer, took, status);
            }
        }

        void releasePayload() {
            if (payload != null) {
                payload.release();
                payload = null;
            }
        }
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.channel = ctx.channel();
        this.flusher = new Flusher(channel);
    }

    /** False once the connection failed or closed: the client then opens a new one. */
    boolean isUsable() {
        return !closed;
    }

    /** Called on the event loop when the TCP connection is established. */
    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        if (closed) {
            ctx.close();
            return;
        }
        if (!tls) {
            start();
        }
        ctx.fireChannelActive();
    }

    /** The connection carries frames now: authenticate, or let the waiting calls go. */
    private void start() {
        if (credentials == null) {
            connected = true;
            drain();
        } else {
            authId = nextId++;
            flusher.write(OutboundFrame.request(authId, (int) options.connectTimeout().toMillis(), CoreMessages.AUTHENTICATE,
                    new CoreMessage.Authenticate(credentials.token()), Payload.NONE));
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof SslHandshakeCompletionEvent hs) {
            if (hs.isSuccess()) {
                if (!closed) {
                    start();
                }
            } else {
                tlsFailed(ctx, hs.cause());
            }
        }
        ctx.fireUserEventTriggered(evt);
    }

    /** The innermost message of {@code t}'s causes (the engines wrap the certificate checker's in generic ones). */
    private static String reason(Throwable t) {
        String why = null;
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c.getMessage() != null) {
                why = c.getMessage();
            } else if (why == null) {
                why = c.getClass().getSimpleName();
            }
        }
        if (t instanceof java.nio.channels.ClosedChannelException) {
            return "the server closed the connection during the handshake (does it speak TLS?)";
        }
        return why == null ? "unknown reason" : why;
    }

    /** The TLS handshake failed, or the server refused this side's certificate right after it: no call goes out on this connection. */
    private void tlsFailed(ChannelHandlerContext ctx, Throwable cause) {
        String why = reason(cause);
        closeReason = "TLS failed (" + why + ")";
        if (!closed && !connected) {
            metrics.tlsFailure();
            LOG.warn("{}: TLS with {} failed: {}", node.name(), peer, why);
            connectFailed(new StrataException(Status.CONNECTION_FAILED, "TLS with " + peer + " failed: " + why, cause));
        }
        ctx.close();
    }

    /** The server's answer to the handshake: calls go out now, or all fail with the refusal. */
    private void authenticated(Frame frame) {
        authId = 0;
        if (frame.status() == 0) {
            protocol.decode(CoreMessages.AUTHENTICATED, frame.body());
            connected = true;
            drain();
            return;
        }
        ByteBuf body = frame.body();
        StrataException refused = StrataException.fromWire(Status.fromCode(frame.status()),
                Wire.readString(body, 1 << 16, "error message"), body);
        LOG.warn("{}: {} refused our token ({}): {}", node.name(), peer, credentials.claims(), refused.getMessage());
        closeReason = "connection refused by the server (" + refused.getMessage() + ")";
        connectFailed(refused);
        channel.close();
    }

    /** Called on the event loop when connecting failed: every waiting call fails. */
    void connectFailed(StrataException e) {
        connectFailure = e;
        closed = true;
        Call c;
        while ((c = waiting.poll()) != null) {
            c.fail(e);
        }
    }

    /** Reserves the connection for one {@link #call}, which must follow: a claimed connection is never quiet. */
    void claim() {
        users.incrementAndGet();
    }

    /**
     * True when no claimed call is outstanding and none completed for {@code nanos}: a server
     * closes connections that stay silent for its idle timeout, so the client replaces one that
     * has been quiet for a good part of it rather than send into a connection being closed.
     */
    boolean quietFor(long nanos) {
        return users.get() == 0 && node.clock().nanoTime() - quietSinceNanos >= nanos;
    }

    /**
     * Sends {@code message} on a connection {@link #claim claimed} for it; ownership of
     * {@code payload} passes to this method.
     */
    CompletableFuture<Response> call(Message message, Payload payload, long timeoutNanos, long trace, boolean keepIfSlow) {
        CompletableFuture<Response> f = new CompletableFuture<>();
        f.whenComplete((r, e) -> {
            quietSinceNanos = node.clock().nanoTime();
            users.decrementAndGet();
        });
        MessageType<?> type;
        try {
            type = protocol.typeOf(message);
        } catch (IllegalArgumentException e) {
            payload.release();
            f.completeExceptionally(new StrataException(Status.INVALID_ARGUMENT, e.getMessage()));
            return f;
        }
        Call c = new Call(type, message, payload, f, timeoutNanos, trace, keepIfSlow);
        if (loop.inEventLoop()) {
            submit(c);
        } else {
            try {
                loop.execute(() -> submit(c));
            } catch (RejectedExecutionException e) {
                c.fail(new StrataException(Status.SHUTTING_DOWN, "RPC client is shutting down"));
            }
        }
        return f;
    }

    private void submit(Call c) {
        if (closed) {
            // a call that reaches the loop after the connect failed: that failure, not "lost"
            StrataException why = connectFailure;
            c.fail(why != null ? why : lost(0));
            return;
        }
        c.timer = loop.schedule(() -> timeout(c), c.timeoutNanos, TimeUnit.NANOSECONDS);
        if (waiting.isEmpty() && canSend()) {
            send(c);
        } else if (waiting.size() < options.maxQueued()) {
            waiting.add(c);
        } else {
            c.fail(new StrataException(Status.OVERLOADED, "too many requests queued to " + peer
                    + " (" + pending.size() + " in flight, " + waiting.size() + " waiting)"));
        }
    }

    private boolean canSend() {
        return connected && pending.size() < options.maxInFlight() && channel.isWritable();
    }

    private void send(Call c) {
        if (c.future.isDone()) { // cancelled or timed out while it waited
            c.releasePayload();
            return;
        }
        c.id = nextId++;
        pending.put(c.id, c);
        long budgetMillis = Math.max(1, TimeUnit.NANOSECONDS.toMillis(c.timeoutNanos - (node.clock().nanoTime() - c.startNanos)));
        Payload p = c.payload;
        c.payload = null;
        metrics.bytesOut(p.length());
        OutboundFrame frame = OutboundFrame.request(c.id, (int) Math.min(Integer.MAX_VALUE, budgetMillis), c.trace, c.type, c.message, p);
        Optional<Fault> fault = node.faults().check(FaultPoint.RPC_SEND, FaultScope.of(c.type.name(), peer));
        if (fault.isPresent()) {
            switch (fault.get()) {
                case Fault.Drop d -> {
                    frame.release();
                    return;
                }
                case Fault.Delay d -> {
                    loop.schedule(() -> flusher.write(frame), d.delay().toNanos(), TimeUnit.NANOSECONDS);
                    return;
                }
                case Fault.Duplicate d -> flusher.write(frame.retainedDuplicate());
                case Fault.Disconnect d -> {
                    frame.release();
                    closeReason = "connection closed by an injected fault";
                    channel.close();
                    return;
                }
                case Fault.Fail f -> {
                    frame.release();
                    pending.remove(c.id);
                    c.fail(f.error());
                    return;
                }
                case Fault.Crash cr -> Runtime.getRuntime().halt(137);
            }
        }
        flusher.write(frame);
    }

    private void drain() {
        while (!waiting.isEmpty() && canSend()) {
            send(waiting.poll());
        }
    }

    private void timeout(Call c) {
        if (c.future.isDone()) {
            return;
        }
        boolean sent = c.id != 0 && pending.remove(c.id) != null;
        if (!sent) {
            waiting.remove(c);
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(c.timeoutNanos);
        c.fail(new StrataException(Status.TIMEOUT, c.type.name() + " to " + peer + " timed out after " + ms + " ms"
                + (sent ? "" : connected ? " waiting for a free slot (" + pending.size() + " in flight)" : " while connecting")));
        drain();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Frame frame = (Frame) msg;
        try {
            if (!frame.isResponse()) {
                throw new Wire.Malformed("a client received a request frame (tag " + frame.tag() + ")");
            }
            if (authId != 0 && frame.requestId() == authId) {
                authenticated(frame);
                return;
            }
            Call c = pending.remove(frame.requestId());
            if (c == null) {
                // late (timed out) or duplicated response: nobody waits for it
                LOG.debug("{}: dropping response {} from {} (no caller waiting)", node.name(), frame.requestId(), peer);
                return;
            }
            c.timer.cancel(false);
            if (frame.status() != 0) {
                Status status = Status.fromCode(frame.status());
                ByteBuf body = frame.body();
                String text = Wire.readString(body, 1 << 16, "error message");
                c.fail(StrataException.fromWire(status, text, body));
            } else {
                MessageType<?> type = protocol.byTag(frame.tag());
                if (type == null) {
                    StrataException e = new Wire.Malformed("unknown response tag " + frame.tag() + " from " + peer);
                    c.fail(e);
                    throw e;
                }
                Message m;
                try {
                    m = protocol.decode(type, frame.body());
                } catch (Wire.Malformed e) {
                    c.fail(e);
                    throw e;
                }
                ByteBuf payload = frame.takePayload();
                metrics.bytesIn(payload == null ? 0 : payload.readableBytes());
                Response r = new Response(m, payload);
                if (!c.future.isDone()) {
                    c.ended("OK"); // before the caller's continuations
                }
                if (!c.future.complete(r)) {
                    r.close(); // the caller cancelled: nobody will release it
                }
            }
            drain();
        } finally {
            frame.release();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        drain();
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        closed = true;
        int n = pending.size() + waiting.size();
        if (n > 0 && closingByThisClient) {
            // the owner closed its client (e.g. a long poll for routing changes was still waiting): expected
            LOG.debug("{}: {} to {} with {} requests outstanding", node.name(), closeReason, peer, n);
        } else if (n > 0) {
            LOG.info("{}: {} to {} with {} requests outstanding", node.name(), closeReason, peer, n);
        }
        for (Call c : pending.values()) {
            c.fail(lost(pending.size()));
        }
        pending.clear();
        Call c;
        while ((c = waiting.poll()) != null) {
            c.fail(lost(0));
        }
        ctx.fireChannelInactive();
    }

    private StrataException lost(int inFlight) {
        return new StrataException(Status.CONNECTION_LOST, closeReason + " to " + peer
                + (inFlight > 0 ? " with " + inFlight + " requests in flight" : ""));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable c = cause instanceof io.netty.handler.codec.DecoderException && cause.getCause() != null
                ? cause.getCause() : cause;
        if (c instanceof Wire.Malformed) {
            metrics.badFrame();
            closeReason = "malformed frame from server (" + c.getMessage() + "), connection closed";
            LOG.warn("{}: closing connection to {}: malformed frame: {}", node.name(), peer, c.getMessage());
        } else if (c instanceof javax.net.ssl.SSLException && tls) {
            tlsFailed(ctx, c);
            return;
        } else if (c instanceof java.io.IOException) {
            closeReason = "connection failed (" + c.getMessage() + ")";
            LOG.debug("{}: connection to {} failed: {}", node.name(), peer, c.toString());
        } else {
            closeReason = "connection closed after an error (" + c + ")";
            LOG.warn("{}: closing connection to {}", node.name(), peer, c);
        }
        ctx.close();
    }

    void close() {
        try {
            loop.execute(() -> {
                closeReason = "connection closed by this client";
                closingByThisClient = true;
                if (channel != null && channel.isOpen()) {
                    channel.close();
                } else {
                    connectFailed(lost(0));
                }
            });
        } catch (RejectedExecutionException e) {
            closed = true; // the event loop is gone already: nothing left to fail
        }
    }
}
