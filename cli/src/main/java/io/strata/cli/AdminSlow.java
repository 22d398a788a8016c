package io.strata.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata admin slow}: the recent slow operations of every daemon, joined by trace id.
 * Every FUSE request of a mount is a traced user operation; its id travels with each RPC it
 * causes, so the hops a slow read made (the mount's request, its call to a storage node, the
 * node serving it, the device queue and the disk) are listed together, slowest trace first.
 * Reads each daemon's {@code /slow} (beside {@code /metrics}).
 */
@Command(name = "slow", mixinStandardHelpOptions = true,
        description = {"Recent slow operations across the cluster, each with its hops (mount, calls, servers, disks).", "",
                "Every daemon keeps the operations that took at least its [node] slow-op (default 200ms) and serves them "
                        + "at /slow on its metrics endpoint. This gathers them, joins them by trace id (one id per user "
                        + "operation, carried in every RPC it causes) and prints the slowest traces first, their hops in "
                        + "order of time taken: the hop whose own time is most of the trace's is where it was slow."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata admin slow                      the local cluster's slowest traces",
                "  strata admin slow --trace 3f2a9c0d41b7e655",
                "  strata admin slow --all                background work too",
                "  strata admin slow --endpoint node7:9190 --json"})
final class AdminSlow implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @CommandLine.Mixin
    MetricsSources daemons;

    @Option(names = "--limit", defaultValue = "20", description = "Traces to show, slowest first (default ${DEFAULT-VALUE}).")
    int limit;

    @Option(names = "--trace", paramLabel = "ID", description = "Only this trace (16 hex digits, as logs show it).")
    String trace;

    @Option(names = "--all", description = "Also the untraced slow operations (background work: drains, heartbeats, "
            + "routing and revocation polls, garbage collection), each on its own.")
    boolean all;

    @Option(names = "--json", description = "The traces as one JSON array.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** One hop as a daemon reported it. */
    record Hop(String trace, String at, String process, String hop, String what, double ms, String detail) {
    }

    /** The hops of one trace; its time is its longest hop's (the outermost one took at least as long as the rest). */
    record Traced(String trace, List<Hop> hops) {
        double ms() {
            return hops.stream().mapToDouble(Hop::ms).max().orElse(0);
        }
    }

    @Override
    public Integer call() throws Exception {
        if (limit <= 0) {
            throw new IllegalArgumentException("--limit must be positive, got " + limit);
        }
        if (trace != null) {
            io.strata.core.trace.Trace.parse(trace.toLowerCase(Locale.ROOT)); // a clear error for a malformed id
        }
        Map<String, URI> targets = daemons.targets();
        PrintWriter out = spec.commandLine().getOut();
        List<Hop> hops = new ArrayList<>();
        HttpClient http = daemons.client();
        for (Map.Entry<String, URI> t : targets.entrySet()) {
            try {
                hops.addAll(fetch(http, daemons.request(t.getValue().resolve("/slow"))));
            } catch (Exception e) {
                out.println("(" + t.getKey() + ": no answer from " + t.getValue().resolve("/slow") + ": " + e.getMessage() + ")");
            }
        }
        List<Traced> traces = join(hops, trace == null ? null : trace.toLowerCase(Locale.ROOT), all);
        List<Traced> shown = traces.subList(0, Math.min(limit, traces.size()));
        if (json) {
            out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(shown));
        } else {
            out.print(format(shown, traces.size()));
        }
        out.flush();
        return 0;
    }

    static List<Hop> fetch(HttpClient http, URI slow) throws Exception {
        return fetch(http, HttpRequest.newBuilder(slow).timeout(Duration.ofSeconds(5)).GET());
    }

    static List<Hop> fetch(HttpClient http, HttpRequest.Builder request) throws Exception {
        HttpResponse<String> r = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("HTTP " + r.statusCode() + (r.statusCode() == 401 ? ": " + r.body().strip() : ""));
        }
        List<Hop> out = new ArrayList<>();
        for (JsonNode o : JSON.readTree(r.body()).path("ops")) {
            out.add(new Hop(o.path("trace").asText(), o.path("at").asText(), o.path("process").asText(), o.path("hop").asText(),
                    o.path("what").asText(), o.path("ms").asDouble(), o.path("detail").asText()));
        }
        return out;
    }

    /**
     * The hops grouped by trace, slowest trace first, each trace's hops slowest first; untraced
     * hops (id 0) are left out, or with {@code untraced} each stands alone.
     */
    static List<Traced> join(List<Hop> hops, String only, boolean untraced) {
        String none = io.strata.core.trace.Trace.format(0);
        Map<String, List<Hop>> byTrace = new LinkedHashMap<>();
        int alone = 0;
        for (Hop h : hops) {
            if (only != null && !only.equals(h.trace()) || !untraced && h.trace().equals(none)) {
                continue;
            }
            String key = h.trace().equals(none) ? "untraced-" + alone++ : h.trace();
            byTrace.computeIfAbsent(key, k -> new ArrayList<>()).add(h);
        }
        List<Traced> out = new ArrayList<>();
        byTrace.forEach((k, v) -> {
            v.sort(Comparator.comparingDouble(Hop::ms).reversed());
            out.add(new Traced(k.startsWith("untraced-") ? none : k, v));
        });
        out.sort(Comparator.comparingDouble(Traced::ms).reversed());
        return out;
    }

    static String format(List<Traced> shown, int total) {
        StringBuilder b = new StringBuilder();
        if (shown.isEmpty()) {
            return "no slow operations kept (each daemon keeps those over its [node] slow-op, default 200ms; "
                    + "--all adds untraced background work)\n";
        }
        b.append(String.format("%d slow trace(s), the %d slowest:%n", total, shown.size()));
        // hops in order of time taken: the outer hop (the mount's request) first, the hop it waited for next
        for (Traced t : shown) {
            Hop first = t.hops().get(0);
            b.append(String.format("%ntrace %s  %.1f ms  at %s%n", t.trace(), t.ms(), first.at()));
            for (Hop h : t.hops()) {
                b.append(String.format("  %-10s %-6s %9.1f ms  %s%s%n", h.process(), h.hop(), h.ms(), h.what(),
                        h.detail().isEmpty() ? "" : "  (" + h.detail() + ")"));
            }
        }
        return b.toString();
    }

    /**
     * Where the slow FUSE reads among {@code traces} spent their time, hop by hop: the count and
     * mean of each hop kind, and of the device queue and device time the storage nodes noted
     * (in a {@code serve} hop's detail or a {@code disk} hop).
     */
    record ReadBreakdown(int reads, Map<String, double[]> hops, double[] queued, double[] device) {
        /** One line: "12 slow reads; fuse 310.2 ms (12), call 301.0 ms (12), serve 40.1 ms (3), ...". */
        String line() {
            StringBuilder b = new StringBuilder(reads + " slow reads");
            hops.forEach((k, v) -> b.append(String.format(Locale.ROOT, "; %s %.1f ms (%d)", k, v[0] / v[1], (int) v[1])));
            if (queued[1] > 0) {
                b.append(String.format(Locale.ROOT, "; device queue %.1f ms, device %.1f ms (%d)", queued[0] / queued[1],
                        device[0] / device[1], (int) queued[1]));
            }
            return b.toString();
        }
    }

    private static final java.util.regex.Pattern DEVICE_NOTE =
            java.util.regex.Pattern.compile("queued ([0-9.]+) ms for a slot, device ([0-9.]+) ms");

    static ReadBreakdown readBreakdown(List<Traced> traces) {
        Map<String, double[]> hops = new LinkedHashMap<>();
        for (String k : List.of("fuse", "call", "serve", "disk")) {
            hops.put(k, new double[2]);
        }
        double[] queued = new double[2];
        double[] device = new double[2];
        int reads = 0;
        for (Traced t : traces) {
            if (t.hops().stream().noneMatch(h -> h.hop().equals("fuse") && h.what().startsWith("read "))) {
                continue;
            }
            reads++;
            for (String k : hops.keySet()) {
                t.hops().stream().filter(h -> h.hop().equals(k)).mapToDouble(Hop::ms).max().ifPresent(ms -> {
                    hops.get(k)[0] += ms;
                    hops.get(k)[1]++;
                });
            }
            for (Hop h : t.hops()) {
                java.util.regex.Matcher m = DEVICE_NOTE.matcher(h.detail());
                if ((h.hop().equals("serve") || h.hop().equals("disk")) && m.find()) {
                    queued[0] += Double.parseDouble(m.group(1));
                    queued[1]++;
                    device[0] += Double.parseDouble(m.group(2));
                    device[1]++;
                    break; // one device operation per read
                }
            }
        }
        hops.values().removeIf(v -> v[1] == 0);
        return new ReadBreakdown(reads, hops, queued, device);
    }
}
