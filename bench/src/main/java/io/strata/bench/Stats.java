package io.strata.bench;

import java.util.Arrays;
import java.util.Locale;

/** Latency samples (nanoseconds) and the figures benchmarks print from them. */
public final class Stats {
    private long[] samples = new long[1024];
    private int n;

    public synchronized void add(long nanos) {
        if (n == samples.length) {
            samples = Arrays.copyOf(samples, n * 2);
        }
        samples[n++] = nanos;
    }

    /** Adds every sample of {@code other}. */
    public void addAll(Stats other) {
        long[] theirs;
        int m;
        synchronized (other) {
            theirs = other.samples;
            m = other.n;
        }
        for (int i = 0; i < m; i++) {
            add(theirs[i]);
        }
    }

    public synchronized int count() {
        return n;
    }

    /** The q-quantile (0..1) in microseconds; 0 when empty. */
    public synchronized double quantileMicros(double q) {
        if (n == 0) {
            return 0;
        }
        long[] s = Arrays.copyOf(samples, n);
        Arrays.sort(s);
        int i = (int) Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
        return s[i] / 1000.0;
    }

    /** The median of doubles (for picking the middle of several rounds). */
    public static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    public static String fmt(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }
}
