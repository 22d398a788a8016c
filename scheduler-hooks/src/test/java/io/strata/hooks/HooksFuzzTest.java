package io.strata.hooks;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.testing.Seeded;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hooks' HTTPS API fed authenticated garbage, as a buggy or hostile scheduler plugin would
 * send it: random methods, paths and bodies (mutated hints, wrong types, deep nesting, random
 * bytes) with a valid scheduler token, then raw bytes that are not HTTP at all over TLS. Every
 * answer is a 2xx or a 4xx with a JSON error, never a 5xx; nothing but a well-formed hint is
 * stored; the server answers its health check throughout and after.
 */
class HooksFuzzTest {
    private static final int REQUESTS = 400;
    private static final List<String> METHODS = List.of("GET", "POST", "DELETE", "PUT", "PATCH");

    @Seeded
    @Test
    void garbageWithAValidTokenGetsA4xxAndLeavesTheServerWhole(long seed, @TempDir Path dir) throws Exception {
        Random rnd = new Random(seed);
        try (HooksFixture f = HooksFixture.https(dir, 1801, 1)) {
            HooksTest.dataset(f.admin, "/data/a", 1, 4);
            java.util.Set<String> accepted = new java.util.TreeSet<>();
            List<String> seen = new ArrayList<>();
            for (int i = 0; i < REQUESTS; i++) {
                String method = METHODS.get(rnd.nextInt(METHODS.size()));
                String path = path(rnd);
                String body = rnd.nextInt(4) == 0 ? null : body(rnd);
                HooksFixture.Http r;
                try {
                    r = f.send(method, path, body);
                } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                    throw new AssertionError(method + " " + path + " answered with a body that is not JSON", e);
                } catch (java.io.IOException e) {
                    throw new AssertionError(method + " " + path.substring(0, Math.min(300, path.length())) + " (" + path.length()
                            + " chars) with a body of " + (body == null ? "none" : body.length() + " chars") + " got no answer", e);
                }
                String what = method + " " + path + " " + (body == null ? "" : body.substring(0, Math.min(200, body.length())));
                assertThat(r.status()).as("%s -> %s", what, r.body()).isLessThan(500);
                if (r.status() >= 400) {
                    assertThat(r.body().path("error").asText()).as(what).isNotBlank();
                } else if (method.equals("POST") && !path.endsWith("/cancel") && r.body().has("id")) {
                    accepted.add(r.body().path("id").asText()); // a submit (the router takes /v1/hints/ too)
                }
                seen.add(r.status() + " " + method);
            }
            JsonNode list = f.get("/v1/hints").body().path("hints");
            assertThat(ids(list)).as("the hints stored are the ones accepted").isEqualTo(accepted);
            for (JsonNode h : list) {
                assertThat(h.path("paths")).as("%s", h).allSatisfy(p -> assertThat(p.asText()).startsWith("/data/a"));
            }
            assertThat(seen).as("the fuzzer reached the handlers, not only the router").anyMatch(s -> s.startsWith("400 POST"));

            // bytes that are not HTTP, inside a good TLS session: the connection closes, the server stays
            for (int i = 0; i < 20; i++) {
                byte[] junk = new byte[1 + rnd.nextInt(4096)];
                rnd.nextBytes(junk);
                if (i % 2 == 0) {
                    byte[] head = ("POST /v1/hints HTTP/1.1\r\nHost: x\r\nContent-Length: " + (rnd.nextInt(3) == 0 ? "-5" : "99999999999")
                            + "\r\nAuthorization: Bearer " + f.secured.schedulerToken() + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
                    System.arraycopy(head, 0, junk, 0, Math.min(head.length, junk.length));
                }
                rawExchange(f, junk);
            }
            HttpClient fresh = HooksHttp.client(Optional.of(f.secured.caFile()), Duration.ofSeconds(5));
            HttpResponse<String> health = fresh.send(HttpRequest.newBuilder(URI.create(f.hooks.url() + "/v1/health"))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(ids(f.get("/v1/hints").body().path("hints"))).isEqualTo(accepted);
        }
    }

    private static java.util.Set<String> ids(JsonNode hints) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        hints.forEach(h -> out.add(h.path("id").asText()));
        return out;
    }

