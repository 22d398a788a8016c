package io.strata.bench.fs;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.strata.core.rpc.MessageType;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.storage.StorageMessages;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The counters behind a target's I/O, read before and after a run: a client's Micrometer
 * registry (the Java API) or a daemon's Prometheus {@code /metrics} page (a FUSE mount). Both
 * are brought to one form, {@code micrometer.name{tag=value,...}} to a number, where timers
 * and summaries give {@code name.count} (and {@code name.seconds} / {@code name.total});
 * gauges are left out. {@link #summary} turns the delta into the rows printed under the table
 * (client bytes, L1 hits and misses per tier, L3 chunk RPCs and bytes, metadata RPCs, FUSE
 * requests and their average size).
 */
public final class Counters {
    /** Tags that only say which process it is (a daemon's common tags). */
    private static final Set<String> PROCESS_TAGS = Set.of("node", "kind");
    private static final Set<String> META_MESSAGES = names(MetaMessages.TYPES);
    private static final Set<String> STORAGE_MESSAGES = names(StorageMessages.TYPES);
    /** Calls that wait by design (the routing long poll): their time is not a cost. */
    public static final Set<String> LONG_POLLS = Set.of("GetRouting");

    private Counters() {
    }

    private static Set<String> names(List<MessageType<?>> types) {
        return types.stream().map(MessageType::name).collect(Collectors.toUnmodifiableSet());
    }

    /** Where a target's counters come from. */
    public interface Source {
        /** The current values, or null when there are none ({@link #unavailable} says why). */
        Map<String, Double> snapshot();

        /** Why there are no counters, or null when there are. */
        default String unavailable() {
            return null;
        }

        /** What is read, for the output ("client registry", "mount metrics at http://..."). */
        String describe();
    }

    public static Source none(String why) {
        return new Source() {
            @Override
            public Map<String, Double> snapshot() {
                return null;
            }

            @Override
            public String unavailable() {
                return why;
            }

            @Override
            public String describe() {
                return "none";
            }
        };
    }

    /** The meters of a registry in this JVM (a {@code StrataFileSystem}'s context). */
    public static Source of(MeterRegistry registry, String what) {
        return new Source() {
            @Override
            public Map<String, Double> snapshot() {
                return read(registry);
            }

            @Override
            public String describe() {
                return what;
            }
        };
    }

    /** A Prometheus text page ({@code http://HOST:PORT/metrics}) of another process. */
    public static Source prometheus(URI uri, String what) {
        return prometheus(uri, what, HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build(),
                u -> HttpRequest.newBuilder(u).timeout(Duration.ofSeconds(10)).GET());
    }

    /** As above, read with {@code http} and requests from {@code request} (an HTTPS client, a token). */
    public static Source prometheus(URI uri, String what, HttpClient http, java.util.function.Function<URI, HttpRequest.Builder> request) {
        return new Source() {
            @Override
            public Map<String, Double> snapshot() {
                try {
                    HttpResponse<String> r = http.send(request.apply(uri).build(), HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() != 200) {
                        throw new IOException("HTTP " + r.statusCode());
                    }
                    return parsePrometheus(r.body());
                } catch (IOException e) {
                    throw new IllegalStateException("cannot read " + uri + ": " + e.getMessage(), e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted reading " + uri);
                }
            }

            @Override
            public String describe() {
                return what + " (" + uri + ")";
            }
        };
    }

    static Map<String, Double> read(MeterRegistry registry) {
        Map<String, Double> out = new TreeMap<>();
        for (Meter m : registry.getMeters()) {
            String base = m.getId().getName();
            String tags = tags(m.getId().getTags().stream().map(t -> new String[] {t.getKey(), t.getValue()}).toList());
            switch (m) {
                case Counter c -> out.merge(base + tags, c.count(), Double::sum);
                case FunctionCounter c -> out.merge(base + tags, c.count(), Double::sum);
                case Timer t -> {
                    out.merge(base + ".count" + tags, (double) t.count(), Double::sum);
                    out.merge(base + ".seconds" + tags, t.totalTime(TimeUnit.NANOSECONDS) / 1e9, Double::sum);
                }
                case FunctionTimer t -> {
                    out.merge(base + ".count" + tags, t.count(), Double::sum);
                    out.merge(base + ".seconds" + tags, t.totalTime(TimeUnit.NANOSECONDS) / 1e9, Double::sum);
                }
                case DistributionSummary s -> {
                    out.merge(base + ".count" + tags, (double) s.count(), Double::sum);
                    out.merge(base + ".total" + tags, s.totalAmount(), Double::sum);
                }
                default -> {
                    // gauges and the rest: levels, not counts
                }
            }
        }
        return out;
    }

    private static String tags(List<String[]> kv) {
        StringBuilder sb = new StringBuilder();
        kv.stream().filter(t -> !PROCESS_TAGS.contains(t[0])).sorted((a, b) -> a[0].compareTo(b[0])).forEach(t -> {
            sb.append(sb.isEmpty() ? "{" : ",").append(t[0]).append('=').append(t[1]);
        });
        return sb.isEmpty() ? "" : sb.append('}').toString();
    }

    /**
     * The counters of a Prometheus text page in the same form as {@link #read}: {@code x_total}
     * is counter {@code x}, {@code x_seconds_count}/{@code _sum} a timer, {@code x_count}/{@code _sum}
     * a summary; quantile lines, {@code _max} and gauges are skipped.
     */
    static Map<String, Double> parsePrometheus(String text) {
        Map<String, Double> out = new TreeMap<>();
        for (String line : text.split("\n")) {
            line = line.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int brace = line.indexOf('{');
            int space = brace >= 0 ? line.indexOf(' ', line.lastIndexOf('}')) : line.indexOf(' ');
            if (space < 0) {
                continue;
            }
            String name = brace >= 0 ? line.substring(0, brace) : line.substring(0, space);
            List<String[]> labels = brace >= 0 ? labels(line.substring(brace + 1, line.lastIndexOf('}'))) : List.of();
            if (labels.stream().anyMatch(l -> l[0].equals("quantile") || l[0].equals("le"))) {
                continue;
            }
            String value = line.substring(space + 1).strip().split(" ")[0];
            double v;
            try {
                v = Double.parseDouble(value);
            } catch (NumberFormatException e) {
                continue;
            }
            String key;
            if (name.endsWith("_seconds_count")) {
                key = dotted(name, "_seconds_count") + ".count";
            } else if (name.endsWith("_seconds_sum")) {
                key = dotted(name, "_seconds_sum") + ".seconds";
            } else if (name.endsWith("_total")) {
                key = dotted(name, "_total");
            } else if (name.endsWith("_count")) {
                key = dotted(name, "_count") + ".count";
            } else if (name.endsWith("_sum")) {
                key = dotted(name, "_sum") + ".total";
            } else {
                continue;
            }
            out.merge(key + tags(labels), v, Double::sum);
        }
        return out;
    }

    private static String dotted(String name, String suffix) {
        return name.substring(0, name.length() - suffix.length()).replace('_', '.');
    }

    private static List<String[]> labels(String s) {
        List<String[]> out = new ArrayList<>();
        int i = 0;
        while (i < s.length()) {
            int eq = s.indexOf('=', i);
            if (eq < 0 || eq + 1 >= s.length() || s.charAt(eq + 1) != '"') {
                break;
            }
            String k = s.substring(i, eq).strip();
            StringBuilder v = new StringBuilder();
            int j = eq + 2;
            while (j < s.length() && s.charAt(j) != '"') {
                char c = s.charAt(j);
                if (c == '\\' && j + 1 < s.length()) {
                    char n = s.charAt(++j);
                    v.append(n == 'n' ? '\n' : n);
                } else {
                    v.append(c);
                }
                j++;
            }
            out.add(new String[] {k, v.toString()});
            i = j + 1;
            while (i < s.length() && (s.charAt(i) == ',' || s.charAt(i) == ' ')) {
                i++;
            }
        }
        return out;
    }

    /** {@code after - before} for every key that moved (keys only in {@code after} count from 0). */
    public static Map<String, Double> delta(Map<String, Double> before, Map<String, Double> after) {
        Map<String, Double> out = new TreeMap<>();
        after.forEach((k, v) -> {
            double d = v - before.getOrDefault(k, 0.0);
            if (Math.abs(d) > 1e-9) {
                out.put(k, d);
            }
        });
        return out;
    }

    /** One printed row under the table: what, and how much. */
    public record Row(String what, String value) {
    }

    /** The rows for the counters that moved, the way {@code juicefs bench} prints them; empty when none did. */
    public static List<Row> summary(Map<String, Double> d) {
        List<Row> rows = new ArrayList<>();
        double appRead = sum(d, "strata.client.bytes", "op=read");
        double appWrite = sum(d, "strata.client.bytes", "op=write");
        if (appRead + appWrite > 0) {
            rows.add(new Row("client bytes read / written", mib(appRead) + " / " + mib(appWrite)));
        }
        for (String tier : List.of("memory", "nvme")) {
            double hits = sum(d, "strata.l1.hits", "tier=" + tier);
            double misses = sum(d, "strata.l1.misses", "tier=" + tier);
            double bytes = sum(d, "strata.l1.read.bytes", "tier=" + tier);
            if (hits + misses > 0) {
                rows.add(new Row("L1 " + tier + " hits / misses / bytes served", fmt(hits) + " / " + fmt(misses) + " / " + mib(bytes)));
            }
        }
        double below = sum(d, "strata.l1.read.bytes", "tier=below");
        if (below > 0) {
            rows.add(new Row("L1 bytes fetched from L3", mib(below)));
        }
        double absorbed = sum(d, "strata.l1.writeback.absorbed.bytes", "");
        if (absorbed > 0) {
            rows.add(new Row("L1 write-back absorbed / flushed", mib(absorbed) + " / " + mib(sum(d, "strata.l1.writeback.flushed.bytes", ""))));
        }
        double writes = rpcCalls(d, Set.of("WriteChunk"));
        double reads = rpcCalls(d, Set.of("ReadChunk"));
        double out = sum(d, "strata.rpc.bytes", "direction=out", "side=client");
        double in = sum(d, "strata.rpc.bytes", "direction=in", "side=client");
        if (writes + reads > 0) {
            rows.add(new Row("L3 chunk writes / reads (RPCs)", fmt(writes) + " / " + fmt(reads)));
            rows.add(new Row("L3 bytes written / read (RPC payload)", mib(out) + " / " + mib(in)));
        }
        double otherStorage = rpcCalls(d, STORAGE_MESSAGES) - writes - reads;
        if (otherStorage > 0) {
            rows.add(new Row("L3 other storage RPCs", fmt(otherStorage)));
        }
        Map<String, Double> meta = rpcCallsByMessage(d, META_MESSAGES);
        double metaTotal = meta.values().stream().mapToDouble(Double::doubleValue).sum();
        if (metaTotal > 0) {
            rows.add(new Row("metadata ops (RPCs)", fmt(metaTotal) + "  (" + top(meta, 6) + ")"));
        }
        Map<String, Double> fuse = byTag(d, "strata.fuse.requests.count", "op");
        double fuseTotal = fuse.values().stream().mapToDouble(Double::doubleValue).sum();
        if (fuseTotal > 0) {
            rows.add(new Row("FUSE requests", fmt(fuseTotal) + "  (" + top(fuse, 6) + ")"));
            double fw = fuse.getOrDefault("write", 0.0);
            double fr = fuse.getOrDefault("read", 0.0);
            rows.add(new Row("FUSE avg write / read request", (fw > 0 ? kib(appWrite / fw) : "-") + " / " + (fr > 0 ? kib(appRead / fr) : "-")));
        }
        Map<String, Double> rpcSeconds = byTag(d, "strata.rpc.calls.seconds", "message");
        rpcSeconds.keySet().removeAll(LONG_POLLS);
        String rpcTime = latencyByTotal(rpcSeconds, byTag(d, "strata.rpc.calls.count", "message"), 5);
        if (!rpcTime.isEmpty()) {
            rows.add(new Row("RPC time (avg ms x calls)", rpcTime));
        }
        String fuseTime = latencyByTotal(byTag(d, "strata.fuse.requests.seconds", "op"), fuse, 5);
        if (!fuseTime.isEmpty()) {
            rows.add(new Row("FUSE time (avg ms x requests)", fuseTime));
        }
        return rows;
    }

    /** The {@code n} names with the most total time: "name avg-ms x count", most time first. */
    private static String latencyByTotal(Map<String, Double> seconds, Map<String, Double> counts, int n) {
        return seconds.entrySet().stream().filter(e -> counts.getOrDefault(e.getKey(), 0.0) > 0)
                .sorted((a, b) -> Double.compare(b.getValue(), a.getValue())).limit(n)
                .map(e -> e.getKey() + " " + String.format(Locale.ROOT, "%.2f", e.getValue() * 1000 / counts.get(e.getKey()))
                        + " x" + fmt(counts.get(e.getKey())))
                .collect(Collectors.joining(", "));
    }

    private static String top(Map<String, Double> m, int n) {
        return m.entrySet().stream().sorted((a, b) -> Double.compare(b.getValue(), a.getValue())).limit(n)
                .map(e -> e.getKey() + " " + fmt(e.getValue())).collect(Collectors.joining(", "))
                + (m.size() > n ? ", ..." : "");
    }

    /** The sum of the values of {@code name} whose tags contain every one of {@code tags} ("k=v"). */
    static double sum(Map<String, Double> d, String name, String... tags) {
        double s = 0;
        for (Map.Entry<String, Double> e : d.entrySet()) {
            String k = e.getKey();
            int b = k.indexOf('{');
            String n = b < 0 ? k : k.substring(0, b);
            if (!n.equals(name)) {
                continue;
            }
            String t = b < 0 ? "" : k.substring(b + 1, k.length() - 1);
            List<String> have = List.of(t.split(","));
            boolean all = true;
            for (String want : tags) {
                if (!want.isEmpty() && !have.contains(want)) {
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

    private static double rpcCalls(Map<String, Double> d, Set<String> messages) {
        return rpcCallsByMessage(d, messages).values().stream().mapToDouble(Double::doubleValue).sum();
    }

    private static Map<String, Double> rpcCallsByMessage(Map<String, Double> d, Set<String> messages) {
        Map<String, Double> all = byTag(d, "strata.rpc.calls.count", "message");
        all.keySet().retainAll(messages);
        return all;
    }

    /** The values of {@code name} summed by the value of tag {@code tag}. */
    static Map<String, Double> byTag(Map<String, Double> d, String name, String tag) {
        Map<String, Double> out = new TreeMap<>();
        for (Map.Entry<String, Double> e : d.entrySet()) {
            String k = e.getKey();
            if (!k.startsWith(name + "{")) {
                continue;
            }
            for (String kv : k.substring(name.length() + 1, k.length() - 1).split(",")) {
                if (kv.startsWith(tag + "=")) {
                    out.merge(kv.substring(tag.length() + 1), e.getValue(), Double::sum);
                }
            }
        }
        return out;
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.0f", v);
    }

    private static String mib(double bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (1 << 20));
    }

    private static String kib(double bytes) {
        return String.format(Locale.ROOT, "%.0f KiB", bytes / 1024);
    }
}
