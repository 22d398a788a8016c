package io.strata.bench.fs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.bench.Stats;
import io.strata.bench.Table;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * How an {@link FsBench.Report} is shown: a table (one row per job and target, next to the
 * baseline target when there is one), the counters that moved under it, and the last line
 * {@code result: key=value ...}; or, for machines, one JSON document with the same figures,
 * every moved counter and the result keys.
 */
public final class FsReport {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private FsReport() {
    }

    /** The table; {@code baseline}: the target every other is divided by in the last column (null: none). */
    public static Table table(FsBench.Report r, String baseline) {
        Table t = baseline == null ? new Table("job", "target", "MB/s", "ops/s", "p50 us", "p99 us", "note")
                : new Table("job", "target", "MB/s", "ops/s", "p50 us", "p99 us", "vs " + baseline, "note");
        for (FsBench.Item item : r.items()) {
            FsBench.Result base = baseline == null ? null : r.result(baseline, item.key());
            for (FsTarget target : r.targets()) {
                FsBench.Result x = r.result(target.name(), item.key());
                double v = value(x);
                String vs = base == null ? "" : Stats.fmt(v / value(base), 2);
                String note = item.kind() == FsBench.Item.Kind.SEQ_WRITE ? "fsync+close " + Stats.fmt(x.fsyncMillis(), 0) + " ms" : "";
                String mbps = item.kind() == FsBench.Item.Kind.SMALL_STAT ? "-" : Stats.fmt(x.mbPerSec(), 1);
                String p50 = Stats.fmt(x.latency().quantileMicros(0.5), 0);
                String p99 = Stats.fmt(x.latency().quantileMicros(0.99), 0);
                if (base == null) {
                    t.row(item.label(), target.name(), mbps, Stats.fmt(x.opsPerSec(), 0), p50, p99, note);
                } else {
                    t.row(item.label(), target.name(), mbps, Stats.fmt(x.opsPerSec(), 0), p50, p99, vs, note);
                }
            }
        }
        return t;
    }

    /** The figure a job is compared by: MB/s for data jobs, ops/s for stat. */
    public static double value(FsBench.Result x) {
        return x.item().kind() == FsBench.Item.Kind.SMALL_STAT ? x.opsPerSec() : x.mbPerSec();
    }

    /** Prints the header line, the table, the counters, the notes ("key: text" lines) and the result line. */
    public static void print(FsBench.Report r, String baseline, Map<String, String> result, Map<String, String> notes, PrintStream out) {
        FsBench.Options o = r.options();
        out.printf(Locale.ROOT, "strata bench: %d threads, big files %s (I/O %s), random reads %s for %d ms each, %d small files of %s, "
                        + "%d round(s), cores=%d%n", o.threads(), o.fileSize(), o.ioSize(), o.randomSizes(), o.randomTime().toMillis(),
                o.smallFiles(), o.smallFileSize(), o.rounds(), Runtime.getRuntime().availableProcessors());
        for (FsTarget t : r.targets()) {
            out.println("  " + t.name() + ": " + t.describe());
        }
        table(r, baseline).print(out);
        for (FsTarget t : r.targets()) {
            FsBench.CounterDelta d = r.counters().get(t.name());
            if (d.unavailable() != null) {
                out.println(t.name() + " counters: " + d.unavailable());
                continue;
            }
            List<Counters.Row> rows = Counters.summary(d.moved());
            if (rows.isEmpty()) {
                out.println(t.name() + " counters (" + d.source() + "): none moved");
                continue;
            }
            out.println(t.name() + " counters (" + d.source() + "):");
            int w = rows.stream().mapToInt(x -> x.what().length()).max().orElse(0);
            for (Counters.Row row : rows) {
                out.println("  " + row.what() + " ".repeat(w - row.what().length()) + "  " + row.value());
            }
        }
        notes.forEach((k, v) -> out.println("note: " + k + ": " + v));
        StringBuilder line = new StringBuilder("result:");
        result.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
        out.println(line);
    }

