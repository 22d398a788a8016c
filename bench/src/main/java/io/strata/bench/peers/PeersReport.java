package io.strata.bench.peers;

import io.strata.bench.Table;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The figures of one {@code strata bench peers} run and their table: one row per figure, one
 * column per system, then Strata/MooseFS; the last line is
 * {@code result: <figure>_vs_moosefs=<ratio> ...} for every figure ({@code n/a} where either
 * side failed). A failed run is recorded as NaN and printed as {@code failed}. A run of several
 * rounds reports each round and then their {@link #median}.
 */
public final class PeersReport {
    public static final String MOOSEFS = "moosefs";
    public static final String STRATA = "strata";

    private final List<String> systems;
    private final Map<Workload.Figure, Map<String, Double>> values = new LinkedHashMap<>();

    /** @param systems column order; must include {@link #MOOSEFS} and {@link #STRATA} */
    public PeersReport(List<String> systems) {
        if (!systems.contains(MOOSEFS) || !systems.contains(STRATA)) {
            throw new IllegalArgumentException("systems must include moosefs and strata: " + systems);
        }
        this.systems = List.copyOf(systems);
    }

    /** Records every figure of {@code w} from one fio report on {@code system}. */
    public void add(String system, Workload w, Map<String, FioJson.Job> jobs) {
        for (Workload.Figure f : w.figures) {
            FioJson.Job j = jobs.get(f.job());
            put(system, f, j == null || j.error() != 0 ? Double.NaN : f.of(j));
        }
    }

    /** Records every figure of {@code w} from figures by name (a scripted workload's report); a missing one as failed. */
    public void addValues(String system, Workload w, Map<String, Double> byName) {
        for (Workload.Figure f : w.figures) {
            put(system, f, byName.getOrDefault(f.job(), Double.NaN));
        }
    }

    /** Records that {@code w} failed on {@code system}. */
    public void failed(String system, Workload w) {
        for (Workload.Figure f : w.figures) {
            put(system, f, Double.NaN);
        }
    }

    /**
     * Each figure's median over {@code rounds} per system (the mean of the middle two for an even
     * count). A system that failed a figure in any round is marked failed: a median would hide it.
     */
    public static PeersReport median(List<PeersReport> rounds) {
        if (rounds.isEmpty()) {
            throw new IllegalArgumentException("no rounds");
        }
        PeersReport first = rounds.get(0);
        PeersReport out = new PeersReport(first.systems);
        for (Workload.Figure f : first.values.keySet()) {
            for (String s : first.systems) {
                double[] xs = rounds.stream().mapToDouble(r -> r.value(f, s)).sorted().toArray();
                int n = xs.length;
                boolean failed = Arrays.stream(xs).anyMatch(Double::isNaN);
                out.put(s, f, failed ? Double.NaN : n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2);
            }
        }
        return out;
    }

    void put(String system, Workload.Figure f, double v) {
        values.computeIfAbsent(f, k -> new LinkedHashMap<>()).put(system, v);
    }

    public double value(Workload.Figure f, String system) {
        return values.getOrDefault(f, Map.of()).getOrDefault(system, Double.NaN);
    }

    /**
     * How much faster Strata is than MooseFS on the figure: Strata / MooseFS for a rate, MooseFS /
     * Strata for a latency, so that above 1 always means Strata is faster; NaN when either is
     * missing, failed or zero.
     */
    public double ratio(Workload.Figure f) {
        double s = value(f, STRATA);
        double m = value(f, MOOSEFS);
        if (Double.isNaN(s) || Double.isNaN(m) || m <= 0) {
            return Double.NaN;
        }
        if (f.unit().lowerIsBetter) {
            return s <= 0 ? Double.NaN : m / s;
        }
        return s / m;
    }

    public void printTable(PrintStream out) {
        List<String> header = new ArrayList<>(List.of("workload", "unit"));
        header.addAll(systems);
        header.add("strata/moosefs");
        Table t = new Table(header.toArray(String[]::new));
        for (Workload.Figure f : values.keySet()) {
            List<Object> row = new ArrayList<>(List.of(f.job(), f.unit().label));
            for (String s : systems) {
                row.add(format(value(f, s)));
            }
            double r = ratio(f);
            row.add(Double.isNaN(r) ? "n/a" : String.format(Locale.ROOT, "%.2fx", r));
            t.row(row.toArray());
        }
        t.print(out);
    }

    /** {@code result: checkpoint_save_vs_moosefs=1.62 ...}, every figure in table order. */
    public String resultLine() {
        StringBuilder sb = new StringBuilder("result:");
        for (Workload.Figure f : values.keySet()) {
            double r = ratio(f);
            sb.append(' ').append(f.key()).append("_vs_moosefs=").append(Double.isNaN(r) ? "n/a" : String.format(Locale.ROOT, "%.2f", r));
        }
        return sb.toString();
    }

    static String format(double v) {
        if (Double.isNaN(v)) {
            return "failed";
        }
        if (v >= 100) {
            return String.format(Locale.ROOT, "%,.0f", v);
        }
        return String.format(Locale.ROOT, v < 1 ? "%.3f" : v < 10 ? "%.2f" : "%.1f", v);
    }
}
