package io.strata.harness;

import java.util.function.Consumer;

/** How the harness's clusters come up and go down. */
final class Lifecycle {
    private Lifecycle() {
    }

    /**
     * Runs {@code start} on {@code cluster}, new and not started yet, and returns it. When start
     * fails, the cluster is closed (stopping what did start) and the failure rethrown, with what the
     * close threw attached as suppressed.
     */
    static <C extends AutoCloseable> C startOrClose(C cluster, Consumer<? super C> start) {
        try {
            start.accept(cluster);
            return cluster;
        } catch (RuntimeException | Error e) {
            try {
                cluster.close();
            } catch (Exception closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    /** Closes {@code c} and ignores what it throws: best effort, for the way down. */
    static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // best effort
        }
    }
}
