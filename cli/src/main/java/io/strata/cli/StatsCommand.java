package io.strata.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.bench.fs.Counters;
import io.strata.config.Durations;
import java.io.PrintWriter;
import java.net.URI;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata stats}: a live view of a cluster, one line per interval, from the daemons'
 * Prometheus pages: what the mount and clients do (FUSE requests, metadata operations), how the
 * L1 serves them (hit ratio, bytes from memory and NVMe), what reaches the storage nodes (L3
 * bytes read and written, read latency), the L2 agents (bytes staged, served to readers,
 * drained to L3), and RPC calls with their mean latency. Every figure is a rate
 * over the last interval, summed over the daemons. Counters only: levels (cache sizes, the drain
 * backlog) are on {@code strata admin l2} and the metrics pages.
 */
@Command(name = "stats", mixinStandardHelpOptions = true,
        description = {"A live view of the cluster: one line per second of ops, bytes and hit ratios per tier.", "",
                "Reads every daemon's Prometheus page (a `strata up` cluster: all of its daemons; else --endpoint) each "
                        + "interval and prints the rates: FUSE ops and their mean latency, metadata ops, the L1 hit ratio and "
                        + "MB/s from memory and NVMe, L3 MB/s read and written with the mean read latency, L2 MB/s staged, "
                        + "read and drained, RPC calls and their mean latency. --json prints one JSON object per line instead."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata stats                          the local cluster, until Ctrl-C",
                "  strata stats --count 10 --json        ten lines for a script",
                "  strata stats --endpoint h1:9191 --endpoint h2:9191"})
final class StatsCommand implements Callable<Integer> {
    @CommandLine.Mixin
    MetricsSources daemons;

    @Option(names = "--interval", defaultValue = "1s", description = "Time between lines (default ${DEFAULT-VALUE}).")
    String interval;

    @Option(names = "--count", defaultValue = "0", description = "Lines to print, then exit (default: until interrupted).")
    int count;

    @Option(names = "--json", description = "One JSON object per line.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss");

    /** The columns, each a rate (or ratio) over one interval of the summed counters. */
    record Line(double fuseOps, double fuseMs, double metaOps, double l1HitPercent, double l1MemMBps, double l1NvmeMBps,
                double l3ReadMBps, double l3WriteMBps, double l3ReadMs, double l2StageMBps, double l2ReadMBps, double l2DrainMBps,
                double rpcCalls, double rpcMs) {
    }

    @Override
    public Integer call() throws Exception {
        Duration every = Durations.parse(interval);
        if (every.compareTo(Duration.ofMillis(100)) < 0) {
            throw new IllegalArgumentException("--interval must be at least 100ms, got " + interval);
        }
        if (count < 0) {
            throw new IllegalArgumentException("--count must be 0 (no end) or more, got " + count);
        }
        Map<String, URI> targets = daemons.targets();
        List<Counters.Source> sources = new ArrayList<>();
        java.net.http.HttpClient http = daemons.client();
        targets.forEach((name, uri) -> sources.add(Counters.prometheus(uri, name, http, daemons::request)));
        PrintWriter out = spec.commandLine().getOut();
        if (!json) {
            out.println("strata stats: " + targets.size() + " daemon(s), a line every " + Durations.format(every)
                    + " (rates over the interval; L1 hit = blocks from memory or NVMe / all blocks read)");
            out.println(header());
            out.flush();
        }
        Map<String, Double> before = snapshot(sources, out);
        long t0 = System.nanoTime();
        for (int n = 0; count == 0 || n < count; n++) {
            Thread.sleep(every.toMillis());
            Map<String, Double> now = snapshot(sources, out);
            long t1 = System.nanoTime();
            Line l = line(before, now, (t1 - t0) / 1e9);
            out.println(json ? json(l) : format(l));
            out.flush();
            before = now;
            t0 = t1;
        }
        return 0;
    }

    /** Every source's counters summed (a daemon that does not answer counts as absent, with a note). */
    private static Map<String, Double> snapshot(List<Counters.Source> sources, PrintWriter out) {
        Map<String, Double> sum = new HashMap<>();
        for (Counters.Source s : sources) {
            try {
                s.snapshot().forEach((k, v) -> sum.merge(k, v, Double::sum));
            } catch (RuntimeException e) {
                out.println("strata stats: " + s.describe() + ": " + e.getMessage());
            }
        }
        return sum;
    }

    /** The sum of every counter named {@code name} whose tags include all of {@code tags} ("k=v"). */
    static double sum(Map<String, Double> counters, String name, String... tags) {
        double s = 0;
        for (Map.Entry<String, Double> e : counters.entrySet()) {
            String k = e.getKey();
            int brace = k.indexOf('{');
            if (!(brace < 0 ? k : k.substring(0, brace)).equals(name)) {
                continue;
            }
            boolean all = true;
            for (String t : tags) {
                if (brace < 0 || !(("," + k.substring(brace + 1, k.length() - 1) + ",").contains("," + t + ","))) {
                    all = false;
                    break;
                }
            }
            if (all) {
                s += e.getValue();
            }
        }
        return s;
    }

