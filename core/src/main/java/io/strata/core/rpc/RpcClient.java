package io.strata.core.rpc;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.Credentials;
import io.strata.core.tls.TlsContext;
import io.strata.core.trace.Trace;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Calls other nodes. Connections are opened on first use, reused by every later call to the
 * same address, and replaced after they close; {@link RpcOptions#connectionsPerPeer()} of them
 * per peer share the calls round-robin. A connection that has carried no call for half of
 * {@link RpcOptions#idleTimeout()} is replaced too, before the server closes it as idle, so that
 * a call is never sent into a connection the server is closing.
 *
 * <p>Each peer has {@link Lane lanes} of connections, opened as calls need them: calls in
 * {@link Lane#BULK} (large payloads, bulk classes) never share a connection with calls in
 * {@link Lane#FOREGROUND}, so a small read is not queued on a socket behind megabytes of write
 * payload sent before it; long polls ({@link Lane#WAIT}) have their own too.
 *
 * <p>When the node context has {@link NodeContext#credentials() credentials}, every new
 * connection first authenticates with them, before any call goes out on it. When it has a
 * {@link NodeContext#tls() TLS context}, connections are mutual TLS, and the server's
 * certificate must name the host of the address called.
 *
 * <p>Buffer ownership: the payload given to {@link #call} belongs to the client from then on,
 * even when the call fails; the payload of a {@link Response} belongs to the caller.
 */
public final class RpcClient implements AutoCloseable {
    private final NodeContext ctx;
    private final Protocol protocol;
    private final RpcOptions options;
    private final RpcMetrics metrics;
    private final Credentials credentials;
    private final TlsContext tls;
    private final ConcurrentHashMap<InetSocketAddress, Peer> peers = new ConcurrentHashMap<>();
    private volatile boolean closed;

    public RpcClient(NodeContext ctx, Protocol protocol, RpcOptions options) {
        this.ctx = ctx;
        this.protocol = protocol;
        this.options = options;
        this.metrics = new RpcMetrics(ctx.meters(), "client");
        this.credentials = ctx.credentials().orElse(null);
        this.tls = ctx.tls().orElse(null);
    }

    public RpcOptions options() {
        return options;
    }

    /**
     * Which connections of a peer a call goes on. A connection delivers frames in order, so a
     * call waits for every byte sent before it on its connection: latency-sensitive calls
     * ({@link #FOREGROUND}) get connections of their own, apart from the bulk transfers.
     */
    public enum Lane {
        FOREGROUND, BULK,
        /**
         * Calls that wait by design (a long poll for routing changes): on connections of their
         * own, so they hold no slot where others wait, and never kept as slow operations.
         */
        WAIT
    }

    /** Calls {@code address} with the default timeout and no payload. */
    public CompletableFuture<Response> call(InetSocketAddress address, Message message) {
        return call(address, message, Payload.NONE, options.defaultTimeout());
    }

    /**
     * Calls {@code address}. The future fails with a {@link StrataException}: TIMEOUT after
     * {@code timeout}, CONNECTION_FAILED/CONNECTION_LOST when the peer cannot be reached or
     * vanishes, OVERLOADED when too many calls wait, or the status the server replied with.
     */
    public CompletableFuture<Response> call(InetSocketAddress address, Message message, Payload payload, Duration timeout) {
        return call(address, message, payload, timeout, Lane.FOREGROUND);
    }

    /** As {@link #call(InetSocketAddress, Message, Payload, Duration)}, on the connections of {@code lane}. */
    public CompletableFuture<Response> call(InetSocketAddress address, Message message, Payload payload, Duration timeout,
                                            Lane lane) {
        return call(address, message, payload, timeout, lane, Trace.current());
    }

    /**
     * As above, for the user operation {@code trace} (0: none). The shorter forms send the
     * calling thread's {@link Trace#current()}; code that calls from another thread than the
     * operation's (a retry on an event loop, say) passes the operation's id here.
     */
    public CompletableFuture<Response> call(InetSocketAddress address, Message message, Payload payload, Duration timeout,
                                            Lane lane, long trace) {
        if (closed) {
            payload.release();
            return CompletableFuture.failedFuture(new StrataException(Status.SHUTTING_DOWN, "RPC client is closed"));
        }
        return peers.computeIfAbsent(address, Peer::new).claim(lane).call(message, payload, timeout.toNanos(), trace, lane != Lane.WAIT);
    }

    /** Calls and expects a reply of {@code type} without payload (any payload is released). */
    public <R extends Message> CompletableFuture<R> call(InetSocketAddress address, Message message, Class<R> type) {
        return call(address, message).thenApply(r -> {
            try (r) {
                return r.message(type);
            }
        });
    }

    /** Closes every connection; outstanding calls fail with CONNECTION_LOST. */
    @Override
    public void close() {
        closed = true;
        for (Peer p : peers.values()) {
            p.close();
        }
        peers.clear();
    }

    /** The connections to one address: {@code connectionsPerPeer} per lane, the lanes one after the other. */
    private final class Peer {
        private final InetSocketAddress address;
        private final List<ClientConnection> slots = new ArrayList<>();
        private final AtomicInteger rr = new AtomicInteger();

        Peer(InetSocketAddress address) {
            this.address = address;
            for (int i = 0; i < options.connectionsPerPeer() * Lane.values().length; i++) {
                slots.add(null);
            }
        }

        /**
         * A usable connection, claimed for one call. Opens one when the slot is empty, its
         * connection died, or it has been quiet so long that the server may close it as idle.
         * Claiming under the lock keeps a connection from being retired between choice and use.
         */
        ClientConnection claim(Lane lane) {
            int n = options.connectionsPerPeer();
            int i = lane.ordinal() * n + Math.floorMod(rr.getAndIncrement(), n);
            synchronized (this) {
                ClientConnection c = slots.get(i);
                if (c != null && c.isUsable() && c.quietFor(options.idleTimeout().toNanos() / 2)) {
                    c.close();
                    c = null;
                }
                if (c == null || !c.isUsable()) {
                    c = connect();
                    slots.set(i, c);
                }
                c.claim();
                return c;
            }
        }

        /** Starts connecting; calls made before it completes wait inside the connection. */
        private ClientConnection connect() {
            String name = address.getHostString() + ":" + address.getPort();
            EventLoop loop = ctx.eventLoops().next();
            ClientConnection handler = new ClientConnection(ctx, protocol, options, metrics, name, loop, credentials, tls != null);
            Bootstrap b = new Bootstrap()
                    .group(loop)
                    .channel(ctx.transport().socketChannel())
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.SO_KEEPALIVE, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) options.connectTimeout().toMillis())
                    .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(
                            (int) (options.writeBufferHigh().bytes() / 2), (int) options.writeBufferHigh().bytes()))
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            if (tls != null) {
                                ch.pipeline().addLast("tls", tls.clientHandler(ch.alloc(), address.getHostString(), address.getPort()));
                            }
                            ch.pipeline()
                                    .addLast("frames", new FrameDecoder(options.maxBodyBytes(), (int) options.maxPayload().bytes()))
                                    .addLast("encoder", new FrameEncoder(tls != null))
                                    .addLast("client", handler);
                        }
                    });
            try {
                b.connect(address).addListener(f -> {
                    if (!f.isSuccess()) {
                        Throwable c = f.cause();
                        handler.connectFailed(new StrataException(Status.CONNECTION_FAILED,
                                "cannot connect to " + name + ": " + (c == null ? "cancelled" : c.getMessage()), c));
                    }
                });
            } catch (RuntimeException e) {
                loop.execute(() -> handler.connectFailed(new StrataException(Status.CONNECTION_FAILED,
                        "cannot connect to " + name + ": " + e.getMessage(), e)));
            }
            return handler;
        }

        synchronized void close() {
            for (ClientConnection c : slots) {
                if (c != null) {
                    c.close();
                }
            }
        }
    }

    @Override
    public String toString() {
        return "RpcClient[" + ctx.name() + ", " + peers.size() + " peers]";
    }
}