    /** The result keys of one target's run: {@code <job>_mbps} (or {@code _ops} for stat), {@code rand_<size>_iops}. */
    public static Map<String, String> figures(FsBench.Report r, String target) {
        Map<String, String> out = new LinkedHashMap<>();
        for (FsBench.Item item : r.items()) {
            FsBench.Result x = r.result(target, item.key());
            switch (item.kind()) {
                case SMALL_STAT -> out.put(item.key() + "_ops", Stats.fmt(x.opsPerSec(), 0));
                case RANDOM_READ -> {
                    out.put(item.key() + "_iops", Stats.fmt(x.opsPerSec(), 0));
                    out.put(item.key() + "_mbps", Stats.fmt(x.mbPerSec(), 1));
                }
                case SMALL_WRITE, SMALL_READ -> {
                    out.put(item.key() + "_files_s", Stats.fmt(x.opsPerSec(), 0));
                    out.put(item.key() + "_mbps", Stats.fmt(x.mbPerSec(), 1));
                }
                default -> out.put(item.key() + "_mbps", Stats.fmt(x.mbPerSec(), 1));
            }
        }
        return out;
    }

    /** {@code a}'s figure for {@code item} over {@code b}'s, formatted; "-" when either is missing. */
    public static String ratio(FsBench.Report r, String item, String a, String b) {
        FsBench.Result x = r.result(a, item);
        FsBench.Result y = r.result(b, item);
        if (x == null || y == null || value(y) == 0) {
            return "-";
        }
        return Stats.fmt(value(x) / value(y), 2);
    }

    /** The whole report as one JSON document. */
    public static String json(FsBench.Report r, String baseline, Map<String, String> result, Map<String, String> notes) {
        ObjectNode root = JSON.createObjectNode();
        FsBench.Options o = r.options();
        ObjectNode opts = root.putObject("options");
        opts.put("threads", o.threads());
        opts.put("file_size", o.fileSize().bytes());
        opts.put("io_size", o.ioSize().bytes());
        opts.put("small_files", o.smallFiles());
        opts.put("small_file_size", o.smallFileSize().bytes());
        ArrayNode rs = opts.putArray("random_sizes");
        o.randomSizes().forEach(s -> rs.add(s.bytes()));
        opts.put("random_seconds", o.randomTime().toMillis() / 1000.0);
        opts.put("rounds", o.rounds());
        root.put("cores", Runtime.getRuntime().availableProcessors());
        root.put("seconds", r.seconds());
        if (baseline != null) {
            root.put("baseline", baseline);
        }
        ArrayNode targets = root.putArray("targets");
        for (FsTarget t : r.targets()) {
            ObjectNode tn = targets.addObject();
            tn.put("name", t.name());
            tn.put("describe", t.describe());
            ArrayNode jobs = tn.putArray("jobs");
            for (FsBench.Item item : r.items()) {
                FsBench.Result x = r.result(t.name(), item.key());
                ObjectNode j = jobs.addObject();
                j.put("job", item.key());
                j.put("label", item.label());
                j.put("mb_per_s", round(x.mbPerSec()));
                j.put("ops_per_s", round(x.opsPerSec()));
                j.put("p50_us", round(x.latency().quantileMicros(0.5)));
                j.put("p99_us", round(x.latency().quantileMicros(0.99)));
                j.put("operations", x.latency().count());
                if (item.kind() == FsBench.Item.Kind.SEQ_WRITE) {
                    j.put("fsync_close_ms", round(x.fsyncMillis()));
                }
                ArrayNode rounds = j.putArray("rounds_mb_per_s");
                x.rounds().forEach(m -> rounds.add(round(m.mbPerSec())));
            }
            FsBench.CounterDelta d = r.counters().get(t.name());
            ObjectNode c = tn.putObject("counters");
            if (d.unavailable() != null) {
                c.put("unavailable", d.unavailable());
            } else {
                c.put("source", d.source());
                ObjectNode summary = c.putObject("summary");
                Counters.summary(d.moved()).forEach(row -> summary.put(row.what(), row.value()));
                ObjectNode moved = c.putObject("moved");
                d.moved().forEach((k, v) -> moved.put(k, round(v)));
            }
        }
        ObjectNode res = root.putObject("result");
        result.forEach(res::put);
        if (!notes.isEmpty()) {
            ObjectNode n = root.putObject("notes");
            notes.forEach(n::put);
        }
        try {
            return JSON.writeValueAsString(root);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
