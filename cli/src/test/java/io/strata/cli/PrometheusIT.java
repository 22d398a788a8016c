package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.core.util.Eventually;
import io.strata.testing.Slow;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Random;
import java.util.Map;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Prometheus (Debian's {@code prometheus} server) scrapes a {@code strata up} cluster
 * with the configuration {@code strata up} writes: every daemon is a target, and the key series
 * arrive with their labels, as Prometheus's own query API shows. {@code strata stats} reads the
 * same endpoints.
 */
@Slow
class PrometheusIT {
    private static final Duration T = Duration.ofSeconds(90);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private static JsonNode query(int port, String promql) throws Exception {
        URI u = URI.create("http://127.0.0.1:" + port + "/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(u).timeout(Duration.ofSeconds(10)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        return new ObjectMapper().readTree(r.body()).path("data").path("result");
    }

    /** The whole answer of Prometheus's query API ({@code status}, {@code error}, {@code data}). */
    private static JsonNode answer(int port, String promql) throws Exception {
        URI u = URI.create("http://127.0.0.1:" + port + "/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(u).timeout(Duration.ofSeconds(10)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        return new ObjectMapper().readTree(r.body());
    }

    /** The Grafana dashboard shipped in docs/: title of each panel -> its PromQL expressions, as Prometheus runs them. */
    static Map<String, List<String>> dashboardQueries() throws Exception {
        JsonNode dash = new ObjectMapper().readTree(Files.readString(Path.of("..", "docs", "grafana", "strata.json")));
        Map<String, List<String>> out = new LinkedHashMap<>();
        for (JsonNode panel : dash.path("panels")) {
            List<String> exprs = new ArrayList<>();
            panel.path("targets").forEach(t -> exprs.add(t.path("expr").asText().replace("$__rate_interval", "1m")));
            out.put(panel.path("title").asText(), exprs);
        }
        return out;
    }

    private static Set<String> labelValues(JsonNode result, String label) {
        Set<String> out = new HashSet<>();
        result.forEach(s -> out.add(s.path("metric").path(label).asText()));
        return out;
    }

    @Test
    void prometheusScrapesEveryDaemonWithItsLabels(@TempDir Path data, @TempDir Path tsdb, @TempDir Path local) throws Exception {
        Path prometheus = Path.of("/usr/bin/prometheus");
        assumeTrue(Files.isExecutable(prometheus), "Debian's prometheus is not installed (apt-get install prometheus); .ci/run installs it");
        boolean mounted = io.strata.fuse.FuseMount.unavailable().isEmpty(); // the mount's FUSE and L1 series when FUSE works here
        CliTest.Run up = mounted ? CliTest.strata("up", "--data", data.toString()) : CliTest.strata("up", "--data", data.toString(), "--no-mount");
        assertThat(up.code()).as(up.err()).isZero();
        assertThat(up.out()).contains("prometheus --config.file=" + data.resolve(MetricsTargets.PROMETHEUS_YML));
        String d = "--data=" + data;
        Process p = null;
        try {
            String yml = Files.readString(data.resolve(MetricsTargets.PROMETHEUS_YML));
            assertThat(yml).contains("daemon: \"storage-1\"").contains("daemon: \"meta\"");
            int port;
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
            p = new ProcessBuilder(prometheus.toString(), "--config.file=" + data.resolve(MetricsTargets.PROMETHEUS_YML),
                    "--storage.tsdb.path=" + tsdb, "--web.listen-address=127.0.0.1:" + port)
                    .redirectErrorStream(true).redirectOutput(local.resolve("prometheus.log").toFile()).start();
            byte[] file = new byte[8 << 20];
            new Random(3).nextBytes(file);
            Path src = Files.write(local.resolve("sample.bin"), file);
            assertThat(CliTest.strata("mkdir", "-p", "/ds", d).code()).isZero();
            assertThat(CliTest.strata("put", src.toString(), "/ds/", d).code()).isZero();
            assertThat(CliTest.strata("cp", "strata:/ds/sample.bin", local.resolve("back.bin").toString(), d).code()).isZero();
            if (mounted) {
                Path viaMount = data.resolve("mnt").resolve("ds/via-mount.bin");
                Files.write(viaMount, file);
                assertThat(Files.readAllBytes(data.resolve("mnt").resolve("ds/sample.bin"))).isEqualTo(file);
            }

            int prom = port;
            int targets = MetricsTargets.local(new ClusterDir(data)).size();
            Eventually.await("Prometheus scraped every daemon", T, () -> {
                try {
                    JsonNode upSeries = query(prom, "up == 1");
                    return upSeries.size() == targets;
                } catch (Exception e) {
                    return false;
                }
            });
            Eventually.await("the storage nodes' write bytes in Prometheus", T, () -> {
                try {
                    return labelValues(query(prom, "strata_storage_bytes_total{op=\"write\"} > 0"), "node").size() >= 1;
                } catch (Exception e) {
                    return false;
                }
            });
            JsonNode writes = query(prom, "strata_storage_bytes_total{op=\"write\"}");
            assertThat(labelValues(writes, "node")).contains("storage-1", "storage-2", "storage-3");
            assertThat(labelValues(writes, "kind")).containsExactly("storage");
            assertThat(labelValues(query(prom, "strata_meta_ops_seconds_count"), "daemon")).contains("meta");
            assertThat(labelValues(query(prom, "strata_rpc_served_total"), "kind")).contains("storage", "meta", "mgmtd");
            // the sum of what the head nodes took in is the file, three times less (each chunk enters at one head)
            double written = query(prom, "sum(strata_storage_bytes_total{op=\"write\"})").path(0).path("value").path(1).asDouble();
            assertThat(written).isGreaterThanOrEqualTo(file.length);

            CliTest.Run stats = CliTest.strata("stats", d, "--count", "1", "--interval", "500ms", "--json");
            assertThat(stats.code()).as(stats.err()).isZero();
            assertThat(new ObjectMapper().readTree(stats.out().lines().toList().get(0)).has("l3_read_mb_per_s")).isTrue();

            // the shipped Grafana dashboard: every query is valid PromQL over these series, and the core panels show data
            Map<String, List<String>> panels = dashboardQueries();
            assertThat(panels).hasSizeGreaterThanOrEqualTo(12);
            for (Map.Entry<String, List<String>> panel : panels.entrySet()) {
                for (String expr : panel.getValue()) {
                    JsonNode a = answer(prom, expr);
                    assertThat(a.path("status").asText()).as("%s: %s -> %s", panel.getKey(), expr, a.path("error").asText()).isEqualTo("success");
                }
            }
            List<String> withData = new ArrayList<>(List.of("Daemons up (1 = scraped)", "Metadata operations", "L3 storage bytes by operation",
                    "L3 storage mean latency by operation", "L2 drain to L3", "L2 drain lag", "RPCs served by status", "Cluster capacity (raw)",
                    "Scrub: corrupt copies found, repaired, not repaired", "Garbage collector: chunks freed",
                    "Resync sent, and the rate the nodes may send"));
            if (mounted) {
                withData.addAll(List.of("FUSE requests by operation", "FUSE mean latency by operation", "L1 hit ratio (blocks)",
                        "L1 bytes served by tier"));
            }
            for (String title : withData) {
                assertThat(panels).containsKey(title);
                Eventually.await("the dashboard's '" + title + "' panel has data", T, () -> {
                    try {
                        for (String expr : panels.get(title)) {
                            if (query(prom, expr).isEmpty()) {
                                return false;
                            }
                        }
                        return true;
                    } catch (Exception e) {
                        return false;
                    }
                });
            }
            double capacity = query(prom, "max(strata_cluster_capacity_bytes >= 0)").path(0).path("value").path(1).asDouble();
            assertThat(capacity).as("the leader's capacity gauge").isPositive();

            // health: all well (however full this machine's disk is), then a disk over the limit, then a storage node dies
            CliTest.Run healthy = CliTest.strata("admin", "health", d, "--full-above", "100%");
            assertThat(healthy.code()).as(healthy.out() + healthy.err()).isZero();
            assertThat(healthy.out()).contains("Nothing needs attention").contains("serving targets reporting");
            CliTest.Run full = CliTest.strata("admin", "health", d, "--full-above", "0.001");
            assertThat(full.code()).as(full.out() + full.err()).isEqualTo(1);
            assertThat(full.out()).containsPattern("ATTENTION  target \\d+ on node \\d+ is \\d+% full \\(.* free of .*\\)");
            CliTest.Run badLimit = CliTest.strata("admin", "health", d, "--full-above", "120%");
            assertThat(badLimit.code()).isEqualTo(1);
            assertThat(badLimit.err()).contains("--full-above: expected a percentage from 0 to 100");
            ClusterDir.Member s3 = new ClusterDir(data).members().stream().filter(m -> m.name().equals("storage-3")).findFirst().orElseThrow();
            ProcessHandle.of(s3.pid()).ifPresent(ProcessHandle::destroyForcibly);
            Eventually.await("health reports the dead node", T, () -> {
                CliTest.Run h = CliTest.strata("admin", "health", d);
                return h.code() == 1 && h.out().contains("ATTENTION") && h.out().contains("holds no lease");
            });
            Eventually.await("Prometheus sees the dead node's endpoint down", T, () -> {
                try {
                    return labelValues(query(prom, "up == 0"), "daemon").contains("storage-3");
                } catch (Exception e) {
                    return false;
                }
            });
        } finally {
            if (p != null) {
                p.destroy();
                p.waitFor(10, TimeUnit.SECONDS);
                p.destroyForcibly();
            }
            assertThat(CliTest.strata("down", "--data", data.toString()).code()).isZero();
        }
    }
}
