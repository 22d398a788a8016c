package io.strata.config;

import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.Transport;
import io.strata.core.trace.SlowOps;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;

/**
 * What every daemon's config file starts with:
 * <pre>
 * [node]
 * name = "storage-1"         # for logs and metrics
 * listen = "127.0.0.1:9100"  # RPC address (port 0 = any free port)
 * data = "/var/lib/strata/storage-1"
 * transport = "auto"         # auto | nio | epoll | io_uring
 * metrics = "127.0.0.1:9190" # optional Prometheus endpoint (and /slow: recent slow operations)
 * slow-op = "200ms"          # an operation this long is kept and logged as slow (with its trace id)
 * metrics-open = false       # true: a metrics endpoint off loopback serves anyone; false: a token is needed there
 * [rpc]                      # see RpcConfig
 * [auth]                     # see AuthConfig; absent: authentication off
 * [tls]                      # see TlsConfig; absent: plaintext RPC
 * </pre>
 */
public record NodeConfig(String name, InetSocketAddress listen, Path data, Transport transport,
                         InetSocketAddress metrics, RpcOptions rpc, AuthConfig auth, TlsConfig tls, Duration slowOp,
                         boolean metricsOpen) {

    public static NodeConfig read(ConfigNode root, String defaultName) {
        ConfigNode n = root.section("node");
        String name = n.string("name", defaultName);
        if (name.isBlank() || !name.matches("[A-Za-z0-9._-]+")) {
            throw new ConfigException(n.path() + ".name", "must be letters, digits, '.', '_' or '-', got \"" + name + "\"");
        }
        InetSocketAddress listen = n.address("listen").orElse(InetSocketAddress.createUnresolved("127.0.0.1", 0));
        String data = n.string("data", null);
        String t = n.string("transport", "auto");
        Transport transport;
        try {
            transport = Transport.resolve(t);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(n.path() + ".transport", e.getMessage());
        }
        InetSocketAddress metrics = n.address("metrics").orElse(null);
        Duration slowOp = n.duration("slow-op", SlowOps.DEFAULT_THRESHOLD, Duration.ZERO, Duration.ofHours(1));
        boolean metricsOpen = n.bool("metrics-open", false);
        RpcOptions rpc;
        try {
            rpc = RpcConfig.read(root.section("rpc"));
        } catch (IllegalArgumentException e) {
            throw new ConfigException("rpc", e.getMessage());
        }
        return new NodeConfig(name, listen, data == null ? null : Path.of(data), transport, metrics, rpc, AuthConfig.read(root),
                TlsConfig.read(root), slowOp, metricsOpen);
    }

    /** The data directory, which this daemon needs. */
    public Path requireData() {
        if (data == null) {
            throw new ConfigException("node.data", "is required (the directory this node keeps its state in)");
        }
        return data;
    }
}
