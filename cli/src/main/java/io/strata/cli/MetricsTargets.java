package io.strata.cli;

import io.strata.store.AtomicFiles;
import java.io.IOException;
import java.io.Reader;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * Where the daemons of a local cluster publish their metrics: each daemon writes its
 * {@code /metrics} address into the ready file in its directory, and {@code strata up} gathers
 * them into a Prometheus scrape configuration ({@value #PROMETHEUS_YML} in the data directory).
 */
final class MetricsTargets {
    static final String PROMETHEUS_YML = "prometheus.yml";

    private MetricsTargets() {
    }

    /** Daemon name to its {@code /metrics} URI, for every member of the local cluster that has one. */
    static Map<String, URI> local(ClusterDir dir) throws IOException {
        Map<String, URI> out = new LinkedHashMap<>();
        for (ClusterDir.Member m : dir.members()) {
            Path ready = dir.daemonDir(m.name()).resolve(DaemonRuntime.READY_FILE);
            if (!Files.exists(ready)) {
                continue;
            }
            Properties p = new Properties();
            try (Reader r = Files.newBufferedReader(ready)) {
                p.load(r);
            }
            String metrics = p.getProperty("metrics-url", p.getProperty("metrics")); // the URL when it serves HTTPS
            if (metrics != null && !metrics.isBlank()) {
                out.put(m.name(), BenchFsRunCommand.metricsUri(metrics));
            }
        }
        return out;
    }

    /**
     * A Prometheus configuration that scrapes every daemon in {@code targets} every
     * {@code intervalSeconds}, each with the label {@code daemon} (the metrics themselves carry
     * {@code node} and {@code kind}). Plain endpoints go in the job {@code strata}; HTTPS ones
     * (daemons off loopback with [tls]) in {@code strata-https}, verified with {@code caFile} and
     * presenting the token in {@code tokenFile}, when given.
     */
    static String prometheusConfig(Map<String, URI> targets, int intervalSeconds) {
        return prometheusConfig(targets, intervalSeconds, null, null);
    }

    static String prometheusConfig(Map<String, URI> targets, int intervalSeconds, Path caFile, Path tokenFile) {
        StringBuilder y = new StringBuilder();
        y.append("# Written by `strata up`: every daemon of this local cluster as a Prometheus target.\n");
        y.append("# prometheus --config.file=THIS_FILE --storage.tsdb.path=DIR\n");
        y.append("global:\n  scrape_interval: ").append(intervalSeconds).append("s\n  evaluation_interval: ")
                .append(intervalSeconds).append("s\n");
        y.append("scrape_configs:\n");
        for (boolean https : new boolean[] {false, true}) {
            Map<String, URI> group = new LinkedHashMap<>();
            targets.forEach((name, u) -> {
                if ("https".equalsIgnoreCase(u.getScheme()) == https) {
                    group.put(name, u);
                }
            });
            if (group.isEmpty() && (https || targets.values().stream().anyMatch(u -> "https".equalsIgnoreCase(u.getScheme())))) {
                continue;
            }
            y.append("  - job_name: ").append(https ? "strata-https" : "strata").append("\n    metrics_path: /metrics\n");
            if (https) {
                y.append("    scheme: https\n");
                if (caFile != null) {
                    y.append("    tls_config:\n      ca_file: \"").append(caFile).append("\"\n");
                }
                if (tokenFile != null) {
                    y.append("    authorization:\n      type: Bearer\n      credentials_file: \"").append(tokenFile).append("\"\n");
                }
            }
            y.append("    static_configs:\n");
            for (Map.Entry<String, URI> e : group.entrySet()) {
                URI u = e.getValue();
                y.append("      - targets: [\"").append(u.getHost()).append(':').append(u.getPort()).append("\"]\n");
                y.append("        labels: {daemon: \"").append(e.getKey()).append("\"}\n");
            }
        }
        return y.toString();
    }

    /** Writes {@value #PROMETHEUS_YML} into the cluster's data directory; returns its path. */
    static Path writePrometheusConfig(ClusterDir dir) throws IOException {
        Path f = dir.root.resolve(PROMETHEUS_YML);
        Path ca = dir.root.resolve(UpTls.DIR).resolve(UpTls.CA_CERT);
        Path token = dir.root.resolve(UpAuth.CLIENT_TOKEN); // any token of the cluster will do: the least one
        AtomicFiles.plain().write(f, prometheusConfig(local(dir), 5, Files.exists(ca) ? ca : null, Files.exists(token) ? token : null),
                false);
        return f;
    }
}
