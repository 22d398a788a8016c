package io.strata.core.rpc;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.Role;
import io.strata.core.tls.TlsContext;
import java.net.InetSocketAddress;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves requests over TCP. Each registered {@link MessageType} has one {@link RequestHandler}.
 * Per connection, at most {@link RpcOptions#serverMaxInFlight()} requests run at once: beyond
 * that (or while responses pile up unsent) the server stops reading the socket, so a fast
 * client is slowed by TCP flow control instead of filling this node's memory.
 *
 * <p>Against peers that hold resources without using them: at most
 * {@link RpcOptions#maxConnections()} connections are open at once (further ones are closed as
 * they are accepted, counted, and logged in one line per 10 s at most); a
 * connection that stalls in the middle of a frame is closed after
 * {@link RpcOptions#readTimeout()}, and one with nothing in flight that stays silent after
 * {@link RpcOptions#idleTimeout()}. A frame's buffer grows only with bytes that arrived
 * ({@link FrameDecoder}).
 *
 * <p>When the node context has a {@link NodeContext#verifier() verifier}, every connection must
 * first authenticate with a token ({@code Authenticate}) of a role the server {@link Builder#admit
 * admits}; until it has, nothing else it sends is decoded or dispatched. A message may be
 * restricted further to some roles ({@link Builder#allow}): another role's request is answered
 * PERMISSION_DENIED before its handler runs. Without a verifier, both are ignored.
 *
 * <p>When the node context has a {@link NodeContext#tls() TLS context}, every connection is
 * mutual TLS before anything else: a peer that speaks plaintext, or whose certificate the
 * cluster CA did not sign or has expired, fails the handshake and is disconnected (counted in
 * {@code strata.rpc.tls.failures}); one that says nothing is closed after Netty's handshake
 * timeout (10 s).
 *
 * <pre>{@code
 * RpcServer server = RpcServer.builder(ctx, protocol)
 *     .handle(CoreMessages.PING, req -> CompletableFuture.completedFuture(Reply.of(new Pong(...))))
 *     .bind("127.0.0.1", 0);
 * }</pre>
 */
public final class RpcServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RpcServer.class);

    /** Refusals are logged at most this often (each line counts those since the last). */
    private static final long REFUSAL_LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final NodeContext ctx;
    private final Channel serverChannel;
    private final ChannelGroup connections = new DefaultChannelGroup("rpc-server", GlobalEventExecutor.INSTANCE);
    /** Connections admitted and not yet closed: what {@link RpcOptions#maxConnections()} bounds. */
    private final AtomicInteger admitted = new AtomicInteger();
    private final AtomicLong unreportedRefusals = new AtomicLong();
    /** When the next refusal may be logged, on {@code ctx.clock()}. */
    private final AtomicLong nextRefusalLog;
    private final RpcMetrics metrics;
    private final int maxConnections;
    private volatile boolean closing;

    private RpcServer(Builder b, InetSocketAddress bindAddress) {
        this.ctx = b.ctx;
        this.metrics = new RpcMetrics(ctx.meters(), "server");
        Map<Integer, Registered<?>> handlers = Map.copyOf(b.handlers);
        Set<Role> admitted = Set.copyOf(b.admitted);
        RpcOptions o = b.options;
        TlsContext tls = ctx.tls().orElse(null);
        this.maxConnections = o.maxConnections();
        this.nextRefusalLog = new AtomicLong(ctx.clock().nanoTime());
        IdentityLimits identities = ctx.verifier().isPresent() ? new IdentityLimits(o.serverMaxInFlightPerIdentity(), ctx.meters()) : null;
        ServerBootstrap sb = new ServerBootstrap()
                .group(ctx.eventLoops())
                .channel(ctx.transport().serverChannel())
                .option(ChannelOption.SO_REUSEADDR, true)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.SO_KEEPALIVE, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(
                        (int) (o.writeBufferHigh().bytes() / 2), (int) o.writeBufferHigh().bytes()))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (closing) {
                            ch.close();
                            return;
                        }
                        if (!admit(ch)) {
                            return;
                        }
                        connections.add(ch);
                        if (tls != null) {
                            ch.pipeline().addLast("tls", tls.serverHandler(ch.alloc()));
                        }
                        FrameDecoder frames = new FrameDecoder(o.maxBodyBytes(), (int) o.maxPayload().bytes());
                        ch.pipeline()
                                .addLast("idle", new IdleStateHandler(o.readTimeout().toNanos(), 0,
                                        o.idleTimeout().toNanos(), TimeUnit.NANOSECONDS))
                                .addLast("frames", frames)
                                .addLast("encoder", new FrameEncoder(tls != null))
                                .addLast("server", new ServerConnection(ctx, b.protocol, handlers, admitted, o, metrics, frames, identities));
                    }
                });
        try {
            this.serverChannel = sb.bind(bindAddress).sync().channel();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StrataException(Status.INTERNAL, "interrupted while binding " + bindAddress);
        } catch (Exception e) {
            throw new StrataException(Status.INTERNAL, "cannot listen on " + bindAddress + ": " + e.getMessage(), e);
        }
        LOG.info("{}: RPC server listening on {} ({}, {})", ctx.name(), address(), ctx.transport(),
                tls == null ? "plaintext" : tls);
    }

    /** Takes a connection slot for {@code ch} until it closes, or closes it when none is free. */
    private boolean admit(SocketChannel ch) {
        for (int n = admitted.get(); n < maxConnections; n = admitted.get()) {
            if (admitted.compareAndSet(n, n + 1)) {
                ch.closeFuture().addListener(f -> admitted.decrementAndGet());
                return true;
            }
        }
        metrics.connectionRefused(); // before the close, so whoever sees the close sees the count
        ch.close();
        long refused = unreportedRefusals.incrementAndGet();
        long now = ctx.clock().nanoTime();
        long next = nextRefusalLog.get();
        if (now - next >= 0 && nextRefusalLog.compareAndSet(next, now + REFUSAL_LOG_INTERVAL_NANOS)) {
            unreportedRefusals.addAndGet(-refused);
            LOG.warn("{}: refused {} connection(s) since the last report (latest from {}): {} are open, the server's limit",
                    ctx.name(), refused, ch.remoteAddress(), maxConnections);
        }
        return false;
    }

    public static Builder builder(NodeContext ctx, Protocol protocol) {
        return new Builder(ctx, protocol);
    }

    /** The bound address (with the real port when 0 was asked). */
    public InetSocketAddress address() {
        return (InetSocketAddress) serverChannel.localAddress();
    }

    /** Connections currently open. */
    public int connectionCount() {
        return connections.size();
    }

    /** Stops accepting, closes every connection (their callers see CONNECTION_LOST) and waits. */
    @Override
    public void close() {
        closing = true;
        serverChannel.close().syncUninterruptibly();
        connections.close().awaitUninterruptibly();
    }

    /** A handler and the roles that may send its message (null: every role the server admits). */
    record Registered<M extends Message>(MessageType<M> type, RequestHandler<M> handler, Executor executor, Set<Role> roles) {
    }

    public static final class Builder {
        private final NodeContext ctx;
        private final Protocol protocol;
        private final Map<Integer, Registered<?>> handlers = new HashMap<>();
        private Set<Role> admitted = EnumSet.allOf(Role.class);
        private RpcOptions options = RpcOptions.DEFAULTS;

        private Builder(NodeContext ctx, Protocol protocol) {
            this.ctx = ctx;
            this.protocol = protocol;
        }

        public Builder options(RpcOptions options) {
            this.options = options;
            return this;
        }

        /** Handles {@code type} on the connection's event loop: the handler must not block. */
        public <M extends Message> Builder handle(MessageType<M> type, RequestHandler<M> handler) {
            return handle(type, null, handler);
        }

        /** Handles {@code type} on {@code executor} (e.g. {@code ctx.blocking()} for disk work). */
        public <M extends Message> Builder handle(MessageType<M> type, Executor executor, RequestHandler<M> handler) {
            if (protocol.byTag(type.tag()) != type) {
                throw new IllegalArgumentException(type + " is not part of the server's protocol");
            }
            if (handlers.putIfAbsent(type.tag(), new Registered<>(type, handler, executor, null)) != null) {
                throw new IllegalArgumentException("two handlers for " + type);
            }
            return this;
        }

        /**
         * The roles whose tokens may open a connection (default: all). Another role's
         * {@code Authenticate} is answered PERMISSION_DENIED and the connection closed.
         */
        public Builder admit(Role first, Role... more) {
            this.admitted = EnumSet.of(first, more);
            return this;
        }

        /**
         * Lets only {@code roles} send {@code type}, whose handler must be registered already;
         * another caller's request is answered PERMISSION_DENIED before the handler runs.
         */
        public Builder allow(MessageType<?> type, Role first, Role... more) {
            Registered<?> r = handlers.get(type.tag());
            if (r == null) {
                throw new IllegalArgumentException("no handler for " + type + " to restrict");
            }
            handlers.put(type.tag(), withRoles(r, EnumSet.of(first, more)));
            return this;
        }

        private static <M extends Message> Registered<M> withRoles(Registered<M> r, Set<Role> roles) {
            return new Registered<>(r.type(), r.handler(), r.executor(), Set.copyOf(roles));
        }

        public RpcServer bind(String host, int port) {
            return bind(new InetSocketAddress(host, port));
        }

        public RpcServer bind(InetSocketAddress address) {
            return new RpcServer(this, address);
        }
    }
}
