package io.strata.client;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.function.Supplier;

/**
 * The client's meters: {@code strata.client.bytes{op=read|write}}, {@code strata.client.open.files},
 * {@code strata.client.write.buffered.bytes}, {@code strata.client.batch.reads}.
 */
final class ClientMetrics {
    private final Counter readBytes;
    private final Counter writtenBytes;
    private final Counter batchReads;

    ClientMetrics(MeterRegistry r, String client, Supplier<Number> openFiles, Supplier<Number> buffered) {
        readBytes = Counter.builder("strata.client.bytes").tag("op", "read").tag("client", client).register(r);
        writtenBytes = Counter.builder("strata.client.bytes").tag("op", "write").tag("client", client).register(r);
        batchReads = Counter.builder("strata.client.batch.reads").tag("client", client).register(r);
        Gauge.builder("strata.client.open.files", openFiles).tag("client", client).register(r);
        Gauge.builder("strata.client.write.buffered.bytes", buffered).tag("client", client).register(r);
    }

    void read(long n) {
        readBytes.increment(n);
    }

    void written(long n) {
        writtenBytes.increment(n);
    }

    void batchRead() {
        batchReads.increment();
    }
}
