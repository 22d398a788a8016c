package io.strata.cli;

import java.io.PrintStream;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** Prints "PREFIXwhat: N s<more>" every ten seconds until closed: progress of a long benchmark phase. */
final class ProgressTicker implements AutoCloseable {
    private final Thread thread;

    ProgressTicker(PrintStream log, String prefix, String what, Supplier<String> more) {
        long t0 = System.nanoTime();
        thread = new Thread(() -> {
            try {
                while (true) {
                    TimeUnit.SECONDS.sleep(10);
                    log.printf("%s%s: %.0f s%s%n", prefix, what, (System.nanoTime() - t0) / 1e9, more.get());
                }
            } catch (InterruptedException e) {
                // the phase is over
            }
        }, "bench-progress");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public void close() throws InterruptedException {
        thread.interrupt();
        thread.join();
    }
}
