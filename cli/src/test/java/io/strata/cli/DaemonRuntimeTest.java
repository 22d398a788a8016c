package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.strata.config.ConfigNode;
import io.strata.config.NodeConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

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
}