    /** Writes {@code bytes} on a fresh TLS connection to the hooks and reads whatever comes back until it closes. */
    private static void rawExchange(HooksFixture f, byte[] bytes) throws Exception {
        try (SSLSocket s = (SSLSocket) HooksHttp.trusting(f.secured.caFile()).getSocketFactory()
                .createSocket("127.0.0.1", f.hooks.address().getPort())) {
            s.setSoTimeout(10_000);
            s.startHandshake();
            OutputStream out = s.getOutputStream();
            out.write(bytes);
            out.flush();
            s.shutdownOutput();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[8192];
            String first = null;
            int n;
            while ((n = in.read(buf)) > 0) {
                if (first == null) {
                    first = new String(buf, 0, Math.min(n, 12), StandardCharsets.US_ASCII);
                }
            }
            if (first != null && first.startsWith("HTTP/1.1 ")) {
                assertThat(first.charAt(9)).as("an answer to junk: %s", first).isNotEqualTo('5');
            }
        } catch (java.net.SocketException | javax.net.ssl.SSLException e) {
            // closed on us: what a server should do with bytes that are not HTTP
        }
    }

    private static String path(Random rnd) {
        return switch (rnd.nextInt(8)) {
            case 0 -> "/v1/hints";
            case 1 -> "/v1/hints/" + segment(rnd);
            case 2 -> "/v1/hints/" + segment(rnd) + "/cancel";
            case 3 -> "/v1/jobs/" + segment(rnd) + "/end";
            case 4 -> "/v1/" + segment(rnd);
            case 5 -> "/" + segment(rnd) + "/" + segment(rnd);
            case 6 -> "/v1/hints?job=" + segment(rnd);
            default -> "/v1/hints/" + (rnd.nextBoolean() ? Long.toString(rnd.nextLong()) : "99999999999999999999999");
        };
    }

    /** A URL-safe encoding of a random string: letters, unicode, dots, slashes, percent signs, nothing at all. */
    private static String segment(Random rnd) {
        String raw = switch (rnd.nextInt(5)) {
            case 0 -> "";
            case 1 -> "..";
            case 2 -> "x".repeat(rnd.nextInt(3000));
            case 3 -> new String(Character.toChars(0x1F600 + rnd.nextInt(50))) + "%00/" + rnd.nextInt();
            default -> Long.toString(rnd.nextInt(100));
        };
        return URLEncoder.encode(raw, StandardCharsets.UTF_8);
    }

    private static String body(Random rnd) {
        return switch (rnd.nextInt(9)) {
            case 0 -> "{\"job\": \"j" + rnd.nextInt(5) + "\", \"paths\": [\"/data/a\"]}"; // well formed
            case 1 -> "{\"job\": " + value(rnd) + ", \"paths\": " + value(rnd) + "}";
            case 2 -> "{\"job\": \"j\", \"paths\": [\"/data/a\"], \"" + field(rnd) + "\": " + value(rnd) + "}";
            case 3 -> "[".repeat(1 + rnd.nextInt(20_000));
            case 4 -> "{\"job\": \"j\", \"paths\": [\"/data/a\"], \"deadline\": " + value(rnd) + ", \"nodes\": " + value(rnd) + "}";
            case 5 -> {
                byte[] b = new byte[rnd.nextInt(2000)];
                rnd.nextBytes(b);
                yield new String(b, StandardCharsets.ISO_8859_1);
            }
            case 6 -> "{\"job\": \"j\", \"paths\": [" + "\"/data/a\",".repeat(rnd.nextInt(2000)) + "\"/data/a\"]}";
            case 7 -> "{\"job\": \"j\", \"paths\": [\"/data/a\"], \"priority\": " + value(rnd) + ", \"qos\": " + value(rnd) + "}";
            default -> "";
        };
    }

    private static String field(Random rnd) {
        return List.of("job", "paths", "deadline", "priority", "nodes", "qos", "", "__proto__", "x".repeat(500)).get(rnd.nextInt(9));
    }

    private static String value(Random rnd) {
        return switch (rnd.nextInt(10)) {
            case 0 -> "null";
            case 1 -> "true";
            case 2 -> Long.toString(rnd.nextLong());
            case 3 -> "1e309";
            case 4 -> "\"" + "\\u0000".repeat(rnd.nextInt(5)) + "\"";
            case 5 -> "[" + "1,".repeat(rnd.nextInt(100)) + "1]";
            case 6 -> "{\"a\": {\"b\": [null, {}]}}";
            case 7 -> "\"/data/a/" + "../".repeat(rnd.nextInt(10)) + "\"";
            case 8 -> "\"2099-01-01T00:00:00Z\"";
            default -> "\"gpu-" + rnd.nextInt(3) + "\"";
        };
    }
}
