package io.strata.cli;

import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.strata.config.NodeConfig;
import io.strata.core.NodeContext;
import io.strata.store.AtomicFiles;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every daemon process shares: its {@link NodeContext} with a Prometheus registry (common
 * tag {@code node=<name>}), the optional {@code /metrics} endpoint, the ready file that
 * {@code strata up} waits for, an orderly stop on SIGTERM, and the process's token and key
 * from the config's {@code [auth]} table (the context's credentials and verifier), and its TLS
 * context from the {@code [tls]} table.
 */
final class DaemonRuntime implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DaemonRuntime.class);
    static final String READY_FILE = "ready.properties";

    final NodeContext ctx;
    final PrometheusMeterRegistry registry;
    private final MetricsEndpoint metrics;
    private final CountDownLatch stopped = new CountDownLatch(1);

    DaemonRuntime(String kind, NodeConfig config) throws IOException {
        this(kind, config, Map.of());
    }

    /** A runtime whose every metric also carries {@code tags} (a mount's job), set before any meter exists. */
    DaemonRuntime(String kind, NodeConfig config, Map<String, String> tags) throws IOException {
        registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("node", config.name(), "kind", kind);
        tags.forEach((k, v) -> registry.config().commonTags(k, v));
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        ctx = config.tls().applyTo(config.auth().applyTo(NodeContext.builder(config.name()).meters(registry).transport(config.transport())
                .slowOp(config.slowOp())))
                .build();
        if (!config.auth().enabled()) {
            LOG.warn("{}: no [auth] table in its config: authentication is off, its servers accept anyone who reaches their port", config.name());
        }
        if (!config.tls().enabled()) {
            LOG.warn("{}: no [tls] table in its config: its RPC connections are plaintext", config.name());
        }
        metrics = config.metrics() == null ? null
                : new MetricsEndpoint(config.metrics(), registry, ctx.slowOps(), config.metricsOpen(), ctx.verifier().orElse(null),
                        config.tls());
    }

    InetSocketAddress metricsAddress() {
        return metrics == null ? null : metrics.address();
    }

    /** The {@code /metrics} URL (https:// off loopback with [tls]); null without an endpoint. */
    String metricsUrl() {
        return metrics == null ? null : metrics.url();
    }

    /**
     * What the ready file says of the metrics endpoint: {@code metrics} (HOST:PORT) and, when it
     * serves HTTPS, {@code metrics-url} (readers need the scheme); nothing without an endpoint.
     */
    void announceMetrics(Map<String, String> info) {
        if (metrics != null) {
            info.put("metrics", NodeCommand.hostPort(metrics.address()));
            if (metrics.https()) {
                info.put("metrics-url", metrics.url());
            }
        }
    }

    /** Writes {@code dir/ready.properties} atomically and privately: pid plus {@code info}. */
    static void announceReady(Path dir, Map<String, String> info) throws IOException {
        PrivateFiles.createDirectories(dir);
        Properties p = new Properties();
        p.setProperty("pid", String.valueOf(ProcessHandle.current().pid()));
        info.forEach(p::setProperty);
        StringWriter w = new StringWriter();
        p.store(w, "written when the daemon is ready");
        AtomicFiles.plain().write(dir.resolve(READY_FILE), w.toString(), false);
    }

    /** Blocks until the process is asked to stop (SIGTERM, Ctrl-C), then runs {@code stop} and closes. */
    void runUntilStopped(Runnable stop) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("{}: stopping", ctx.name());
            try {
                stop.run();
            } finally {
                close();
                stopped.countDown();
            }
        }, "shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        if (metrics != null) {
            metrics.close();
        }
        ctx.close();
    }
}
