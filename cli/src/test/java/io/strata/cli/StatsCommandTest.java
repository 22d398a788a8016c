package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * {@code strata stats} against a real metrics endpoint (the daemons' own HTTP server and
 * Prometheus registry) whose counters move while it runs: the rates and ratios it prints follow
 * them.
 */
class StatsCommandTest {
    @Test
    void printsRatesAndHitRatiosFromTheDaemonsMetrics() throws Exception {
        PrometheusMeterRegistry r = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Counter mem = Counter.builder("strata.l1.hits").tag("tier", "memory").register(r);
        Counter below = Counter.builder("strata.l1.hits").tag("tier", "below").register(r);
        Counter l3read = Counter.builder("strata.storage.bytes").baseUnit("bytes").tag("op", "read").register(r);
        Counter.builder("strata.storage.bytes").baseUnit("bytes").tag("op", "write").register(r);
        Timer reads = Timer.builder("strata.storage.latency").tag("op", "read").register(r);
        Counter l2read = Counter.builder("strata.l2.read.bytes").register(r);
        Counter.builder("strata.l2.staged.bytes").register(r);
        Timer rpc = Timer.builder("strata.rpc.calls").tag("message", "Lookup").tag("status", "OK").register(r);
        Timer watch = Timer.builder("strata.rpc.calls").tag("message", "GetRouting").tag("status", "OK").register(r);
        AtomicBoolean stop = new AtomicBoolean();
        try (MetricsEndpoint endpoint = new MetricsEndpoint(new InetSocketAddress("127.0.0.1", 0), r)) {
            Thread load = Thread.ofPlatform().start(() -> {
                while (!stop.get()) {
                    mem.increment(3);
                    below.increment(1);
                    l3read.increment(10_000_000);
                    reads.record(4, TimeUnit.MILLISECONDS);
                    l2read.increment(2_000_000);
                    rpc.record(250, TimeUnit.MICROSECONDS);
                    rpc.record(750, TimeUnit.MICROSECONDS);
                    watch.record(10, TimeUnit.SECONDS); // a long poll: not a slow call
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            String at = "127.0.0.1:" + endpoint.address().getPort();
            CliTest.Run run = CliTest.strata("stats", "--endpoint", at, "--count", "2", "--interval", "500ms", "--json");
            CliTest.Run table = CliTest.strata("stats", "--endpoint", at, "--count", "1", "--interval", "300ms");
            stop.set(true);
            load.join();
            assertThat(run.code()).as(run.err()).isZero();
            List<String> lines = run.out().lines().toList();
            assertThat(lines).hasSize(2);
            for (String line : lines) {
                JsonNode j = new ObjectMapper().readTree(line);
                assertThat(j.get("l1_hit_percent").asDouble()).isCloseTo(75.0, org.assertj.core.data.Offset.offset(1.0));
                assertThat(j.get("l3_read_mb_per_s").asDouble()).isGreaterThan(100);
                assertThat(j.get("l3_write_mb_per_s").asDouble()).isZero();
                assertThat(j.get("l3_read_mean_ms").asDouble()).isCloseTo(4.0, org.assertj.core.data.Offset.offset(0.5));
                assertThat(j.get("l2_read_mb_per_s").asDouble()).as("a fifth of the L3 rate").isCloseTo(j.get("l3_read_mb_per_s").asDouble() / 5,
                        org.assertj.core.data.Offset.offset(j.get("l3_read_mb_per_s").asDouble() / 20));
                assertThat(j.get("l2_staged_mb_per_s").asDouble()).isZero();
                assertThat(j.get("rpc_mean_ms").asDouble()).as("routing watches left out").isCloseTo(0.5, org.assertj.core.data.Offset.offset(0.05));
                assertThat(j.get("rpc_calls_per_s").asDouble()).isGreaterThan(0);
            }
            assertThat(table.code()).as(table.err()).isZero();
            assertThat(table.out()).contains("1 daemon(s)").contains("L1 hit").contains("L2 wr MB/s").containsPattern("\\|\\s+7[45]%")
                    .containsPattern("\\s0\\.50\\s*$");
        }
    }

    @Test
    void refusesBadIntervalsAndAClusterWithNoEndpoints(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        CliTest.Run fast = CliTest.strata("stats", "--endpoint", "127.0.0.1:1", "--interval", "1ms");
        assertThat(fast.code()).isNotZero();
        assertThat(fast.err()).contains("--interval must be at least 100ms");
        CliTest.Run none = CliTest.strata("stats", "--data", dir.toString(), "--count", "1");
        assertThat(none.code()).isNotZero();
        assertThat(none.err()).contains("no daemon with a metrics endpoint");
    }
}
