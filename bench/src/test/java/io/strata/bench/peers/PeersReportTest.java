package io.strata.bench.peers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * fio JSON reports into the peers table and result line. The reports are real fio 3.33 output of bench/fio: checkpoint-save
 * and sample-read-4k on tmpfs, small-files on the MooseFS mount of a {@code strata bench peers} run.
 */
class PeersReportTest {
    private static String resource(String name) throws IOException {
        try (InputStream in = PeersReportTest.class.getResourceAsStream("/fio/" + name)) {
            assertThat(in).as(name).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void readsThroughputIopsAndLatencyInTheJobsDirection() throws IOException {
        FioJson.Job save = FioJson.parse(resource("checkpoint-save.json")).get("checkpoint-save");
        assertThat(save.write()).isTrue();
        assertThat(save.bytes()).isEqualTo(32L << 20);
        assertThat(save.mbPerSec()).isCloseTo(3050.402909, within(1e-6));
        assertThat(save.p99Us()).isCloseTo(2473.984, within(1e-3));
        assertThat(save.error()).isZero();

        FioJson.Job r4k = FioJson.parse(resource("sample-read-4k.json")).get("sample-read-4k");
        assertThat(r4k.write()).isFalse();
        assertThat(r4k.iops()).isCloseTo(565372.763419, within(1e-6));
    }

    @Test
    void theSmallFileStormGivesOneFigurePerPhase() throws IOException {
        Map<String, FioJson.Job> jobs = FioJson.parse(resource("small-files.json"));
        assertThat(jobs.keySet()).containsExactly("small-create", "small-stat", "small-read", "small-delete");
        assertThat(jobs.get("small-create").write()).isTrue();
        // filestat and filedelete count one read per file
        assertThat(jobs.get("small-stat").write()).isFalse();
        assertThat(jobs.get("small-create").iops()).isCloseTo(325.309044, within(1e-6));
        assertThat(jobs.get("small-stat").iops()).isCloseTo(5617.977528, within(1e-6));
        assertThat(jobs.get("small-read").iops()).isCloseTo(1267.427123, within(1e-6));
        assertThat(jobs.get("small-delete").iops()).isCloseTo(2976.190476, within(1e-6));
    }

    @Test
    void tableAndResultLineGiveStrataOverMoosefsAndMarkFailures() throws IOException {
        PeersReport report = new PeersReport(List.of("moosefs", "strata", "tmpfs"));
        Map<String, FioJson.Job> save = FioJson.parse(resource("checkpoint-save.json"));
        Map<String, FioJson.Job> small = FioJson.parse(resource("small-files.json"));
        // the same report on both sides gives 1.00; a failure gives n/a, never a number
        report.add("moosefs", Workload.CHECKPOINT_SAVE, save);
        report.add("strata", Workload.CHECKPOINT_SAVE, save);
        report.add("tmpfs", Workload.CHECKPOINT_SAVE, save);
        report.add("moosefs", Workload.SMALL_FILES, small);
        report.failed("strata", Workload.SMALL_FILES);

        assertThat(report.resultLine()).isEqualTo("result: checkpoint_save_vs_moosefs=1.00 small_create_vs_moosefs=n/a"
                + " small_stat_vs_moosefs=n/a small_read_vs_moosefs=n/a small_delete_vs_moosefs=n/a");
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        report.printTable(new PrintStream(buf, true, StandardCharsets.UTF_8));
        List<String> lines = buf.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines.get(0)).startsWith("workload").contains("moosefs", "strata", "tmpfs", "strata/moosefs");
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("checkpoint-save").contains("MB/s", "3,050", "1.00x"));
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("small-stat").contains("ops/s", "5,618", "failed", "n/a"));
    }

    @Test
    void ratioIsStrataOverMoosefs() {
        PeersReport report = new PeersReport(List.of("moosefs", "strata"));
        Workload.Figure f = Workload.SAMPLE_READ_4K.figures.get(0);
        report.put("moosefs", f, 2000);
        report.put("strata", f, 3100);
        assertThat(report.ratio(f)).isCloseTo(1.55, within(1e-9));
        assertThat(report.resultLine()).isEqualTo("result: sample_read_4k_vs_moosefs=1.55");
    }

    @Test
    void severalRoundsGiveTheMedianPerSystemAndAFailureInAnyRoundStaysVisible() {
        Workload.Figure restore = Workload.CHECKPOINT_RESTORE.figures.get(0);
        Workload.Figure save = Workload.CHECKPOINT_SAVE.figures.get(0);
        double[][] strataMoosefs = {{200, 300}, {450, 280}, {420, 260}};
        List<PeersReport> rounds = new java.util.ArrayList<>();
        for (int i = 0; i < strataMoosefs.length; i++) {
            PeersReport r = new PeersReport(List.of("moosefs", "strata"));
            r.put("strata", restore, strataMoosefs[i][0]);
            r.put("moosefs", restore, strataMoosefs[i][1]);
            r.put("moosefs", save, 30);
            r.put("strata", save, i == 1 ? Double.NaN : 50); // strata failed the save in round 2
            rounds.add(r);
        }
        PeersReport median = PeersReport.median(rounds);
        // 420 of (200, 420, 450) and 280 of (260, 280, 300): not the mean, not the last round
        assertThat(median.value(restore, "strata")).isEqualTo(420);
        assertThat(median.value(restore, "moosefs")).isEqualTo(280);
        assertThat(median.value(save, "moosefs")).isEqualTo(30);
        assertThat(median.resultLine()).isEqualTo("result: checkpoint_restore_vs_moosefs=1.50 checkpoint_save_vs_moosefs=n/a");
        // an even count takes the mean of the middle two
        assertThat(PeersReport.median(rounds.subList(0, 2)).value(restore, "strata")).isEqualTo(325);
        assertThatThrownBy(() -> PeersReport.median(List.of())).hasMessageContaining("no rounds");
    }

    @Test
    void oneWorkerReportGivesRateAndLatenciesWithLatencyRatiosTurnedSoAboveOneIsFaster() throws IOException {
        // real output of bench/peers/small-files-one.py on tmpfs, 200 files
        Map<String, Double> tmpfs = OneWorkerJson.parse(resource("small-files-one.json"));
        assertThat(tmpfs.keySet()).containsExactly("one-create", "one-create-p50", "one-create-p99", "one-stat", "one-stat-p50",
                "one-stat-p99", "one-read", "one-read-p50", "one-read-p99", "one-unlink", "one-unlink-p50", "one-unlink-p99");
        assertThat(tmpfs.get("one-create")).isCloseTo(16493.2, within(1e-9));
        assertThat(tmpfs.get("one-create-p99")).isCloseTo(0.2592, within(1e-9));

        PeersReport report = new PeersReport(List.of("moosefs", "strata"));
        Map<String, Double> strata = new java.util.HashMap<>(tmpfs);
        strata.put("one-create", tmpfs.get("one-create") / 2); // half the rate: 0.50
        strata.put("one-create-p99", tmpfs.get("one-create-p99") * 4); // four times the latency: 0.25
        strata.remove("one-unlink-p50"); // missing: n/a, not a number
        report.addValues("moosefs", Workload.SMALL_FILES_ONE, tmpfs);
        report.addValues("strata", Workload.SMALL_FILES_ONE, strata);
        assertThat(report.resultLine()).startsWith("result: one_create_vs_moosefs=0.50 one_create_p50_vs_moosefs=1.00"
                + " one_create_p99_vs_moosefs=0.25 ").contains(" one_unlink_p50_vs_moosefs=n/a ");
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        report.printTable(new PrintStream(buf, true, StandardCharsets.UTF_8));
        assertThat(buf.toString(StandardCharsets.UTF_8).lines()).anySatisfy(l -> assertThat(l).startsWith("one-create-p99").contains("ms", "0.259", "1.04",
                "0.25x"));
        assertThat(Workload.byName("small-files-1")).isSameAs(Workload.SMALL_FILES_ONE);
        assertThat(Workload.SMALL_FILES_ONE.script).isEqualTo("bench/peers/small-files-one.py");
    }

    @Test
    void rejectsWhatIsNotAOneWorkerReport() {
        assertThatThrownBy(() -> OneWorkerJson.parse("{}")).hasMessageContaining("no operations");
        assertThatThrownBy(() -> OneWorkerJson.parse("{\"create\": {\"ops_per_s\": 3}}")).hasMessageContaining("create has no number p50_ms");
    }

    @Test
    void rejectsWhatIsNotAFioReport() {
        assertThatThrownBy(() -> FioJson.parse("fio: no such file")).hasMessageContaining("not a fio JSON report");
        assertThatThrownBy(() -> FioJson.parse("{\"fio version\": \"fio-3.33\"}")).hasMessageContaining("no \"jobs\"");
        assertThatThrownBy(() -> Workload.byName("random")).hasMessageContaining("unknown workload random");
    }
}
