package io.strata.bench.fs;

import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One updating line on stderr per running job: a bar of the work done (bytes or operations, or
 * time for timed jobs) and the rate so far, redrawn a few times a second and finished with
 * the final figure. Silent in {@code --json} mode; on a stream that is not a terminal only the
 * final line is written.
 */
final class Progress implements AutoCloseable {
    private static final int WIDTH = 30;
    private final PrintStream err;
    private final boolean live;
    private final String label;
    private final long total;
    private final boolean timed;
    private final long startNanos = System.nanoTime();
    private final long durationNanos;
    final AtomicLong done = new AtomicLong();
    final AtomicLong bytes = new AtomicLong();
    private final Thread ticker;
    private volatile boolean closed;

    /**
     * A job of {@code total} units ({@code timedNanos > 0}: a timed job whose bar follows the
     * clock). {@code err} null: silent.
     */
    Progress(PrintStream err, boolean live, String label, long total, long timedNanos) {
        this.err = err;
        this.live = live && err != null;
        this.label = label;
        this.total = Math.max(1, total);
        this.timed = timedNanos > 0;
        this.durationNanos = timedNanos;
        if (this.live) {
            ticker = new Thread(this::tick, "bench-progress");
            ticker.setDaemon(true);
            ticker.start();
        } else {
            ticker = null;
        }
    }

    void add(long units, long nbytes) {
        done.addAndGet(units);
        bytes.addAndGet(nbytes);
    }

    private void tick() {
        while (!closed) {
            draw(false);
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private synchronized void draw(boolean last) {
        if (err == null) {
            return;
        }
        long el = System.nanoTime() - startNanos;
        double frac = last ? 1 : timed ? Math.min(1, (double) el / durationNanos) : Math.min(1, (double) done.get() / total);
        int filled = (int) Math.round(frac * WIDTH);
        double secs = Math.max(1e-9, el / 1e9);
        String line = String.format(Locale.ROOT, "  %-28s [%s%s] %3.0f%%  %9.1f MB/s  %9.0f op/s  %5.1fs", label,
                "#".repeat(filled), ".".repeat(WIDTH - filled), frac * 100, bytes.get() / secs / 1e6, done.get() / secs, secs);
        if (live) {
            err.print("\r" + line + (last ? "\n" : ""));
        } else if (last) {
            err.println(line);
        }
        err.flush();
    }

    @Override
    public void close() {
        closed = true;
        if (ticker != null) {
            ticker.interrupt();
            try {
                ticker.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        draw(true);
    }
}
