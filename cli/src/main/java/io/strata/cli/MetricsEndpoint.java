package io.strata.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.strata.config.ConfigException;
import io.strata.config.TlsConfig;
import io.strata.core.StrataException;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.trace.SlowOps;
import io.strata.core.trace.Trace;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.concurrent.Executors;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * Serves a daemon's {@code GET /metrics} in the Prometheus text format from its registry, and
 * {@code GET /slow}: the slow operations it kept, as JSON ({@code strata admin slow} reads it).
 *
 * <p>Who may read: on a loopback address, anyone who reaches it (every local user). Elsewhere,
 * unless the config says {@code metrics-open = true}, only a request with
 * {@code Authorization: Bearer TOKEN} whose token the daemon's verifier accepts (any role of
 * the cluster): others get 401. A daemon without a verifier (no {@code [auth]} key) cannot
 * check tokens: it serves anyone, as its RPC port does, and says so in its log.
 *
 * <p>Off loopback, a daemon with a {@code [tls]} table serves HTTPS (TLS 1.3, its own
 * certificate from the cluster CA), so that the tokens readers send and the figures they read
 * do not cross the network in the clear; on loopback it serves plain HTTP, as {@code strata up}
 * binds it and its Prometheus configuration scrapes it.
 */
final class MetricsEndpoint implements AutoCloseable {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(MetricsEndpoint.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpServer server;

    private final boolean https;

    MetricsEndpoint(InetSocketAddress address, PrometheusMeterRegistry registry) throws IOException {
        this(address, registry, null, true, null, TlsConfig.OFF);
    }

    /**
     * An endpoint on {@code address}; {@code open}: off loopback too, anyone may read;
     * {@code verifier}: checks the tokens of requests off loopback (null: none can be checked);
     * {@code tls}: the daemon's certificate, with which an endpoint off loopback serves HTTPS.
     */
    MetricsEndpoint(InetSocketAddress address, PrometheusMeterRegistry registry, SlowOps slowOps, boolean open,
                    TokenVerifier verifier, TlsConfig tls) throws IOException {
        InetSocketAddress bind = new InetSocketAddress(address.getHostString(), address.getPort());
        boolean loopback = bind.getAddress() != null && bind.getAddress().isLoopbackAddress();
        if (!loopback && !open && verifier == null) {
            LOG.warn("metrics on {} (not loopback) are readable by anyone who reaches the port: this daemon has no [auth] key to "
                    + "check tokens with", address.getHostString());
        }
        if (!loopback && !tls.enabled()) {
            LOG.warn("metrics on {} (not loopback) are served in plaintext: this daemon has no [tls] table{}", address.getHostString(),
                    open || verifier == null ? "" : ", so the tokens that readers send cross the network readable");
        }
        TokenVerifier check = loopback || open ? null : verifier;
        https = !loopback && tls.enabled();
        if (https) {
            HttpsServer s = HttpsServer.create(bind, 16);
            SSLContext ssl = serverContext(tls);
            s.setHttpsConfigurator(new HttpsConfigurator(ssl) {
                @Override
                public void configure(HttpsParameters params) {
                    SSLParameters p = ssl.getDefaultSSLParameters();
                    p.setProtocols(new String[] {"TLSv1.3"});
                    p.setNeedClientAuth(false);
                    params.setSSLParameters(p);
                }
            });
            server = s;
        } else {
            server = HttpServer.create(bind, 16);
        }
        server.createContext("/metrics", exchange -> {
            if (allowed(exchange, check)) {
                send(exchange, "text/plain; version=0.0.4; charset=utf-8", registry.scrape());
            }
        });
        if (slowOps != null) {
            server.createContext("/slow", exchange -> {
                if (allowed(exchange, check)) {
                    send(exchange, "application/json", slowJson(slowOps));
                }
            });
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

    /** Whether the request may read (answering 401 when not): always without a verifier to check with. */
    private static boolean allowed(HttpExchange exchange, TokenVerifier verifier) throws IOException {
        if (verifier == null) {
            return true;
        }
        String auth = exchange.getRequestHeaders().getFirst("Authorization");
        String why;
        if (auth == null || !auth.startsWith("Bearer ")) {
            why = "this metrics endpoint wants Authorization: Bearer TOKEN (a token of the cluster)";
        } else {
            try {
                verifier.verify(auth.substring("Bearer ".length()).strip(), Instant.now());
                return true;
            } catch (StrataException e) {
                why = "token refused: " + e.getMessage();
            }
        }
        byte[] body = (why + "\n").getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("WWW-Authenticate", "Bearer");
        exchange.getResponseHeaders().add("Content-Type", "text/plain; charset=utf-8");
        exchange.sendResponseHeaders(401, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
        return false;
    }

    private static void send(HttpExchange exchange, String type, String text) throws IOException {
        byte[] body = text.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", type);
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    /**
     * A TLS 1.3 server context with the daemon's certificate chain and key (no client
     * certificate is asked for: readers present a token instead).
     */
    static SSLContext serverContext(TlsConfig tls) {
        TlsConfig.Material m = tls.material(); // a file that cannot be read names its key
        try {
            char[] pass = new char[0];
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            ks.setKeyEntry("daemon", m.key(), pass, m.chain().toArray(X509Certificate[]::new));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, pass);
            SSLContext ssl = SSLContext.getInstance("TLSv1.3");
            ssl.init(kmf.getKeyManagers(), null, null);
            return ssl;
        } catch (GeneralSecurityException | IOException e) {
            throw new ConfigException("tls", "cannot serve the metrics over HTTPS with " + tls.certFile() + " and " + tls.keyFile() + ": "
                    + e.getMessage());
        }
    }

    InetSocketAddress address() {
        return server.getAddress();
    }

    /** Whether it serves HTTPS (off loopback, with the daemon's [tls]). */
    boolean https() {
        return https;
    }

    /** The URL of its {@code /metrics}. */
    String url() {
        return (https ? "https://" : "http://") + NodeCommand.hostPort(address()) + "/metrics";
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
