package io.strata.core.trace;

import io.strata.core.time.StrataClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The slow operations one process saw recently, each a <i>hop</i> of a user operation named by
 * its {@link Trace trace id}: a FUSE request in the mount ({@code fuse}), a call the process made
 * ({@code call}), a request it served ({@code serve}). An operation that took at least the
 * threshold ({@code [node] slow-op}) is kept in a ring of the last {@value #CAPACITY} and logged
 * at INFO, at most {@value #LOGS_PER_SECOND} lines a second (the rest are only kept). The
 * metrics endpoint serves the ring as JSON at {@code /slow}; {@code strata admin slow} gathers
 * every daemon's and joins the hops by trace id.
 */
public final class SlowOps {
    public static final Duration DEFAULT_THRESHOLD = Duration.ofMillis(200);
    /** A threshold no operation reaches: for short-lived commands, which serve no {@code /slow} and should not log. */
    public static final Duration NEVER = Duration.ofNanos(Long.MAX_VALUE);
    static final int CAPACITY = 512;
    static final int LOGS_PER_SECOND = 10;
    private static final Logger LOG = LoggerFactory.getLogger(SlowOps.class);

    /**
     * One slow hop. {@code what} names the operation and its peer ("ReadChunk to 127.0.0.1:9401"),
     * {@code detail} the outcome and anything the handler noted (time queued, on disk).
     */
    public record Op(long trace, Instant at, String process, String hop, String what, long nanos, String detail) {
        public double millis() {
            return nanos / 1e6;
        }

        @Override
        public String toString() {
            return String.format("slow %s: trace %s %s took %.1f ms%s", hop, Trace.format(trace), what, millis(),
                    detail.isEmpty() ? "" : " (" + detail + ")");
        }
    }

    private final String process;
    private final long thresholdNanos;
    private final StrataClock clock;
    private final ArrayDeque<Op> ring = new ArrayDeque<>();
    private long logWindowStart;
    private int loggedInWindow;
    private long unlogged;

    public SlowOps(String process, Duration threshold, StrataClock clock) {
        if (threshold.isNegative()) {
            throw new IllegalArgumentException("slow-op threshold must not be negative, got " + threshold);
        }
        this.process = process;
        this.thresholdNanos = threshold.toNanos();
        this.clock = clock;
    }

    public Duration threshold() {
        return Duration.ofNanos(thresholdNanos);
    }

    /** Whether an operation of {@code nanos} counts as slow (callers skip building its description otherwise). */
    public boolean isSlow(long nanos) {
        return nanos >= thresholdNanos;
    }

    /** Keeps the hop if it was slow. */
    public void record(long trace, String hop, String what, long nanos, String detail) {
        if (!isSlow(nanos)) {
            return;
        }
        Op op = new Op(trace, clock.now(), process, hop, what, nanos, detail == null ? "" : detail);
        boolean log;
        long skipped = 0;
        synchronized (this) {
            if (ring.size() == CAPACITY) {
                ring.removeFirst();
            }
            ring.addLast(op);
            long now = clock.nanoTime();
            if (now - logWindowStart >= TimeUnit.SECONDS.toNanos(1)) {
                logWindowStart = now;
                loggedInWindow = 0;
                skipped = unlogged;
                unlogged = 0;
            }
            log = loggedInWindow < LOGS_PER_SECOND;
            if (log) {
                loggedInWindow++;
            } else {
                unlogged++;
            }
        }
        if (skipped > 0) {
            LOG.info("{} more slow operations in the last second were kept but not logged (strata admin slow lists them)", skipped);
        }
        if (log) {
            LOG.info("{}", op);
        }
    }

    /** The kept operations, oldest first. */
    public synchronized List<Op> recent() {
        return new ArrayList<>(ring);
    }
}
