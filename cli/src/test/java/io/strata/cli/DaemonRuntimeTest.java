package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.core.instrument.Counter;
import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.tls.CertificateAuthority;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a daemon's metrics endpoint serves: its series with the daemon's tags (a mount's job too), and {@code /slow}. */
class DaemonRuntimeTest {
    private static String get(DaemonRuntime rt, String path) throws Exception {
        URI uri = URI.create("http://127.0.0.1:" + rt.metricsAddress().getPort() + path);
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        return r.body();
    }

    @Test
    void aMountsJobTagsEverySeriesItServesAndItsSlowOperationsAreServedBeside() throws Exception {
        NodeConfig node = NodeConfig.read(ConfigNode.parse("""
                [node]
                name = "mount"
                metrics = "127.0.0.1:0"
                slow-op = "50ms"
                """, "test.toml"), "mount");
        try (DaemonRuntime rt = new DaemonRuntime("mount", node, Map.of(MountCommand.JOB_TAG, "train-42"))) {
            Counter.builder("strata.client.bytes").tag("op", "read").register(rt.ctx.meters()).increment(4096);
            assertThat(get(rt, "/metrics")).contains("strata_client_bytes_total{kind=\"mount\",node=\"mount\",op=\"read\","
                    + "strata_job=\"train-42\"} 4096.0");

            assertThat(rt.ctx.slowOps().threshold()).as("[node] slow-op").isEqualTo(Duration.ofMillis(50));
            rt.ctx.slowOps().record(0x3f2a9c0d41b7e655L, "fuse", "read", Duration.ofMillis(60).toNanos(), "ok");
            assertThat(get(rt, "/slow")).contains("\"trace\":\"3f2a9c0d41b7e655\"").contains("\"hop\":\"fuse\"")
                    .contains("\"threshold_ms\":50.0");
        }
    }

    /** This host's first IPv4 address that is not loopback, if it has one. */
    private static Optional<InetAddress> offLoopback() throws Exception {
        return NetworkInterface.networkInterfaces().filter(i -> {
            try {
                return i.isUp() && !i.isLoopback();
            } catch (java.net.SocketException e) {
                return false;
            }
        }).flatMap(NetworkInterface::inetAddresses).filter(a -> a instanceof Inet4Address).findFirst();
    }

    private static int status(InetAddress host, int port, String path, String token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + host.getHostAddress() + ":" + port + path))
                .timeout(Duration.ofSeconds(5));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    @Test
    void offLoopbackTheMetricsWantATokenOfTheClusterUnlessOpen(@TempDir Path dir) throws Exception {
        Optional<InetAddress> ip = offLoopback();
        assumeTrue(ip.isPresent(), "this host has no address but loopback");
        String host = ip.get().getHostAddress();
        ClusterKey key = ClusterKey.generate();
        key.writeNew(dir.resolve("cluster.key"));
        String auth = "[auth]\nkey-file = \"" + dir.resolve("cluster.key") + "\"\n";
        NodeConfig guarded = NodeConfig.read(ConfigNode.parse("[node]\nname = \"storage-1\"\nmetrics = \"" + host + ":0\"\n" + auth,
                "test.toml"), "storage-1");
        try (DaemonRuntime rt = new DaemonRuntime("storage", guarded)) {
            int port = rt.metricsAddress().getPort();
            assertThat(status(ip.get(), port, "/metrics", null)).as("no token").isEqualTo(401);
            assertThat(status(ip.get(), port, "/slow", "strata1.forged.token")).as("a forged token").isEqualTo(401);
            String other = Token.issue(ClusterKey.generate(), Role.ADMIN, "ops", Instant.now(), Duration.ofHours(1));
            assertThat(status(ip.get(), port, "/metrics", other)).as("another cluster's token").isEqualTo(401);
            String mine = Token.issue(key, Role.SCHEDULER, "prometheus", Instant.now(), Duration.ofHours(1));
            assertThat(status(ip.get(), port, "/metrics", mine)).isEqualTo(200);
            assertThat(status(ip.get(), port, "/slow", mine)).isEqualTo(200);
        }

        NodeConfig open = NodeConfig.read(ConfigNode.parse("[node]\nname = \"storage-2\"\nmetrics = \"" + host + ":0\"\n"
                + "metrics-open = true\n", "test.toml"), "storage-2");
        try (DaemonRuntime rt = new DaemonRuntime("storage", open)) {
            assertThat(status(ip.get(), rt.metricsAddress().getPort(), "/metrics", null)).as("metrics-open").isEqualTo(200);
        }

        NodeConfig unguarded = NodeConfig.read(ConfigNode.parse("[node]\nname = \"storage-3\"\nmetrics = \"" + host + ":0\"\n",
                "test.toml"), "storage-3");
        try (DaemonRuntime rt = new DaemonRuntime("storage", unguarded)) {
            assertThat(status(ip.get(), rt.metricsAddress().getPort(), "/metrics", null))
                    .as("without [auth] no token can be checked: open, as its RPC port is").isEqualTo(200);
        }
    }

    /** A CA and a certificate for {@code host} from it, as PEM files in {@code dir}; returns the [tls] table. */
    private static String tlsTable(Path dir, String host) throws Exception {
        CertificateAuthority ca = CertificateAuthority.generate("test-ca", Instant.now(), Duration.ofDays(1));
        CertificateAuthority.Issued cert = ca.issue("storage", List.of(host, "127.0.0.1"), Instant.now(), Duration.ofDays(1));
        Files.writeString(dir.resolve("ca.pem"), ca.certificatePem());
        Files.writeString(dir.resolve("node.pem"), cert.certificatePem());
        Files.writeString(dir.resolve("node.key"), cert.keyPem());
        return "[tls]\ncert-file = \"" + dir.resolve("node.pem") + "\"\nkey-file = \"" + dir.resolve("node.key") + "\"\nca-file = \""
                + dir.resolve("ca.pem") + "\"\n";
    }

    @Test
    void offLoopbackADaemonWithTlsServesItsMetricsOverHttpsAndTheCommandsReadThemThere(@TempDir Path dir) throws Exception {
        Optional<InetAddress> ip = offLoopback();
        assumeTrue(ip.isPresent(), "this host has no address but loopback");
        String host = ip.get().getHostAddress();
        ClusterKey key = ClusterKey.generate();
        key.writeNew(dir.resolve("cluster.key"));
        String tls = tlsTable(dir, host);
        NodeConfig cfg = NodeConfig.read(ConfigNode.parse("[node]\nname = \"storage-1\"\nmetrics = \"" + host + ":0\"\n"
                + "[auth]\nkey-file = \"" + dir.resolve("cluster.key") + "\"\n" + tls, "test.toml"), "storage-1");
        try (DaemonRuntime rt = new DaemonRuntime("storage", cfg)) {
            int port = rt.metricsAddress().getPort();
            assertThat(rt.metricsUrl()).isEqualTo("https://" + host + ":" + port + "/metrics");
            Map<String, String> info = new java.util.LinkedHashMap<>();
            rt.announceMetrics(info);
            assertThat(info).containsEntry("metrics", host + ":" + port).containsEntry("metrics-url", rt.metricsUrl());
            rt.ctx.slowOps().record(0x3f2a9c0d41b7e655L, "serve", "ReadChunk", Duration.ofMillis(900).toNanos(), "ok");

            assertThatThrownBy(() -> status(ip.get(), port, "/metrics", null)).as("plaintext gets no HTTP answer")
                    .isInstanceOf(java.io.IOException.class);
            String mine = Token.issue(key, Role.CLIENT, "prometheus", Instant.now(), Duration.ofHours(1));
            Files.writeString(dir.resolve("client.token"), mine + "\n");
            HttpClient trusting = io.strata.hooks.HooksHttp.client(Optional.of(dir.resolve("ca.pem")), Duration.ofSeconds(3));
            URI url = URI.create(rt.metricsUrl());
            assertThat(trusting.send(HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.ofString()).statusCode())
                    .as("HTTPS without a token").isEqualTo(401);

            Path otherDir = Files.createDirectories(dir.resolve("other"));
            tlsTable(otherDir, host);
            HttpClient stranger = io.strata.hooks.HooksHttp.client(Optional.of(otherDir.resolve("ca.pem")), Duration.ofSeconds(3));
            assertThatThrownBy(() -> stranger.send(HttpRequest.newBuilder(url).header("Authorization", "Bearer " + mine).build(),
                    HttpResponse.BodyHandlers.ofString())).as("a client that trusts another CA").isInstanceOf(javax.net.ssl.SSLException.class);

            // strata admin slow / strata stats: --endpoint https://..., --ca-file, --token-file
            MetricsSources sources = new MetricsSources();
            sources.endpoints = List.of(rt.metricsUrl());
            sources.caFile = dir.resolve("ca.pem");
            sources.tokenFile = dir.resolve("client.token");
            URI target = sources.targets().values().iterator().next();
            assertThat(target).isEqualTo(url);
            List<AdminSlow.Hop> hops = AdminSlow.fetch(sources.client(), sources.request(target.resolve("/slow")));
            assertThat(hops).singleElement().satisfies(h -> assertThat(h.trace()).isEqualTo("3f2a9c0d41b7e655"));
            assertThat(io.strata.bench.fs.Counters.prometheus(target, "storage-1", sources.client(), sources::request).snapshot())
                    .isNotEmpty();
        }

        // on loopback the same daemon serves plain HTTP, as strata up binds it and its Prometheus config scrapes it
        NodeConfig local = NodeConfig.read(ConfigNode.parse("[node]\nname = \"storage-2\"\nmetrics = \"127.0.0.1:0\"\n" + tls,
                "test.toml"), "storage-2");
        try (DaemonRuntime rt = new DaemonRuntime("storage", local)) {
            assertThat(rt.metricsUrl()).startsWith("http://127.0.0.1:");
            assertThat(get(rt, "/metrics")).contains("jvm_");
        }
    }

    @Test
    void aTokenIsSentOnlyOverHttpsOrToLoopback() {
        assertThat(MetricsSources.mayCarryToken(URI.create("https://10.1.2.3:9100/metrics"))).isTrue();
        assertThat(MetricsSources.mayCarryToken(URI.create("http://127.0.0.1:9100/metrics"))).isTrue();
        assertThat(MetricsSources.mayCarryToken(URI.create("http://10.1.2.3:9100/metrics"))).as("plaintext across a network").isFalse();
    }

    @Test
    void prometheusScrapesHttpsDaemonsWithTheCaAndAToken() {
        Map<String, URI> targets = new java.util.LinkedHashMap<>();
        targets.put("meta", URI.create("http://127.0.0.1:9101/metrics"));
        targets.put("storage-1", URI.create("https://10.1.2.3:9102/metrics"));
        String y = MetricsTargets.prometheusConfig(targets, 5, Path.of("/d/tls/ca.pem"), Path.of("/d/client.token"));
        assertThat(y).contains("""
                  - job_name: strata
                    metrics_path: /metrics
                    static_configs:
                      - targets: ["127.0.0.1:9101"]
                        labels: {daemon: "meta"}
                  - job_name: strata-https
                    metrics_path: /metrics
                    scheme: https
                    tls_config:
                      ca_file: "/d/tls/ca.pem"
                    authorization:
                      type: Bearer
                      credentials_file: "/d/client.token"
                    static_configs:
                      - targets: ["10.1.2.3:9102"]
                        labels: {daemon: "storage-1"}
                """);
        assertThat(MetricsTargets.prometheusConfig(Map.of("meta", URI.create("http://127.0.0.1:9101/metrics")), 5))
                .doesNotContain("https");
    }
}
