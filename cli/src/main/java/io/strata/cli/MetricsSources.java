package io.strata.cli;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The daemons' metrics endpoints a command reads ({@code strata stats}, {@code strata admin
 * slow}): those named with {@code --endpoint}, else every daemon of the local cluster that
 * announced one.
 */
final class MetricsSources {
    @Option(names = "--data", paramLabel = "DIR", description = "Data directory of the local cluster (default: $STRATA_DATA, else ./data).")
    Path data;

    @Option(names = "--endpoint", paramLabel = "HOST:PORT|URL", description = "A daemon's metrics endpoint (repeatable); "
            + "replaces the local cluster's list.")
    List<String> endpoints = new ArrayList<>();

    /** Name to {@code /metrics} URI of every daemon to read; never empty. */
    Map<String, URI> targets() throws IOException {
        Map<String, URI> targets = new LinkedHashMap<>();
        if (!endpoints.isEmpty()) {
            for (String e : endpoints) {
                targets.put(e, BenchFsRunCommand.metricsUri(e));
            }
            return targets;
        }
        ClusterDir dir = ClusterDir.resolve(data);
        targets.putAll(MetricsTargets.local(dir));
        if (targets.isEmpty()) {
            throw new IllegalArgumentException("no daemon with a metrics endpoint in " + dir.root
                    + " (is the cluster up? `strata up`; or name endpoints with --endpoint HOST:PORT)");
        }
        return targets;
    }
}
