package io.strata.hooks;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import io.strata.core.DataSize;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Futures;
import io.strata.l2.agent.L2AgentConfig;
import io.strata.protocol.meta.Cached;
import io.strata.protocol.meta.Caller;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The scheduler hooks end to end, on a real cluster: a hint posted over HTTP has the agents on
 * the job's nodes fetch its files from L3 before the job starts, the job's reads then come from
 * L2, overlapping hints fetch each chunk once, ending a job releases only its share, and a
 * cancel, a dying agent, a restarted hooks server and a deadline that cannot be met behave as
 * docs/scheduler-hooks.md says.
 */
class HooksTest {
    static final int FILE = 700 * 1024;
    static final int CHUNK = 256 * 1024;
    static final int CHUNKS_PER_FILE = 3;

    static Map<String, byte[]> dataset(StrataFileSystem fs, String dir, int files, long seed) {
        fs.mkdirs(dir);
        fs.setPolicy(dir, "stripe.chunk-size=256KiB");
        Map<String, byte[]> out = new HashMap<>();
        Random r = new Random(seed);
        for (int i = 0; i < files; i++) {
            byte[] b = new byte[FILE];
            r.nextBytes(b);
            String p = dir + "/sample-" + i;
            try (StrataFile f = fs.create(p)) {
                f.write(0, ByteBuffer.wrap(b));
            }
            out.put(p, b);
        }
        return out;
    }

    private static byte[] read(StrataFileSystem fs, String path) {
        try (StrataFile f = fs.openRead(path)) {
            ByteBuffer b = ByteBuffer.allocate((int) f.size());
            f.read(0, b);
            return b.array();
        }
    }

    private static String hint(String job, List<String> paths, String extra) {
        StringBuilder s = new StringBuilder("{\"job\": \"" + job + "\", \"paths\": [");
        for (int i = 0; i < paths.size(); i++) {
            s.append(i > 0 ? ", " : "").append('"').append(paths.get(i)).append('"');
        }
        return s.append("]").append(extra.isEmpty() ? "" : ", " + extra).append("}").toString();
    }

    private static UnaryOperator<L2AgentConfig> slow(DataSize perSecond) {
        return c -> c.withPrefetchBandwidth(perSecond);
    }

