package io.strata.bench.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.strata.core.DataSize;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FsBenchTest {
    private static final FsBench.Options TINY = new FsBench.Options(2, DataSize.ofKiB(256), DataSize.ofKiB(64), 12, DataSize.ofKiB(8),
            List.of(DataSize.ofKiB(4), DataSize.ofKiB(16)), Duration.ofMillis(100), 2);

    @Test
    void everyJobRunsOnEveryTargetWithSaneFiguresAndLeavesNothingBehind(@TempDir Path dir) throws IOException {
        DirTarget a = DirTarget.plain("local", dir.resolve("a"));
        DirTarget b = DirTarget.plain("other", dir.resolve("b"));
        Files.createDirectories(a.root());
        Files.createDirectories(b.root());
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        FsBench.Report r = new FsBench(TINY, new PrintStream(err, true, StandardCharsets.UTF_8), false).run(List.of(a, b));

        assertThat(r.items()).extracting(FsBench.Item::key)
                .containsExactly("seq_write", "seq_read", "rand_4k", "rand_16k", "small_write", "small_stat", "small_read");
        for (String t : List.of("local", "other")) {
            for (FsBench.Item item : r.items()) {
                FsBench.Result x = r.result(t, item.key());
                assertThat(x.rounds()).hasSize(2);
                assertThat(x.opsPerSec()).isFinite().isPositive();
                assertThat(x.latency().quantileMicros(0.5)).isPositive().isLessThanOrEqualTo(x.latency().quantileMicros(0.99));
                long perRound = switch (item.kind()) {
                    case SEQ_WRITE, SEQ_READ -> 2 * 4; // 2 threads x 256 KiB / 64 KiB
                    case SMALL_WRITE, SMALL_STAT, SMALL_READ -> 12;
                    case RANDOM_READ -> -1;
                };
                for (FsBench.Measure m : x.rounds()) {
                    if (perRound > 0) {
                        assertThat(m.ops()).as(t + " " + item.key()).isEqualTo(perRound);
                    } else {
                        assertThat(m.ops()).isPositive();
                        assertThat(m.bytes()).isEqualTo(m.ops() * item.size());
                    }
                    if (item.kind() == FsBench.Item.Kind.SEQ_WRITE || item.kind() == FsBench.Item.Kind.SEQ_READ) {
                        assertThat(m.bytes()).isEqualTo(2 * 256 * 1024);
                    }
                    if (item.kind() == FsBench.Item.Kind.SMALL_READ) {
                        assertThat(m.bytes()).isEqualTo(12 * 8 * 1024);
                    }
                    // wall time covers the operations: no rate beyond what the latencies allow
                    assertThat(m.seconds()).isPositive().isLessThan(30);
                }
                assertThat(x.latency().count()).isEqualTo(x.rounds().stream().mapToLong(FsBench.Measure::ops).sum());
            }
        }
        try (Stream<Path> left = Files.list(a.root())) {
            assertThat(left).as("the bench removes its files").isEmpty();
        }
        assertThat(r.counters().get("local").unavailable()).isEqualTo("not available for a plain directory");
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("local: write big 256KiB x2 (1/2)", "other: read 12 x 8KiB (2/2)");

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        FsReport.print(r, "local", Map.of("other_vs_local_read", FsReport.ratio(r, "seq_read", "other", "local")),
                Map.of("local", "a note"), new PrintStream(out, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(text).contains("vs local", "random read 4KiB", "local counters: not available for a plain directory", "note: local: a note");
        assertThat(text.strip().lines().reduce((x, y) -> y).orElseThrow()).matches("result: other_vs_local_read=\\d+\\.\\d\\d");

        JsonNode json = new ObjectMapper().readTree(FsReport.json(r, "local", FsReport.figures(r, "other"), Map.of("why", "test")));
        assertThat(json.path("options").path("threads").asInt()).isEqualTo(2);
        assertThat(json.path("targets")).hasSize(2);
        JsonNode jobs = json.path("targets").get(1).path("jobs");
        assertThat(jobs).hasSize(7);
        assertThat(jobs.get(1).path("job").asText()).isEqualTo("seq_read");
        assertThat(jobs.get(1).path("mb_per_s").asDouble()).isPositive();
        assertThat(jobs.get(0).has("fsync_close_ms")).isTrue();
        assertThat(json.path("result").path("seq_read_mbps").asDouble()).isPositive();
        assertThat(json.path("result").path("rand_4k_iops").asDouble()).isPositive();
        assertThat(json.path("targets").get(0).path("counters").path("unavailable").asText()).contains("plain directory");
    }

    /** A directory whose reads flip one byte at {@code at} of every file: the run must fail, not print figures. */
    @Test
    void wrongBytesReadBackFailTheRun(@TempDir Path dir) throws IOException {
        for (long at : new long[] {0, 300_000, 5000}) {
            Path root = dir.resolve("c" + at);
            Files.createDirectories(root);
            FsTarget bad = new Corrupting(DirTarget.plain("bad", root), at);
            FsBench.Options o = new FsBench.Options(1, DataSize.ofKiB(512), DataSize.ofKiB(64), 3, DataSize.ofKiB(8),
                    List.of(DataSize.ofKiB(512)), Duration.ofMillis(50), 1);
            assertThatThrownBy(() -> new FsBench(o, null, false).run(List.of(bad)))
                    .isInstanceOf(IOException.class).hasMessageContaining("wrong bytes");
        }
    }

    @Test
    void contentIsAFunctionOfFileAndOffset() {
        ByteBuffer a = ByteBuffer.allocate(200_000);
        Content.fill(3, 12_345, a);
        ByteBuffer part = ByteBuffer.allocate(1000);
        Content.fill(3, 12_345 + 70_000, part);
        assertThat(a.slice(70_000, 1000)).isEqualTo(part);
        ByteBuffer scratch = ByteBuffer.allocate(200_000);
        assertThat(Content.mismatch(3, 12_345, a.duplicate(), scratch)).isEqualTo(-1);
        assertThat(Content.mismatch(4, 12_345, a.duplicate(), scratch)).isEqualTo(12_345);
        a.put(150_000, (byte) (a.get(150_000) ^ 1));
        assertThat(Content.mismatch(3, 12_345, a.duplicate(), scratch)).isEqualTo(12_345 + 150_000);
    }

    @Test
    void countersFromARegistryAndFromAPrometheusPageAgree() {
        MeterRegistry reg = new SimpleMeterRegistry();
        Map<String, Double> before = Counters.read(reg);
        Counter.builder("strata.client.bytes").tag("op", "read").tag("client", "c").register(reg).increment(3 << 20);
        Counter.builder("strata.client.bytes").tag("op", "write").tag("client", "c").register(reg).increment(1 << 20);
        Counter.builder("strata.l1.hits").tag("tier", "memory").register(reg).increment(7);
        Counter.builder("strata.l1.misses").tag("tier", "memory").register(reg).increment(2);
        Timer w = Timer.builder("strata.rpc.calls").tag("message", "WriteChunk").tag("status", "OK").register(reg);
        w.record(1, TimeUnit.MILLISECONDS);
        w.record(1, TimeUnit.MILLISECONDS);
        Timer.builder("strata.rpc.calls").tag("message", "Create").tag("status", "OK").register(reg).record(1, TimeUnit.MILLISECONDS);
        Timer.builder("strata.rpc.calls").tag("message", "Open").tag("status", "OK").register(reg).record(1, TimeUnit.MILLISECONDS);
        Timer.builder("strata.fuse.requests").tag("op", "write").register(reg).record(1, TimeUnit.MILLISECONDS);
        Timer.builder("strata.rpc.calls").tag("message", "GetRouting").tag("status", "OK").register(reg).record(20, TimeUnit.SECONDS);
        Map<String, Double> d = Counters.delta(before, Counters.read(reg));
        assertThat(d).containsEntry("strata.l1.hits{tier=memory}", 7.0).containsEntry("strata.rpc.calls.count{message=WriteChunk,status=OK}", 2.0);

        String prom = """
                # HELP strata_l1_hits_total blocks served by this tier
                # TYPE strata_l1_hits_total counter
                strata_l1_hits_total{kind="mount",node="mount",tier="memory"} 7.0
                strata_l1_misses_total{kind="mount",node="mount",tier="memory"} 2.0
                strata_client_bytes_total{client="c",kind="mount",node="mount",op="read"} 3145728.0
                strata_client_bytes_total{client="c",kind="mount",node="mount",op="write"} 1048576.0
                strata_rpc_calls_seconds{message="WriteChunk",status="OK",quantile="0.5"} 0.001
                strata_rpc_calls_seconds_count{message="WriteChunk",node="mount",status="OK"} 2
                strata_rpc_calls_seconds_sum{message="WriteChunk",node="mount",status="OK"} 0.002
                strata_rpc_calls_seconds_max{message="WriteChunk",node="mount",status="OK"} 0.001
                strata_rpc_calls_seconds_count{message="Create",node="mount",status="OK"} 1
                strata_rpc_calls_seconds_sum{message="Create",node="mount",status="OK"} 0.001
                strata_rpc_calls_seconds_count{message="Open",node="mount",status="OK"} 1
                strata_rpc_calls_seconds_sum{message="Open",node="mount",status="OK"} 0.001
                strata_fuse_requests_seconds_count{node="mount",op="write"} 1
                strata_fuse_requests_seconds_sum{node="mount",op="write"} 0.001
                strata_rpc_calls_seconds_count{message="GetRouting",node="mount",status="OK"} 1
                strata_rpc_calls_seconds_sum{message="GetRouting",node="mount",status="OK"} 20.0
                jvm_memory_used_bytes{area="heap",id="x"} 12345.0
                """;
        Map<String, Double> p = Counters.parsePrometheus(prom);
        assertThat(p).containsEntry("strata.l1.hits{tier=memory}", 7.0)
                .containsEntry("strata.rpc.calls.count{message=WriteChunk,status=OK}", 2.0)
                .doesNotContainKey("jvm.memory.used.bytes{area=heap,id=x}");
        List<Counters.Row> fromRegistry = Counters.summary(d);
        assertThat(Counters.summary(Counters.delta(Map.of(), p))).isEqualTo(fromRegistry);
        assertThat(fromRegistry).extracting(Counters.Row::what).contains("client bytes read / written", "L1 memory hits / misses / bytes served",
                "L3 chunk writes / reads (RPCs)", "metadata ops (RPCs)", "FUSE requests", "FUSE avg write / read request");
        assertThat(fromRegistry).filteredOn(x -> x.what().startsWith("metadata")).first().extracting(Counters.Row::value).asString()
                .startsWith("2 ");
        assertThat(fromRegistry).filteredOn(x -> x.what().startsWith("FUSE avg")).first().extracting(Counters.Row::value)
                .isEqualTo("1024 KiB / -");
        assertThat(fromRegistry).filteredOn(x -> x.what().startsWith("RPC time")).first().extracting(Counters.Row::value)
                .isEqualTo("WriteChunk 1.00 x2, Create 1.00 x1, Open 1.00 x1");
    }

    private record Corrupting(DirTarget inner, long at) implements FsTarget {
        @Override
        public String name() {
            return inner.name();
        }

        @Override
        public String describe() {
            return "corrupting " + inner.describe();
        }

        @Override
        public void mkdirs(String path) throws IOException {
            inner.mkdirs(path);
        }

        @Override
        public Handle create(String path) throws IOException {
            return inner.create(path);
        }

        @Override
        public Handle open(String path) throws IOException {
            Handle h = inner.open(path);
            return new Handle() {
                @Override
                public void write(long pos, ByteBuffer src) throws IOException {
                    h.write(pos, src);
                }

                @Override
                public int read(long pos, ByteBuffer dst) throws IOException {
                    int start = dst.position();
                    int n = h.read(pos, dst);
                    if (at >= pos && at < pos + n) {
                        int i = start + (int) (at - pos);
                        dst.put(i, (byte) (dst.get(i) ^ 0x40));
                    }
                    return n;
                }

                @Override
                public void fsync() throws IOException {
                    h.fsync();
                }

                @Override
                public void close() throws IOException {
                    h.close();
                }
            };
        }

        @Override
        public long size(String path) throws IOException {
            return inner.size(path);
        }

        @Override
        public void deleteTree(String path) throws IOException {
            inner.deleteTree(path);
        }

        @Override
        public Counters.Source counters() {
            return inner.counters();
        }
    }
}
