package io.strata.hooks;

import java.util.ArrayDeque;

/**
 * The rate at which the agents fetch from L3 for all hints, as the estimates use it: bytes
 * completed over the last {@code window} of time spent staging. Idle time is not part of it
 * (the samples restart when staging resumes), and neither is the time before the first fetch
 * completes after a restart: the fetches then in flight were sent together, so counting from
 * their sending would price the pipeline's fill as if it recurred for every chunk (with a 5 s
 * window that made the first estimates of a fresh hint a quarter to a third too late).
 * Not thread-safe: the planner's thread owns it.
 */
final class StagingRate {
    private final long windowMillis;
    private final ArrayDeque<long[]> samples = new ArrayDeque<>();
    private boolean busy;

    StagingRate(long windowMillis) {
        this.windowMillis = windowMillis;
    }

    /** Staging stopped (nothing in flight): the next rate starts afresh. */
    void idle() {
        busy = false;
        samples.clear();
    }

    /** Staging is under way: fetches are in flight ({@code fetched}: bytes completed from L3 so far, all hints). */
    void busy(long now, long fetched) {
        if (!busy) {
            busy = true;
            samples.clear();
            samples.addLast(new long[] {-1, fetched}); // the total when staging resumed: no sample until it grows
            return;
        }
        sample(now, fetched);
    }

    /** A fetch from L3 completed at {@code now}; {@code fetched} is the new total. */
    void completed(long now, long fetched) {
        if (busy && samples.size() == 1 && samples.peekFirst()[0] < 0) {
            samples.clear(); // the first completion since staging resumed: the rate counts from here, bytes after it
            samples.addLast(new long[] {now, fetched});
        }
    }

    private void sample(long now, long fetched) {
        if (samples.isEmpty() || samples.peekFirst()[0] < 0) {
            return;
        }
        samples.addLast(new long[] {now, fetched});
        while (samples.size() > 2 && now - samples.peekFirst()[0] > windowMillis) {
            samples.removeFirst();
        }
    }

    /** Bytes per millisecond; 0 when there is no rate yet (less than 500 ms of samples, or nothing completed). */
    double perMilli() {
        if (samples.size() < 2) {
            return 0;
        }
        long[] first = samples.peekFirst();
        long[] last = samples.peekLast();
        long dt = last[0] - first[0];
        long db = last[1] - first[1];
        return dt < 500 || db <= 0 ? 0 : db / (double) dt;
    }
}
