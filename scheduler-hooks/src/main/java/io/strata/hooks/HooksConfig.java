package io.strata.hooks;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.config.TlsConfig;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * The {@code [hooks]} table of {@code strata hooks --config FILE} (docs/configuration.md):
 * where the HTTP API listens, the cluster manager that keeps the hints, and the planner's knobs;
 * and the process's {@code [tls]} table, with which the API is HTTPS ({@link HooksTls}).
 */
public record HooksConfig(InetSocketAddress listen, List<InetSocketAddress> mgmtd, Planner.Options planner, TlsConfig tls) {
    /** The port the API listens on unless told otherwise. */
    public static final int DEFAULT_PORT = 7390;

    public HooksConfig {
        if (tls == null) {
            throw new IllegalArgumentException("tls: give TlsConfig.OFF for plain HTTP");
        }
    }

    /** The {@code [hooks]} table {@code s}, served with {@code tls} (the process's {@code [tls]} table). */
    public static HooksConfig read(ConfigNode s, TlsConfig tls) {
        List<InetSocketAddress> mgmtd = s.addresses("mgmtd");
        if (mgmtd.isEmpty()) {
            throw new ConfigException(s.path() + ".mgmtd", "is required: the hints live in the cluster manager");
        }
        InetSocketAddress given = s.address("listen").orElse(InetSocketAddress.createUnresolved("127.0.0.1", DEFAULT_PORT));
        InetSocketAddress listen = new InetSocketAddress(given.getHostString(), given.getPort()); // resolved, to bind
        Planner.Options o = new Planner.Options(
                s.integer("window", Planner.Options.DEFAULTS.window(), 1, 1024),
                s.duration("fetch-timeout", Planner.Options.DEFAULTS.fetchTimeout(), Duration.ofSeconds(1), Duration.ofHours(1)),
                s.duration("meta-timeout", Planner.Options.DEFAULTS.metaTimeout(), Duration.ofSeconds(1), Duration.ofMinutes(10)),
                s.duration("progress-every", Planner.Options.DEFAULTS.persistEvery(), Duration.ofMillis(50), Duration.ofMinutes(1)));
        return new HooksConfig(listen, mgmtd, o, tls);
    }
}
