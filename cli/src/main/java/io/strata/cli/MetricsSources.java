package io.strata.cli;

import io.strata.hooks.HooksHttp;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * The daemons' metrics endpoints a command reads ({@code strata stats}, {@code strata admin
 * slow}): those named with {@code --endpoint}, else every daemon of the local cluster that
 * announced one; and how to read them. An endpoint off loopback serves HTTPS when its daemon has
 * {@code [tls]}, verified with {@code --ca-file} (default: the local cluster's CA), and wants a
 * token of the cluster when its daemon has {@code [auth]}: {@code --token-file} (default: the
 * local cluster's client token: any role of the cluster may read metrics). The token is sent
 * only over HTTPS or to a loopback address, never in the clear across a network.
 */
final class MetricsSources {
    @Option(names = "--data", paramLabel = "DIR", description = "Data directory of the local cluster (default: $STRATA_DATA, else ./data).")
    Path data;

    @Option(names = "--endpoint", paramLabel = "HOST:PORT|URL", description = "A daemon's metrics endpoint (repeatable); "
            + "replaces the local cluster's list. https://HOST:PORT for a daemon that serves HTTPS.")
    List<String> endpoints = new ArrayList<>();

    @Option(names = "--ca-file", paramLabel = "PEM", description = "The CA that signed the daemons' certificates, to verify their "
            + "HTTPS metrics endpoints (default: the local cluster's, DATA/tls/ca.pem).")
    Path caFile;

    @Option(names = "--token-file", paramLabel = "FILE", description = "A token of the cluster for endpoints off loopback that want one "
            + "(default: the local cluster's client token). Sent only over HTTPS or to loopback.")
    Path tokenFile;

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

    /** A client that verifies HTTPS endpoints with the CA (when there is one). */
    HttpClient client() {
        Optional<Path> ca = Optional.ofNullable(caFile);
        if (ca.isEmpty()) {
            Path local = ClusterDir.resolve(data).root.resolve(UpTls.DIR).resolve(UpTls.CA_CERT);
            ca = Files.exists(local) ? Optional.of(local) : Optional.empty();
        }
        try {
            return HooksHttp.client(ca, Duration.ofSeconds(3));
        } catch (IOException e) {
            throw new IllegalArgumentException("--ca-file: " + e.getMessage(), e);
        }
    }

    /** A GET of {@code uri} with the token, when there is one and it may be sent there. */
    HttpRequest.Builder request(URI uri) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).GET();
        token().filter(t -> mayCarryToken(uri)).ifPresent(t -> b.header("Authorization", "Bearer " + t));
        return b;
    }

    private Optional<String> token() {
        Path f = tokenFile;
        if (f == null) {
            Path local = ClusterDir.resolve(data).root.resolve(UpAuth.CLIENT_TOKEN);
            f = Files.exists(local) ? local : null;
        }
        return f == null ? Optional.empty() : Optional.of(ClientSource.read(f).token());
    }

    /** Over HTTPS, or to a loopback address: a token sent there is not readable on the network. */
    static boolean mayCarryToken(URI uri) {
        if ("https".equalsIgnoreCase(uri.getScheme())) {
            return true;
        }
        try {
            return uri.getHost() != null && InetAddress.getByName(uri.getHost()).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }
}
