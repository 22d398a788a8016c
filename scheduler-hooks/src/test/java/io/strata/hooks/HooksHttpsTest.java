package io.strata.hooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.netty.handler.ssl.OpenSsl;
import io.strata.config.ConfigException;
import io.strata.config.TlsConfig;
import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.TlsEngine;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The hooks API over HTTPS, as a process with a {@code [tls]} table serves it, with each TLS
 * engine: a request with a valid bearer token is served and one without is still refused (the
 * token check stays); a plaintext request to the port gets no HTTP answer and the connection is
 * closed; a client that does not trust the cluster CA fails the handshake; a {@code [tls]} file
 * that cannot be read stops the start, naming its key.
 */
class HooksHttpsTest {
    /** A refusal must come well before the handshake timeout (10 s). */
    private static final Duration PROMPT = Duration.ofSeconds(5);

    @TempDir
    static Path dir;
    static HooksFixture f;

    @BeforeAll
    static void start() throws Exception {
        f = HooksFixture.https(dir, 1701, 1);
    }

    @AfterAll
    static void stop() throws Exception {
        if (f != null) {
            f.close();
        }
    }

    /** Restarts the hooks with {@code engine} doing the TLS work. */
    private static void serveWith(TlsEngine engine) {
        if (engine == TlsEngine.OPENSSL) {
            assumeThat(OpenSsl.isAvailable()).as("BoringSSL (netty-tcnative) loads here: " + OpenSsl.unavailabilityCause()).isTrue();
        }
        TlsConfig t = f.secured.tls();
        f.stopHooks();
        f.startHooks(new TlsConfig(true, t.certFile(), t.keyFile(), t.caFile(), engine));
    }

    private static HttpRequest health(String scheme) {
        return HttpRequest.newBuilder(URI.create(scheme + "://127.0.0.1:" + f.hooks.address().getPort() + "/v1/health"))
                .timeout(PROMPT).build();
    }

    @ParameterizedTest
    @EnumSource(TlsEngine.class)
    void overHttpsARequestWithAValidTokenIsServedAndOneWithoutIsRefused(TlsEngine engine) throws Exception {
        serveWith(engine);
        assertThat(f.hooks.url()).startsWith("https://127.0.0.1:");
        HooksFixture.Http listed = f.get("/v1/hints");
        assertThat(listed.status()).as(listed.body().toString()).isEqualTo(200);
        assertThat(listed.body().has("hints")).isTrue();
        HooksFixture.Http refused = f.post("/v1/hints", "{\"job\": \"j\", \"paths\": [\"/no-such-dir\"]}");
        assertThat(refused.status()).as("a body crosses the TLS connection too").isEqualTo(400);
        assertThat(refused.body().path("error").asText()).contains("paths[0]");

        HttpClient trusting = HooksHttp.client(Optional.of(f.secured.caFile()), PROMPT);
        HttpResponse<String> bare = trusting.send(HttpRequest.newBuilder(URI.create(f.hooks.url() + "/v1/hints")).timeout(PROMPT).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(bare.statusCode()).as("no token, over HTTPS").isEqualTo(401);
        assertThat(bare.body()).contains("UNAUTHENTICATED", "Authorization: Bearer");
    }

    @ParameterizedTest
    @EnumSource(TlsEngine.class)
    void aPlaintextRequestToTheTlsPortGetsNoHttpAnswer(TlsEngine engine) throws Exception {
        serveWith(engine);
        // the health check, which needs no token: a plaintext port would answer it
        long t0 = System.nanoTime();
        try (Socket s = new Socket("127.0.0.1", f.hooks.address().getPort())) {
            s.setSoTimeout((int) PROMPT.multipliedBy(2).toMillis());
            s.getOutputStream().write("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            String back = new String(readToEnd(s.getInputStream()), StandardCharsets.ISO_8859_1);
            assertThat(back).as("what the TLS port sent back to plaintext HTTP").doesNotContain("HTTP/");
        }
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("closed at once, not at the handshake timeout").isLessThan(PROMPT);
        HttpClient plain = HttpClient.newBuilder().connectTimeout(PROMPT).build();
        assertThatThrownBy(() -> plain.send(health("http"), HttpResponse.BodyHandlers.ofString())).isInstanceOf(IOException.class);
        // the port still serves HTTPS
        HttpClient trusting = HooksHttp.client(Optional.of(f.secured.caFile()), PROMPT);
        assertThat(trusting.send(health("https"), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    }

    @ParameterizedTest
    @EnumSource(TlsEngine.class)
    void aClientThatDoesNotTrustTheClusterCaFailsTheHandshake(TlsEngine engine) throws Exception {
        serveWith(engine);
        // the JDK's default trust store: the system CAs, none of which signed the cluster's
        HttpClient system = HttpClient.newBuilder().connectTimeout(PROMPT).build();
        assertHandshakeFails(() -> system.send(health("https"), HttpResponse.BodyHandlers.ofString()));
        // a client that trusts another CA only
        CertificateAuthority other = CertificateAuthority.generate("other CA", Instant.now(), Duration.ofDays(1));
        Path otherCa = Files.writeString(dir.resolve("other-ca.pem"), other.certificatePem());
        HttpClient stranger = HooksHttp.client(Optional.of(otherCa), PROMPT);
        assertHandshakeFails(() -> stranger.send(health("https"), HttpResponse.BodyHandlers.ofString()));
    }

    @Test
    void aTlsFileThatCannotBeReadStopsTheStartNamingIt() {
        TlsConfig t = f.secured.tls();
        Path missing = dir.resolve("tls").resolve("missing.key");
        f.stopHooks();
        try {
            assertThatThrownBy(() -> f.startHooks(new TlsConfig(true, t.certFile(), missing, t.caFile(), TlsEngine.JDK)))
                    .isInstanceOf(ConfigException.class).hasMessageContaining("tls.key-file").hasMessageContaining(missing.toString());
        } finally {
            f.startHooks();
        }
    }

    private interface Call {
        void run() throws Exception;
    }

    private static void assertHandshakeFails(Call call) {
        assertThatThrownBy(call::run).satisfies(e -> {
            Throwable c = e;
            while (c != null && !(c instanceof SSLHandshakeException)) {
                c = c.getCause();
            }
            assertThat(c).as("an SSLHandshakeException in %s", e.toString()).isNotNull();
        });
    }

    /** What the peer sends until it closes (a TLS alert at most); a reset counts as closed. */
    private static byte[] readToEnd(InputStream in) throws IOException {
        try {
            return in.readAllBytes();
        } catch (SocketException reset) {
            return new byte[0];
        }
    }
}
