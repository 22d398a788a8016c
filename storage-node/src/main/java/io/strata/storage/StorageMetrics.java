package io.strata.storage;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.core.time.StrataClock;
import io.micrometer.core.instrument.Timer;
import io.strata.core.StrataException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A storage node's request metrics: {@code strata.storage.requests{op,status}} (count),
 * {@code strata.storage.latency{op}} (timer), {@code strata.storage.bytes{op}} (payload bytes in
 * for writes and forwards, out for reads). The chunk engines add fsync batches, copy-on-write
 * bytes and corruptions ({@code strata.storage.fsync.batches}, {@code strata.storage.corruptions}).
 * Ops: write, forward, read, query, stat.
 */
final class StorageMetrics {
    private final MeterRegistry registry;
    private final StrataClock clock;
    private final ConcurrentHashMap<String, Counter> requests = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> latency = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Counter> bytes = new ConcurrentHashMap<>();

    StorageMetrics(MeterRegistry registry, StrataClock clock) {
        this.registry = registry;
        this.clock = clock;
    }

    void done(String op, long startNanos, Throwable error) {
        String status = error == null ? "OK" : StrataException.wrap(error).status().name();
        requests.computeIfAbsent(op + "/" + status, k -> Counter.builder("strata.storage.requests")
                .description("storage requests served").tag("op", op).tag("status", status).register(registry)).increment();
        latency.computeIfAbsent(op, k -> Timer.builder("strata.storage.latency").description("storage request latency")
                .tag("op", op).register(registry)).record(clock.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
    }

    void bytes(String op, long n) {
        if (n > 0) {
            bytes.computeIfAbsent(op, k -> Counter.builder("strata.storage.bytes").description("chunk payload bytes")
                    .baseUnit("bytes").tag("op", op).register(registry)).increment(n);
        }
    }
}
