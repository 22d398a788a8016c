package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.core.instrument.Counter;
import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
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
}
