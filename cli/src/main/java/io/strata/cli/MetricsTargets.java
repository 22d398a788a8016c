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
            String metrics = p.getProperty("metrics");
            if (metrics != null && !metrics.isBlank()) {
                out.put(m.name(), BenchFsRunCommand.metricsUri(metrics));
            }
        }
        return out;
    }

    /**
     * A Prometheus configuration that scrapes every daemon in {@code targets} every
     * {@code intervalSeconds}, each with the label {@code daemon} (the metrics themselves carry
     * {@code node} and {@code kind}).
     */
    static String prometheusConfig(Map<String, URI> targets, int intervalSeconds) {
        StringBuilder y = new StringBuilder();
        y.append("# Written by `strata up`: every daemon of this local cluster as a Prometheus target.\n");
        y.append("# prometheus --config.file=THIS_FILE --storage.tsdb.path=DIR\n");
        y.append("global:\n  scrape_interval: ").append(intervalSeconds).append("s\n  evaluation_interval: ")
                .append(intervalSeconds).append("s\n");
        y.append("scrape_configs:\n  - job_name: strata\n    metrics_path: /metrics\n    static_configs:\n");
        for (Map.Entry<String, URI> e : targets.entrySet()) {
            URI u = e.getValue();
            y.append("      - targets: [\"").append(u.getHost()).append(':').append(u.getPort()).append("\"]\n");
            y.append("        labels: {daemon: \"").append(e.getKey()).append("\"}\n");
        }
        return y.toString();
    }

    /** Writes {@value #PROMETHEUS_YML} into the cluster's data directory; returns its path. */
    static Path writePrometheusConfig(ClusterDir dir) throws IOException {
        Path f = dir.root.resolve(PROMETHEUS_YML);
        AtomicFiles.plain().write(f, prometheusConfig(local(dir), 5), false);
        return f;
    }
}
