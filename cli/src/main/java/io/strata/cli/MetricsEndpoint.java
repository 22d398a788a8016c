package io.strata.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.strata.core.trace.SlowOps;
import io.strata.core.trace.Trace;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/**
 * Serves a daemon's {@code GET /metrics} in the Prometheus text format from its registry, and
 * {@code GET /slow}: the slow operations it kept, as JSON ({@code strata admin slow} reads it).
 */
final class MetricsEndpoint implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpServer server;

    MetricsEndpoint(InetSocketAddress address, PrometheusMeterRegistry registry) throws IOException {
        this(address, registry, null);
    }

    MetricsEndpoint(InetSocketAddress address, PrometheusMeterRegistry registry, SlowOps slowOps) throws IOException {
        server = HttpServer.create(new InetSocketAddress(address.getHostString(), address.getPort()), 16);
        server.createContext("/metrics", exchange -> send(exchange, "text/plain; version=0.0.4; charset=utf-8", registry.scrape()));
        if (slowOps != null) {
            server.createContext("/slow", exchange -> send(exchange, "application/json", slowJson(slowOps)));
        }
        server.setExecutor(Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "metrics-http");
            t.setDaemon(true);
            return t;
        }));
        server.start();
    }

    /** {"threshold_ms": 200, "ops": [{"trace": "hex", "at": "ISO", "process", "hop", "what", "ms", "detail"}, ...]}, oldest first. */
    static String slowJson(SlowOps slowOps) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        root.put("threshold_ms", slowOps.threshold().toNanos() / 1e6);
        ArrayNode ops = root.putArray("ops");
        for (SlowOps.Op op : slowOps.recent()) {
            ObjectNode o = ops.addObject();
            o.put("trace", Trace.format(op.trace()));
            o.put("at", op.at().toString());
            o.put("process", op.process());
            o.put("hop", op.hop());
            o.put("what", op.what());
            o.put("ms", op.millis());
            o.put("detail", op.detail());
        }
        return JSON.writeValueAsString(root);
    }

    private static void send(HttpExchange exchange, String type, String text) throws IOException {
        byte[] body = text.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", type);
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    InetSocketAddress address() {
        return server.getAddress();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
