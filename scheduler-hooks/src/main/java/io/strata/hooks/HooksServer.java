package io.strata.hooks;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.time.StrataClock;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The hooks' HTTP/JSON API, version 1 (docs/scheduler-hooks.md, docs/scheduler-hooks.openapi.yaml):
 *
 * <pre>
 *   POST   /v1/hints               submit a hint                     201 + the hint
 *   GET    /v1/hints[?job=J]       list hints                        200 {"hints": [...]}
 *   GET    /v1/hints/{id}          one hint: state, bytes, ETA, per node
 *   DELETE /v1/hints/{id}          cancel (also POST /v1/hints/{id}/cancel)
 *   POST   /v1/jobs/{job}/end      end a job: release what its hints pinned, remove them
 *   GET    /v1/health              200 {"status": "ok"}
 * </pre>
 *
 * Bad input gets a 4xx whose body is {@code {"error": message, "status": code}} with the message
 * naming the field; a request body is at most 1 MiB.
 *
 * <p>When the node context has a token {@link NodeContext#verifier() verifier}, every request
 * but the health check needs {@code Authorization: Bearer <token>} with a {@code scheduler} or
 * {@code admin} token: without a valid one it gets 401 ({@code UNAUTHENTICATED}), with another
 * role 403 ({@code PERMISSION_DENIED}). Work that calls other services runs off the
 * event loop, on a small pool of its own.
 *
 * <p>With a {@link HooksTls} (the process has a {@code [tls]} table) the port speaks HTTPS only:
 * the TLS handler goes first in every connection, so a plaintext request fails the handshake and
 * the connection is closed before any HTTP is read, and the token never travels readable.
 */
public final class HooksServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HooksServer.class);
    private static final int MAX_BODY = 1 << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Planner planner;
    private final Clock clock;
    private final ExecutorService work = Executors.newFixedThreadPool(4, r -> {
        Thread t = new Thread(r, "strata-hooks-http");
        t.setDaemon(true);
        return t;
    });
    private final Channel channel;
    private final TokenVerifier verifier;
    private final StrataClock nodeClock;
    private final boolean https;

    private HooksServer(NodeContext ctx, Planner planner, Clock clock, InetSocketAddress listen, Optional<HooksTls> tls) {
        this.planner = planner;
        this.clock = clock;
        this.verifier = ctx.verifier().orElse(null);
        this.nodeClock = ctx.clock();
        this.https = tls.isPresent();
        ServerBootstrap b = new ServerBootstrap()
                .group(ctx.eventLoops())
                .channel(ctx.transport().serverChannel())
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        tls.ifPresent(t -> ch.pipeline().addLast(t.newHandler(ch.alloc())));
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(MAX_BODY), new Handler());
                    }
                });
        this.channel = b.bind(listen).syncUninterruptibly().channel();
    }

    /** Serves the API on {@code listen} (port 0: any free port), over HTTPS when {@code tls} is given, else plain HTTP. */
    public static HooksServer start(NodeContext ctx, Planner planner, Clock clock, InetSocketAddress listen, Optional<HooksTls> tls) {
        return new HooksServer(ctx, planner, clock, listen, tls);
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    /** Whether the port speaks HTTPS (else plain HTTP). */
    public boolean https() {
        return https;
    }

    private final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            if (!req.decoderResult().isSuccess()) {
                Throwable cause = req.decoderResult().cause();
                HttpResponseStatus st = cause instanceof TooLongFrameException ? HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE
                        : HttpResponseStatus.BAD_REQUEST;
                respond(ctx, req, st, error("malformed HTTP request: " + cause.getMessage(), Status.INVALID_ARGUMENT), false);
                return;
            }
            Reply refused = authorize(req);
            if (refused != null) {
                respond(ctx, req, refused.status(), refused.body(), HttpUtil.isKeepAlive(req));
                return;
            }
            HttpMethod method = req.method();
            String uri = req.uri();
            byte[] body = ByteBufUtil.getBytes(req.content());
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            try {
                work.execute(() -> {
                    Reply r = route(method, uri, body);
                    ctx.executor().execute(() -> respond(ctx, keepAlive, r.status(), r.body()));
                });
            } catch (RejectedExecutionException e) {
                respond(ctx, req, HttpResponseStatus.SERVICE_UNAVAILABLE, error("the hooks server is stopping", Status.SHUTTING_DOWN), false);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof TooLongFrameException) {
                respond(ctx, false, HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE,
                        error("the request body is larger than " + MAX_BODY + " bytes", Status.INVALID_ARGUMENT));
                return;
            }
            LOG.debug("hooks connection {}: {}", ctx.channel().remoteAddress(), cause.toString());
            ctx.close();
        }
    }

    private record Reply(HttpResponseStatus status, JsonNode body) {
    }

    /** Why {@code req} may not be served (401 or 403), or null when it may (or authentication is off). */
    private Reply authorize(FullHttpRequest req) {
        if (verifier == null || (req.method().equals(HttpMethod.GET) && new QueryStringDecoder(req.uri()).path().equals("/v1/health"))) {
            return null;
        }
        String h = req.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (h == null || !h.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return new Reply(HttpResponseStatus.UNAUTHORIZED, error("this hooks server requires 'Authorization: Bearer TOKEN' "
                    + "with a scheduler or admin token", Status.UNAUTHENTICATED));
        }
        Token t;
        try {
            t = verifier.verify(h.substring(7).strip(), nodeClock.now());
        } catch (StrataException e) {
            return new Reply(HttpResponseStatus.UNAUTHORIZED, error(e.getMessage(), Status.UNAUTHENTICATED));
        }
        if (t.role() != Role.SCHEDULER && t.role() != Role.ADMIN) {
            return new Reply(HttpResponseStatus.FORBIDDEN, error("role " + t.role() + " (subject " + t.subject()
                    + ") may not use the hooks API; it takes scheduler or admin tokens", Status.PERMISSION_DENIED));
        }
        return null;
    }

    /** Runs one request (on the work pool). */
    Reply route(HttpMethod method, String uri, byte[] body) {
        QueryStringDecoder q = new QueryStringDecoder(uri);
        String[] parts = q.path().replaceAll("/+$", "").split("/");
        try {
            if (parts.length < 3 || !parts[1].equals("v1")) {
                return notFound(q.path());
            }
            String what = parts[2];
            if (what.equals("health") && parts.length == 3) {
                return method.equals(HttpMethod.GET) ? ok(JSON.createObjectNode().put("status", "ok")) : notAllowed(method, q.path());
            }
            if (what.equals("hints")) {
                if (parts.length == 3) {
                    if (method.equals(HttpMethod.POST)) {
                        return submit(body);
                    }
                    if (method.equals(HttpMethod.GET)) {
                        List<String> job = q.parameters().get("job");
                        ArrayNode a = JSON.createArrayNode();
                        for (Hint h : planner.list()) {
                            if (job == null || job.contains(h.job())) {
                                a.add(render(h));
                            }
                        }
                        ObjectNode o = JSON.createObjectNode();
                        o.set("hints", a);
                        return ok(o);
                    }
                    return notAllowed(method, q.path());
                }
                long id = id(parts[3]);
                if (parts.length == 4 && method.equals(HttpMethod.GET)) {
                    return planner.get(id).map(h -> ok(render(h)))
                            .orElseGet(() -> new Reply(HttpResponseStatus.NOT_FOUND, error("no hint " + id, Status.NOT_FOUND)));
                }
                if ((parts.length == 4 && method.equals(HttpMethod.DELETE))
                        || (parts.length == 5 && parts[4].equals("cancel") && method.equals(HttpMethod.POST))) {
                    return ok(render(planner.cancel(id)));
                }
                return parts.length <= 5 ? notAllowed(method, q.path()) : notFound(q.path());
            }
            if (what.equals("jobs") && parts.length == 5 && parts[4].equals("end")) {
                if (!method.equals(HttpMethod.POST)) {
                    return notAllowed(method, q.path());
                }
                String job = URLDecoder.decode(parts[3], StandardCharsets.UTF_8);
                ArrayNode a = JSON.createArrayNode();
                planner.endJob(job).forEach(h -> a.add(render(h)));
                ObjectNode o = JSON.createObjectNode().put("job", job);
                o.set("ended", a);
                return ok(o);
            }
            return notFound(q.path());
        } catch (StrataException e) {
            return new Reply(httpStatus(e.status()), error(e.getMessage(), e.status()));
        } catch (RuntimeException e) {
            LOG.warn("hooks {} {} failed", method, uri, e);
            return new Reply(HttpResponseStatus.INTERNAL_SERVER_ERROR, error(e.toString(), Status.INTERNAL));
        }
    }

    private Reply submit(byte[] body) {
        JsonNode n;
        try {
            n = JSON.readTree(body);
        } catch (JsonProcessingException e) {
            return new Reply(HttpResponseStatus.BAD_REQUEST, error("malformed JSON: " + e.getOriginalMessage(), Status.INVALID_ARGUMENT));
        } catch (java.io.IOException e) {
            return new Reply(HttpResponseStatus.BAD_REQUEST, error("unreadable body: " + e.getMessage(), Status.INVALID_ARGUMENT));
        }
        HintSpec spec = HintSpec.parse(n, Instant.ofEpochMilli(clock.millis()));
        Hint h;
        try {
            h = planner.submit(spec);
        } catch (StrataException e) {
            if (e.status() == Status.NOT_FOUND || e.status() == Status.NOT_A_DIRECTORY || e.status() == Status.PERMISSION_DENIED) {
                return new Reply(HttpResponseStatus.BAD_REQUEST, error(e.getMessage(), e.status())); // a field of the request is wrong
            }
            throw e;
        }
        return new Reply(HttpResponseStatus.CREATED, render(h));
    }

    private static long id(String s) {
        try {
            long id = Long.parseLong(s);
            if (id > 0) {
                return id;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new StrataException(Status.INVALID_ARGUMENT, "id: \"" + s + "\" is not a hint id");
    }

    /** The API's picture of a hint. */
    static ObjectNode render(Hint h) {
        ObjectNode o = JSON.createObjectNode();
        o.put("id", Long.toString(h.id()));
        o.put("job", h.job());
        ArrayNode paths = o.putArray("paths");
        h.paths().forEach(paths::add);
        time(o, "deadline", h.deadline());
        o.put("priority", h.priority());
        ArrayNode nodes = o.putArray("nodes");
        h.nodes().forEach(nodes::add);
        o.put("qos", h.qos());
        if (h.supersedes() > 0) {
            o.put("supersedes", Long.toString(h.supersedes()));
        }
        o.put("state", h.state());
        o.put("message", h.message());
        o.put("files", h.files());
        o.put("bytes_total", h.bytesTotal());
        o.put("bytes_done", h.bytesDone());
        o.put("progress", h.bytesTotal() == 0 ? (h.stateValue() == HintState.READY ? 1.0 : 0.0) : (double) h.bytesDone() / h.bytesTotal());
        time(o, "eta", h.eta());
        if (h.eta() > 0 && h.stateValue().active()) {
            o.put("eta_seconds", Math.max(0, h.eta() - h.updated()) / 1000.0);
        } else {
            o.putNull("eta_seconds");
        }
        time(o, "created", h.created());
        time(o, "updated", h.updated());
        time(o, "ready_at", h.readyAt());
        ObjectNode per = o.putObject("per_node");
        for (Map.Entry<String, Hint.NodeProgress> e : h.perNode().entrySet()) {
            per.putObject(e.getKey()).put("bytes_total", e.getValue().bytesTotal()).put("bytes_done", e.getValue().bytesDone());
        }
        return o;
    }

    private static void time(ObjectNode o, String field, long millis) {
        if (millis > 0) {
            o.put(field, Instant.ofEpochMilli(millis).toString());
        } else {
            o.putNull(field);
        }
    }

    private static HttpResponseStatus httpStatus(Status s) {
        return switch (s) {
            case INVALID_ARGUMENT, NOT_A_DIRECTORY, CONFIG_INVALID -> HttpResponseStatus.BAD_REQUEST;
            case NOT_FOUND -> HttpResponseStatus.NOT_FOUND;
            case PERMISSION_DENIED, NOT_PERMITTED -> HttpResponseStatus.FORBIDDEN;
            case TXN_CONFLICT -> HttpResponseStatus.CONFLICT;
            case NO_SPACE -> HttpResponseStatus.INSUFFICIENT_STORAGE;
            default -> s.retryable() ? HttpResponseStatus.SERVICE_UNAVAILABLE : HttpResponseStatus.INTERNAL_SERVER_ERROR;
        };
    }

    private static Reply ok(JsonNode body) {
        return new Reply(HttpResponseStatus.OK, body);
    }

    private static Reply notFound(String path) {
        return new Reply(HttpResponseStatus.NOT_FOUND, error("no such resource: " + path + " (the API is under /v1)", Status.NOT_FOUND));
    }

    private static Reply notAllowed(HttpMethod m, String path) {
        return new Reply(HttpResponseStatus.METHOD_NOT_ALLOWED, error(m + " is not allowed on " + path, Status.INVALID_ARGUMENT));
    }

    private static ObjectNode error(String message, Status status) {
        return JSON.createObjectNode().put("error", message).put("status", status.name());
    }

    private static void respond(ChannelHandlerContext ctx, FullHttpRequest req, HttpResponseStatus st, JsonNode body, boolean keepAlive) {
        respond(ctx, keepAlive && HttpUtil.isKeepAlive(req), st, body);
    }

    private static void respond(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus st, JsonNode body) {
        byte[] bytes;
        try {
            bytes = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            bytes = ("{\"error\":\"" + e.getMessage().replace('"', '\'') + "\"}").getBytes(StandardCharsets.UTF_8);
        }
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, st, Unpooled.wrappedBuffer(bytes, new byte[] {'\n'}));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json; charset=utf-8");
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
        if (keepAlive) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            ctx.writeAndFlush(r);
        } else {
            // said, so that the client does not send its next request on a connection being closed
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
        }
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        work.shutdownNow();
    }
}