    @Test
    void aHintStagesItsFilesOnTheJobsNodesAndTheJobReadsThemFromL2(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1601, 3, c -> c)) {
            Map<String, byte[]> data = dataset(f.admin, "/data/a", 6, 1);
            HooksFixture.Http r = f.post("/v1/hints", hint("train-1", List.of("/data/a"), "\"deadline\": \"5m\", \"nodes\": [\"gpu-1\", \"gpu-2\"]"));
            assertThat(r.status()).as(r.body().toString()).isEqualTo(201);
            assertThat(r.body().path("files").asLong()).isEqualTo(6);
            String id = r.body().path("id").asText();

            JsonNode ready = f.awaitState(id, "ready", Duration.ofSeconds(60));
            assertThat(ready.path("bytes_total").asLong()).isEqualTo(6L * FILE);
            assertThat(ready.path("bytes_done").asLong()).isEqualTo(6L * FILE);
            assertThat(ready.path("progress").asDouble()).isEqualTo(1.0);
            assertThat(ready.path("per_node").properties()).extracting(Map.Entry::getKey)
                    .as("staged only on the job's nodes").containsOnly("gpu-1", "gpu-2");
            assertThat(f.agents.get(3).status().prefetchFetches()).as("gpu-3 is not the job's").isZero();
            assertThat(f.prefetchFetches()).as("each chunk read from L3 once").isEqualTo(6L * CHUNKS_PER_FILE);
            assertThat(f.hooksMeter("strata.hooks.hint.ready.seconds", "strata_job", "train-1")).as("one hint of the job got ready")
                    .isEqualTo(1);
            assertThat(f.hooksMeter("strata.hooks.hint.lateness.seconds", "strata_job", "train-1")).isEqualTo(1);
            assertThat(f.hooksTotal("strata.hooks.hint.lateness.seconds", "strata_job", "train-1")).as("on time").isZero();
            assertThat(f.hooksTotal("strata.hooks.hint.slack.seconds", "strata_job", "train-1")).as("ready minutes before its deadline")
                    .isGreaterThan(200);

            StrataFileSystem job = f.client("job");
            double before = f.counter("job", "strata.l2.client.cached.hit");
            for (Map.Entry<String, byte[]> e : data.entrySet()) {
                assertThat(read(job, e.getKey())).as(e.getKey()).isEqualTo(e.getValue());
            }
            assertThat(f.counter("job", "strata.l2.client.cached.hit") - before).as("every chunk came from L2")
                    .isGreaterThanOrEqualTo(6.0 * CHUNKS_PER_FILE);
            assertThat(f.get("/v1/hints?job=train-1").body().path("hints")).hasSize(1);
        }
    }

    @Test
    void overlappingHintsFetchEachChunkOnceAndEndingAJobReleasesOnlyItsShare(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1602, 2, c -> c)) {
            dataset(f.admin, "/data/a", 4, 2);
            Map<String, byte[]> b = dataset(f.admin, "/data/b", 4, 3);
            String one = f.post("/v1/hints", hint("job-1", List.of("/data/a", "/data/b/sample-0", "/data/b/sample-1"), "")).body().path("id").asText();
            String two = f.post("/v1/hints", hint("job-2", List.of("/data/b/*"), "\"priority\": 5")).body().path("id").asText();
            f.awaitState(one, "ready", Duration.ofSeconds(60));
            f.awaitState(two, "ready", Duration.ofSeconds(60));
            assertThat(f.prefetchFetches()).as("8 distinct files of 3 chunks, the 2 shared ones read once").isEqualTo(8L * CHUNKS_PER_FILE);

            HooksFixture.Http end = f.post("/v1/jobs/job-1/end", "");
            assertThat(end.status()).as(end.body().toString()).isEqualTo(200);
            assertThat(end.body().path("ended")).hasSize(1);
            assertThat(f.get("/v1/hints/" + one).status()).as("an ended job's hints are gone").isEqualTo(404);
            assertThat(f.get("/v1/hints/" + two).body().path("state").asText()).isEqualTo("ready");
            assertThat(f.pinnedChunks()).as("job-2's chunks stay pinned").isEqualTo(4L * CHUNKS_PER_FILE);
            var shared = f.admin.stat("/data/b/sample-0").inode();
            var onlyOne = f.admin.stat("/data/a/sample-0").inode();
            List<Cached.Record> recs = Futures.join(f.admin.meta().cachedAsync(Caller.ROOT, List.of(shared, onlyOne)), Duration.ofSeconds(10));
            assertThat(recs).singleElement().satisfies(rec -> {
                assertThat(rec.inode()).isEqualTo(shared);
                assertThat(rec.owners()).containsExactly(Long.parseLong(two));
            });
            StrataFileSystem job = f.client("job-2");
            assertThat(read(job, "/data/b/sample-0")).isEqualTo(b.get("/data/b/sample-0"));

            assertThat(f.post("/v1/jobs/job-2/end", "").status()).isEqualTo(200);
            assertThat(f.pinnedChunks()).isZero();
            assertThat(f.post("/v1/jobs/job-2/end", "").status()).as("nothing left to end").isEqualTo(404);
        }
    }

    @Test
    void filesUnderTiersL2OffAreLeftInL3AndReadFromThere(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1608, 1, c -> c)) {
            dataset(f.admin, "/data/hot", 2, 10);
            f.admin.mkdirs("/data/cold");
            f.admin.setPolicy("/data/cold", "tiers.l2=off");
            Map<String, byte[]> cold = dataset(f.admin, "/data/cold", 2, 11);
            String id = f.post("/v1/hints", hint("j", List.of("/data"), "")).body().path("id").asText();
            JsonNode ready = f.awaitState(id, "ready", Duration.ofSeconds(60));
            assertThat(ready.path("files").asLong()).isEqualTo(4);
            assertThat(ready.path("bytes_total").asLong()).as("only /data/hot is staged").isEqualTo(2L * FILE);
            assertThat(ready.path("message").asText()).contains("2 of the files are under tiers.l2=off");
            assertThat(f.prefetchFetches()).isEqualTo(2L * CHUNKS_PER_FILE);
            StrataFileSystem job = f.client("job");
            for (Map.Entry<String, byte[]> e : cold.entrySet()) {
                assertThat(read(job, e.getKey())).isEqualTo(e.getValue());
            }
            assertThat(f.counter("job", "strata.l2.client.cached.hit")).as("tiers.l2=off files never ask L2").isZero();
        }
    }

    @Test
    void aHintsQosClassIsTheClassItsDataIsFetchedIn(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1611, 1, c -> c)) {
            dataset(f.admin, "/data/a", 2, 1);
            dataset(f.admin, "/data/b", 1, 2);
            HooksFixture.Http r = f.post("/v1/hints", hint("late-job", List.of("/data/a"), "\"qos\": \"training-read\""));
            assertThat(r.status()).as(r.body().toString()).isEqualTo(201);
            assertThat(r.body().path("qos").asText()).isEqualTo("training-read");
            f.awaitState(r.body().path("id").asText(), "ready", Duration.ofSeconds(60));
            assertThat(f.agentDiskOps(1, QosClass.TRAINING_READ)).as("every chunk of the hint stored in its class")
                    .isEqualTo(2L * CHUNKS_PER_FILE);
            assertThat(f.agentDiskOps(1, QosClass.PREFETCH)).isZero();

            String plain = f.post("/v1/hints", hint("next-job", List.of("/data/b"), "")).body().path("id").asText();
            assertThat(f.awaitState(plain, "ready", Duration.ofSeconds(60)).path("qos").asText()).isEqualTo("prefetch");
            assertThat(f.agentDiskOps(1, QosClass.PREFETCH)).as("a hint that names no class fetches in prefetch")
                    .isEqualTo(CHUNKS_PER_FILE);
        }
    }

    @Test
    void badInputGetsA4xxNamingTheField(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1603, 1, c -> c)) {
            dataset(f.admin, "/data/a", 1, 4);
            expect(f.post("/v1/hints", "{\"job\": \"x\", \"paths\": ["), 400, "malformed JSON");
            expect(f.post("/v1/hints", hint("x", List.of("/data/nope"), "")), 400, "paths[0]");
            expect(f.post("/v1/hints", hint("x", List.of("/data/a", "/data/a/*.tar"), "")), 400, "paths[1]");
            expect(f.post("/v1/hints", hint("x", List.of("data/a"), "")), 400, "paths[0]");
            expect(f.post("/v1/hints", hint("x", List.of("/data/a"), "\"deadline\": \"2020-01-01T00:00:00Z\"")), 400, "deadline");
            expect(f.post("/v1/hints", hint("x", List.of("/data/a"), "\"deadline\": \"soon\"")), 400, "deadline");
            expect(f.post("/v1/hints", hint("x", List.of("/data/a"), "\"nodes\": [\"gpu-9\"]")), 400, "nodes[0]");
            expect(f.post("/v1/hints", hint("x", List.of("/data/a"), "\"priority\": 12")), 400, "priority");
            expect(f.post("/v1/hints", hint("x", List.of("/data/a"), "\"qos\": \"interactive\"")), 400, "qos");
            expect(f.post("/v1/hints", hint("x", List.of("/data/a"), "\"qos\": \"checkpoint\"")), 400, "prefetch (the default), background or training-read");
            expect(f.post("/v1/hints", hint("x", List.of("/data/a"), "\"colour\": \"red\"")), 400, "colour");
            expect(f.post("/v1/hints", "{\"paths\": [\"/data/a\"]}"), 400, "job");
            expect(f.get("/v1/hints/999"), 404, "999");
            expect(f.get("/v1/hints/abc"), 400, "id");
            expect(f.send("PUT", "/v1/hints", "{}"), 405, "PUT");
            expect(f.get("/v2/hints"), 404, "/v1");
            assertThat(f.get("/v1/hints").body().path("hints")).as("nothing was stored").isEmpty();
            assertThat(f.get("/v1/health").body().path("status").asText()).isEqualTo("ok");

            f.admin.mkdirs("/data/a/deeper/still");
            try (StrataFile x = f.admin.create("/data/a/deeper/still/sample-9")) {
                x.write(0, ByteBuffer.wrap(new byte[10]));
            }
            assertThat(f.post("/v1/hints", hint("g", List.of("/d*/a/sample-?"), "")).body().path("files").asLong())
                    .as("a glob within one directory").isEqualTo(1);
            assertThat(f.post("/v1/hints", hint("g", List.of("/data/**/sample-9"), "")).body().path("files").asLong())
                    .as("** crosses directories").isEqualTo(1);
            assertThat(f.post("/v1/hints", hint("g", List.of("/data/a", "/data/a/sample-0"), "")).body().path("files").asLong())
                    .as("a file named twice counts once").isEqualTo(2);
        }
    }

    private static void expect(HooksFixture.Http r, int status, String inMessage) {
        assertThat(r.status()).as(r.body().toString()).isEqualTo(status);
        assertThat(r.body().path("error").asText()).contains(inMessage);
    }

    @Test
    void aCancelStopsWithinASecondAndReleasesThePins(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1604, 1, slow(DataSize.ofMiB(1)))) {
            dataset(f.admin, "/data/big", 12, 5);
            String id = f.post("/v1/hints", hint("j", List.of("/data/big"), "")).body().path("id").asText();
            awaitProgress(f, id);
            long t0 = System.nanoTime();
            HooksFixture.Http c = f.send("DELETE", "/v1/hints/" + id, null);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertThat(c.status()).isEqualTo(200);
            assertThat(c.body().path("state").asText()).isEqualTo("cancelled");
            assertThat(ms).as("cancel answered").isLessThan(1000);
            Thread.sleep(1500); // the fetches in flight (at most the window) answer
            long fetched = f.prefetchFetches();
            Thread.sleep(1500);
            assertThat(f.prefetchFetches()).as("nothing fetched after the cancel settled").isEqualTo(fetched);
            assertThat(fetched).as("the cancel stopped it early").isLessThan(12L * CHUNKS_PER_FILE);
            assertThat(f.pinnedChunks()).as("a cancelled hint's pins go").isZero();
            assertThat(f.get("/v1/hints/" + id).body().path("state").asText()).isEqualTo("cancelled");
        }
    }

    private static void awaitProgress(HooksFixture f, String id) throws Exception {
        long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (f.get("/v1/hints/" + id).body().path("bytes_done").asLong() == 0) {
            if (System.nanoTime() > end) {
                throw new AssertionError("hint " + id + " made no progress");
            }
            Thread.sleep(50);
        }
    }

    @Test
    void anAgentDyingMidStagingIsReplannedAndTheHintStillGetsReady(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1605, 3, slow(DataSize.ofMiB(2)))) {
            Map<String, byte[]> data = dataset(f.admin, "/data/a", 8, 6);
            String id = f.post("/v1/hints", hint("j", List.of("/data/a"), "")).body().path("id").asText();
            awaitProgress(f, id);
            f.killAgent(1);
            f.awaitState(id, "ready", Duration.ofSeconds(90));
            StrataFileSystem job = f.client("job");
            for (Map.Entry<String, byte[]> e : data.entrySet()) {
                assertThat(read(job, e.getKey())).as(e.getKey()).isEqualTo(e.getValue());
            }
        }
    }

    @Test
    void aSupersededHintStopsWithinASecondAndItsSuccessorReusesTheCopies(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1609, 1, slow(DataSize.ofMiB(1)))) {
            dataset(f.admin, "/data/a", 8, 12);
            String old = f.post("/v1/hints", hint("j", List.of("/data/a"), "")).body().path("id").asText();
            awaitProgress(f, old);
            long t0 = System.nanoTime();
            HooksFixture.Http r = f.post("/v1/hints", hint("j", List.of("/data/a/sample-0", "/data/a/sample-1"), "\"supersedes\": \"" + old + "\""));
            assertThat(r.status()).as(r.body().toString()).isEqualTo(201);
            JsonNode was = f.awaitState(old, "cancelled", Duration.ofSeconds(1));
            assertThat((System.nanoTime() - t0) / 1_000_000).as("superseded within a second").isLessThan(1000);
            assertThat(was.path("message").asText()).contains("superseded by hint " + r.body().path("id").asText());
            f.awaitState(r.body().path("id").asText(), "ready", Duration.ofSeconds(60));
            assertThat(f.prefetchFetches()).as("the successor's chunks were fetched once, by whichever hint came first")
                    .isLessThan(8L * CHUNKS_PER_FILE);
            expect(f.post("/v1/hints", hint("j", List.of("/data/a"), "\"supersedes\": \"999\"")), 400, "supersedes");
        }
    }

    @Test
    void aHintThatDoesNotFitFailsWithTheReasonAndAnotherJobsDataStaysPinned(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1610, 1, c -> c.withCapacity(DataSize.ofMiB(2)))) {
            dataset(f.admin, "/data/a", 2, 13);
            dataset(f.admin, "/data/b", 4, 14);
            String a = f.post("/v1/hints", hint("a", List.of("/data/a"), "")).body().path("id").asText();
            f.awaitState(a, "ready", Duration.ofSeconds(60));
            String b = f.post("/v1/hints", hint("b", List.of("/data/b"), "")).body().path("id").asText();
            JsonNode failed = f.awaitState(b, "failed", Duration.ofSeconds(60));
            assertThat(failed.path("message").asText()).as("names the chunk and why").contains("/data/b/sample-").contains("has no room");
            assertThat(f.get("/v1/hints/" + a).body().path("state").asText()).isEqualTo("ready");
            long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (f.pinnedChunks() != 2L * CHUNKS_PER_FILE && System.nanoTime() < end) {
                Thread.sleep(50);
            }
            assertThat(f.pinnedChunks()).as("a's chunks stay pinned, the failed hint's pins went").isEqualTo(2L * CHUNKS_PER_FILE);
        }
    }

    @Test
    void hintsSurviveAHooksServerRestart(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1606, 1, slow(DataSize.ofMiB(2)))) {
            dataset(f.admin, "/data/a", 6, 7);
            String id = f.post("/v1/hints", hint("j", List.of("/data/a"), "\"deadline\": \"10m\"")).body().path("id").asText();
            awaitProgress(f, id);
            f.stopHooks();
            f.startHooks();
            assertThat(f.get("/v1/hints/" + id).status()).isEqualTo(200);
            JsonNode ready = f.awaitState(id, "ready", Duration.ofSeconds(60));
            assertThat(ready.path("bytes_done").asLong()).isEqualTo(6L * FILE);
            assertThat(f.prefetchFetches()).as("chunks fetched before the restart are not fetched again").isEqualTo(6L * CHUNKS_PER_FILE);
        }
    }

    @Test
    void aRecordTheMetaServiceFailsIsTriedAgainAndTheHintStillGetsReady(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1610, 1, c -> c)) {
            Map<String, byte[]> data = dataset(f.admin, "/data/marks", 3, 10);
            // the planner talks to the namespace through the admin client: its first Cache call looks up records of the
            // files (planning), the next ones record them as staged; the first two records fail
            java.util.concurrent.atomic.AtomicInteger caches = new java.util.concurrent.atomic.AtomicInteger();
            FaultInjector.Rule failing = f.context("admin").faults()
                    .arm(FaultPoint.RPC_SEND, new Fault.Fail(new StrataException(Status.IO_ERROR, "injected: the record failed")))
                    .when(s -> s.message().equals("Cache") && caches.incrementAndGet() > 1).times(2);
            String id = f.post("/v1/hints", hint("job-m", List.of("/data/marks"), "")).body().path("id").asText();
            JsonNode h = f.awaitState(id, "ready", Duration.ofSeconds(60));
            assertThat(failing.fired()).as("both injected failures happened").isEqualTo(2);
            assertThat(h.path("bytes_done").asLong()).isEqualTo(h.path("bytes_total").asLong());
            List<Cached.Record> recs = Futures.join(f.admin.meta().cachedAsync(Caller.ROOT,
                    data.keySet().stream().map(p -> f.admin.stat(p).inode()).toList()), Duration.ofSeconds(10));
            assertThat(recs).as("every file recorded as staged").hasSize(3);
        }
    }

    @Test
    void earliestDeadlineGoesFirstAndAnUnmeetableDeadlineTurnsAtRiskThenLate(@TempDir Path dir) throws Exception {
        try (HooksFixture f = new HooksFixture(dir, 1607, 1, slow(DataSize.ofMiB(1)))) {
            dataset(f.admin, "/data/later", 3, 8);
            dataset(f.admin, "/data/sooner", 6, 9);
            String later = f.post("/v1/hints", hint("a", List.of("/data/later"), "\"deadline\": \"30m\"")).body().path("id").asText();
            String sooner = f.post("/v1/hints", hint("b", List.of("/data/sooner"), "\"deadline\": \"3s\"")).body().path("id").asText();
            boolean atRisk = false;
            long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            String s = "";
            while (!s.equals("late") && System.nanoTime() < end) {
                s = f.get("/v1/hints/" + sooner).body().path("state").asText();
                atRisk |= s.equals("at-risk");
                Thread.sleep(50);
            }
            assertThat(atRisk).as("4.2 MB at 1 MiB/s cannot be ready in 3 s: at risk first").isTrue();
            assertThat(s).isEqualTo("late");
            assertThat(f.hooksMeter("strata.hooks.hints", "state", "late")).as("visible in the metrics").isEqualTo(1.0);
            assertThat(f.hooksMeter("strata.hooks.deadlines.missed")).isEqualTo(1.0);
            JsonNode b = f.awaitState(sooner, "ready", Duration.ofSeconds(60));
            JsonNode a = f.awaitState(later, "ready", Duration.ofSeconds(60));
            assertThat(b.path("ready_at").asText()).as("the earlier deadline was staged first")
                    .isLessThan(a.path("ready_at").asText());
        }
    }
}
