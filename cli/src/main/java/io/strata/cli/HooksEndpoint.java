package io.strata.cli;

import io.strata.config.ConfigNode;
import io.strata.config.TlsConfig;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.hooks.HooksHttp;
import java.io.IOException;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * Where a command reaches the scheduler hooks' API and how it checks the server: the base URL,
 * scheme included, and the CA file that issued the server's certificate.
 *
 * <p>The server is {@code --hooks}, else {@code $STRATA_HOOKS}, else the local {@code strata up}
 * cluster's. The CA is {@code --ca-file}, else {@code $STRATA_HOOKS_CA}, else, for the local
 * cluster, the {@code [tls] ca-file} of its {@code client.toml}: the cluster CA, which
 * {@code strata up} writes there unless {@code --no-tls}. A server given as {@code HOST:PORT}
 * is {@code https://} when there is a CA file, else {@code http://}; a URL keeps its scheme.
 *
 * @param url    the base URL, without a trailing slash: {@code https://127.0.0.1:7390}
 * @param caFile the CA certificate(s) to verify the server with; none: plain HTTP, or HTTPS
 *               against the system's trust store
 * @param caFrom where the CA file came from, for error messages
 */
record HooksEndpoint(String url, Optional<Path> caFile, String caFrom) {
    static final String ENV_HOOKS = "STRATA_HOOKS";
    static final String ENV_CA = "STRATA_HOOKS_CA";

    /** The endpoint the options ({@code hooks}, {@code caFile}, {@code data}: null when not given) and {@code env} name. */
    static HooksEndpoint resolve(String hooks, Path caFile, Path data, UnaryOperator<String> env) {
        String server = hooks != null ? hooks : env.apply(ENV_HOOKS);
        Optional<Path> ca = Optional.empty();
        String from = "";
        if (caFile != null) {
            ca = Optional.of(caFile);
            from = "--ca-file";
        } else if (env.apply(ENV_CA) != null && !env.apply(ENV_CA).isBlank()) {
            ca = Optional.of(Path.of(env.apply(ENV_CA)));
            from = "$" + ENV_CA;
        }
        if (server == null || server.isBlank()) {
            ClusterDir dir = ClusterDir.resolve(data, env);
            UpLayout l = UpLayout.find(dir.root).orElseThrow(() -> new StrataException(Status.INVALID_ARGUMENT,
                    "no hooks server named: give --hooks HOST:PORT or set $" + ENV_HOOKS + " (no local cluster in " + dir.root + ")"));
            server = UpLayout.HOST + ":" + l.hooksHttp();
            if (ca.isEmpty()) {
                Path client = dir.root.resolve(ClientSource.CLIENT_TOML);
                ca = localCa(client);
                from = client + " [tls] ca-file";
            }
        }
        return new HooksEndpoint(url(server.strip(), ca.isPresent()), ca, from);
    }

    /** The local cluster's on data directory {@code data} (the benches' own cluster). */
    static HooksEndpoint local(Path data) {
        return resolve(null, null, data, name -> null);
    }

    /** The base URL of {@code server} (HOST:PORT or a URL, maybe ending in / or /v1/). */
    static String url(String server, boolean https) {
        String u = server.replaceAll("/+$", "").replaceAll("/v1$", "");
        return u.contains("://") ? u : (https ? "https://" : "http://") + u;
    }

    /** The CA of the local cluster's client config: the cluster CA when the cluster runs TLS. */
    private static Optional<Path> localCa(Path clientToml) {
        if (!Files.exists(clientToml)) {
            return Optional.empty();
        }
        TlsConfig tls = TlsConfig.read(ConfigNode.load(clientToml));
        return tls.enabled() ? Optional.of(tls.caFile()) : Optional.empty();
    }

    /** An HTTP client that verifies the server with {@link #caFile} (when there is one). */
    HttpClient client(Duration connectTimeout) {
        try {
            return HooksHttp.client(caFile, connectTimeout);
        } catch (IOException e) {
            throw new StrataException(Status.INVALID_ARGUMENT, "the hooks server's CA file (" + caFrom + "): " + e.getMessage());
        }
    }
}
