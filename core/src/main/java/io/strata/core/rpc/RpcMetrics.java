package io.strata.core.rpc;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The RPC layer's meters: {@code strata.rpc.calls} (client timer, by message and status),
 * {@code strata.rpc.served} (server counter, by message and status), {@code strata.rpc.bytes}
 * (payload bytes, by direction) and {@code strata.rpc.bad.frames}; on servers also
 * {@code strata.rpc.connections.refused} (connections closed at accept because the server had
 * {@link RpcOptions#maxConnections()} open) and {@code strata.rpc.connections.timed.out}
 * (connections closed by the server, by {@code timeout}: {@code idle} or {@code read}); and
 * {@code strata.rpc.tls.failures} (connections whose TLS handshake failed: a plaintext peer, a
 * certificate of another CA or expired), by side.
 */
final class RpcMetrics {
    private final MeterRegistry registry;
    private final ConcurrentHashMap<String, Timer> calls = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Counter> served = new ConcurrentHashMap<>();
    private final Counter bytesIn;
    private final Counter bytesOut;
    private final Counter badFrames;
    private final Counter tlsFailures;

    RpcMetrics(MeterRegistry registry, String side) {
        this.registry = registry;
        this.bytesIn = Counter.builder("strata.rpc.bytes").tag("side", side).tag("direction", "in")
                .baseUnit("bytes").register(registry);
        this.bytesOut = Counter.builder("strata.rpc.bytes").tag("side", side).tag("direction", "out")
                .baseUnit("bytes").register(registry);
        this.badFrames = Counter.builder("strata.rpc.bad.frames").tag("side", side).register(registry);
        this.tlsFailures = Counter.builder("strata.rpc.tls.failures").tag("side", side).register(registry);
    }

    void call(String message, String status, long nanos) {
        calls.computeIfAbsent(message + '/' + status, k -> Timer.builder("strata.rpc.calls")
                .tag("message", message).tag("status", status)
                .publishPercentiles(0.5, 0.99).register(registry)).record(nanos, TimeUnit.NANOSECONDS);
    }

    void served(String message, String status) {
        served.computeIfAbsent(message + '/' + status, k -> Counter.builder("strata.rpc.served")
                .tag("message", message).tag("status", status).register(registry)).increment();
    }

    void bytesIn(long n) {
        if (n > 0) {
            bytesIn.increment(n);
        }
    }

    void bytesOut(long n) {
        if (n > 0) {
            bytesOut.increment(n);
        }
    }

    void badFrame() {
        badFrames.increment();
    }

    void tlsFailure() {
        tlsFailures.increment();
    }

    void connectionRefused() {
        Counter.builder("strata.rpc.connections.refused").register(registry).increment();
    }

    void connectionTimedOut(String timeout) {
        Counter.builder("strata.rpc.connections.timed.out").tag("timeout", timeout).register(registry).increment();
    }
}
