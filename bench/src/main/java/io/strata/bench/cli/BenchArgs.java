package io.strata.bench.cli;

import java.io.PrintStream;
import java.util.List;

/** What the suites' commands share: the checks of their numeric options, and where they print. */
public final class BenchArgs {
    private BenchArgs() {
    }

    /** Standard output flushed at every line, so that a suite's table shows as its cases finish. */
    public static PrintStream stdout() {
        return new PrintStream(System.out, true);
    }

    /** {@code value}, or a usage error naming {@code option} when it is outside [lo, hi]. */
    static int between(String option, int value, int lo, int hi) {
        if (value < lo || value > hi) {
            throw new IllegalArgumentException(option + " must be between " + lo + " and " + hi + ", got " + value);
        }
        return value;
    }

    /** {@link #between} for each of a list option's values. */
    static void eachBetween(String option, List<Integer> values, int lo, int hi) {
        for (int v : values) {
            between(option, v, lo, hi);
        }
    }
}