    private static double delta(Map<String, Double> a, Map<String, Double> b, String name, String... tags) {
        return Math.max(0, sum(b, name, tags) - sum(a, name, tags));
    }

    static Line line(Map<String, Double> a, Map<String, Double> b, double seconds) {
        double fuse = delta(a, b, "strata.fuse.requests.count");
        double fuseSec = delta(a, b, "strata.fuse.requests.seconds");
        double mem = delta(a, b, "strata.l1.hits", "tier=memory");
        double nvme = delta(a, b, "strata.l1.hits", "tier=nvme");
        double below = delta(a, b, "strata.l1.hits", "tier=below");
        double reads = delta(a, b, "strata.storage.latency.count", "op=read");
        double readSec = delta(a, b, "strata.storage.latency.seconds", "op=read");
        // long polls wait for news by design: left out of the rate and the latency
        double rpcs = delta(a, b, "strata.rpc.calls.count");
        double rpcSec = delta(a, b, "strata.rpc.calls.seconds");
        for (String poll : Counters.LONG_POLLS) {
            rpcs -= delta(a, b, "strata.rpc.calls.count", "message=" + poll);
            rpcSec -= delta(a, b, "strata.rpc.calls.seconds", "message=" + poll);
        }
        return new Line(fuse / seconds, fuse == 0 ? 0 : 1000 * fuseSec / fuse, delta(a, b, "strata.meta.ops.count") / seconds,
                mem + nvme + below == 0 ? Double.NaN : 100 * (mem + nvme) / (mem + nvme + below),
                delta(a, b, "strata.l1.read.bytes", "tier=memory") / seconds / 1e6,
                delta(a, b, "strata.l1.read.bytes", "tier=nvme") / seconds / 1e6,
                delta(a, b, "strata.storage.bytes", "op=read") / seconds / 1e6,
                delta(a, b, "strata.storage.bytes", "op=write") / seconds / 1e6,
                reads == 0 ? 0 : 1000 * readSec / reads,
                delta(a, b, "strata.l2.staged.bytes") / seconds / 1e6,
                delta(a, b, "strata.l2.read.bytes") / seconds / 1e6,
                delta(a, b, "strata.l2.drained.bytes") / seconds / 1e6,
                rpcs / seconds, rpcs == 0 ? 0 : 1000 * rpcSec / rpcs);
    }

    static String header() {
        return String.format(Locale.ROOT, "%-8s | %8s %7s | %8s | %6s %8s %8s | %8s %8s %7s | %8s %8s %8s | %8s %7s",
                "time", "fuse op/s", "ms", "meta op/s", "L1 hit", "mem MB/s", "nvme MB/s", "L3 rd MB/s", "wr MB/s", "rd ms",
                "L2 wr MB/s", "rd MB/s", "drain", "rpc/s", "ms");
    }

    static String format(Line l) {
        return String.format(Locale.ROOT,
                "%-8s | %9.0f %7.2f | %9.0f | %5s%% %8.1f %9.1f | %10.1f %8.1f %7.2f | %10.1f %8.1f %8.1f | %8.0f %7.2f",
                LocalTime.now().format(TIME), l.fuseOps(), l.fuseMs(), l.metaOps(),
                Double.isNaN(l.l1HitPercent()) ? "  -" : String.format(Locale.ROOT, "%.0f", l.l1HitPercent()),
                l.l1MemMBps(), l.l1NvmeMBps(), l.l3ReadMBps(), l.l3WriteMBps(), l.l3ReadMs(), l.l2StageMBps(), l.l2ReadMBps(),
                l.l2DrainMBps(), l.rpcCalls(), l.rpcMs());
    }

    private static String json(Line l) {
        ObjectNode o = JSON.createObjectNode();
        o.put("time", java.time.Instant.now().toString());
        o.put("fuse_ops_per_s", l.fuseOps());
        o.put("fuse_mean_ms", l.fuseMs());
        o.put("meta_ops_per_s", l.metaOps());
        if (!Double.isNaN(l.l1HitPercent())) {
            o.put("l1_hit_percent", l.l1HitPercent());
        }
        o.put("l1_memory_mb_per_s", l.l1MemMBps());
        o.put("l1_nvme_mb_per_s", l.l1NvmeMBps());
        o.put("l3_read_mb_per_s", l.l3ReadMBps());
        o.put("l3_write_mb_per_s", l.l3WriteMBps());
        o.put("l3_read_mean_ms", l.l3ReadMs());
        o.put("l2_staged_mb_per_s", l.l2StageMBps());
        o.put("l2_read_mb_per_s", l.l2ReadMBps());
        o.put("l2_drain_mb_per_s", l.l2DrainMBps());
        o.put("rpc_calls_per_s", l.rpcCalls());
        o.put("rpc_mean_ms", l.rpcMs());
        return o.toString();
    }
}
