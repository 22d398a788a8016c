package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.strata.core.time.StrataClock;
import io.strata.core.trace.SlowOps;
import io.strata.core.trace.Trace;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code strata admin slow} against two real metrics endpoints (a "mount" and a "storage node"),
 * each serving the slow hops its process kept: the hops of one trace are printed together,
 * slowest trace first.
 */
class AdminSlowTest {
    private static long ms(long n) {
        return TimeUnit.MILLISECONDS.toNanos(n);
    }

    @Test
    void joinsTheHopsOfEachTraceAcrossDaemonsSlowestFirst() throws Exception {
        SlowOps mount = new SlowOps("mount", Duration.ofMillis(100), StrataClock.system());
        SlowOps storage = new SlowOps("storage-2", Duration.ofMillis(100), StrataClock.system());
        long slowRead = 0x3f2a9c0d41b7e655L;
        long otherRead = 0x0000000000000abcL;
        mount.record(slowRead, "fuse", "read StrataFile[inode-7, r] at 0 +131072", ms(431), "ok");
        mount.record(slowRead, "call", "ReadChunk to 127.0.0.1:9401", ms(430), "OK");
        mount.record(otherRead, "fuse", "read StrataFile[inode-9, r] at 0 +4096", ms(150), "ok");
        storage.record(slowRead, "disk", "training-read 131072 bytes on target-201", ms(413), "queued 398.1 ms for a slot, device 14.6 ms");
        storage.record(slowRead, "serve", "ReadChunk from /127.0.0.1:5000", ms(415), "OK");
        storage.record(0, "serve", "Heartbeat from /127.0.0.1:6000", ms(120), "OK");

        PrometheusMeterRegistry r = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (MetricsEndpoint m = new MetricsEndpoint(new InetSocketAddress("127.0.0.1", 0), r, mount, false, null, io.strata.config.TlsConfig.OFF);
             MetricsEndpoint s = new MetricsEndpoint(new InetSocketAddress("127.0.0.1", 0), r, storage, false, null, io.strata.config.TlsConfig.OFF)) {
            String[] endpoints = {"--endpoint", "127.0.0.1:" + m.address().getPort(), "--endpoint", "127.0.0.1:" + s.address().getPort()};

            CliTest.Run run = CliTest.strata(concat(new String[] {"admin", "slow", "--limit", "2"}, endpoints));
            assertThat(run.code()).as(run.err()).isZero();
            String out = run.out();
            assertThat(out).startsWith("2 slow trace(s), the 2 slowest:");
            assertThat(out).contains("trace 3f2a9c0d41b7e655  431.0 ms");
            assertThat(out.indexOf("3f2a9c0d41b7e655")).isLessThan(out.indexOf("0000000000000abc"));
            String trace = out.substring(out.indexOf("trace 3f2a"), out.indexOf("trace 0000000000000abc"));
            assertThat(trace.lines().skip(1).filter(l -> !l.isBlank()).map(l -> l.trim().split("\\s+")[0] + " " + l.trim().split("\\s+")[1]))
                    .as("every hop of the trace, slowest first")
                    .containsExactly("mount fuse", "mount call", "storage-2 serve", "storage-2 disk");
            assertThat(trace).contains("(queued 398.1 ms for a slot, device 14.6 ms)");
            assertThat(out).as("untraced background work is left out").doesNotContain("Heartbeat");
            CliTest.Run all = CliTest.strata(concat(new String[] {"admin", "slow", "--all"}, endpoints));
            assertThat(all.out()).startsWith("3 slow trace(s), the 3 slowest:").contains("trace 0000000000000000  120.0 ms")
                    .contains("Heartbeat from");

            CliTest.Run one = CliTest.strata(concat(new String[] {"admin", "slow", "--json", "--trace", "3F2A9C0D41B7E655"}, endpoints));
            assertThat(one.code()).as(one.err()).isZero();
            JsonNode traces = new ObjectMapper().readTree(one.out());
            assertThat(traces).hasSize(1);
            assertThat(traces.get(0).get("trace").asText()).isEqualTo(Trace.format(slowRead));
            assertThat(traces.get(0).get("hops")).hasSize(4);

            CliTest.Run bad = CliTest.strata(concat(new String[] {"admin", "slow", "--trace", "12"}, endpoints));
            assertThat(bad.code()).isNotZero();
            assertThat(bad.err()).contains("16 hex digits");
        }
    }

    private static String[] concat(String[] a, String[] b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Test
    void theBreakdownOfSlowReadsAveragesEachHopAndTheDeviceNotes() {
        java.util.List<AdminSlow.Hop> hops = java.util.List.of(
                new AdminSlow.Hop("00000000000000a1", "t", "mount", "fuse", "read StrataFile[inode-7, r] at 0 +131072", 300, "ok"),
                new AdminSlow.Hop("00000000000000a1", "t", "mount", "call", "ReadChunk to x", 290, "OK"),
                new AdminSlow.Hop("00000000000000a1", "t", "storage-1", "serve", "ReadChunk from y", 250,
                        "OK; target-101: queued 200.0 ms for a slot, device 40.0 ms"),
                new AdminSlow.Hop("00000000000000a2", "t", "mount", "fuse", "read StrataFile[inode-8, r] at 0 +131072", 200, "ok"),
                new AdminSlow.Hop("00000000000000a2", "t", "mount", "call", "ReadChunk to x", 190, "OK"),
                new AdminSlow.Hop("00000000000000a3", "t", "mount", "call", "WriteChunk to x", 900, "OK"));
        AdminSlow.ReadBreakdown b = AdminSlow.readBreakdown(AdminSlow.join(hops, null, false));
        assertThat(b.reads()).as("the write's trace is not a read").isEqualTo(2);
        assertThat(b.line()).isEqualTo("2 slow reads; fuse 250.0 ms (2); call 240.0 ms (2); serve 250.0 ms (1); "
                + "device queue 200.0 ms, device 40.0 ms (1)");
    }
}
