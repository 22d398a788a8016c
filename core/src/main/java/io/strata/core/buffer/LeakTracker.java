package io.strata.core.buffer;

import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records every buffer leak Netty's leak detector reports, so that tests can fail on one and a
 * daemon can count them ({@code strata.buffer.leaks}). Netty's detector is process-global by
 * design; this wraps it once, before the first buffer is allocated ({@link #install()} must run
 * before Netty's buffer classes initialise: daemons call it first thing in main, tests through
 * the leak-checking JUnit extension).
 */
public final class LeakTracker {
    private static final Logger LOG = LoggerFactory.getLogger(LeakTracker.class);
    private static final AtomicLong COUNT = new AtomicLong();
    private static final List<String> REPORTS = new ArrayList<>();
    private static boolean installed;

    private LeakTracker() {
    }

    /** Installs the recording detector factory; later calls do nothing. */
    public static synchronized void install() {
        if (installed) {
            return;
        }
        installed = true;
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new Factory());
    }

    /** Leaks reported since start. */
    public static long count() {
        return COUNT.get();
    }

    /**
     * Makes Netty report the leaks it can see now and returns every report since the last drain.
     * Netty notices a leak only when the lost buffer is garbage-collected and a later allocation
     * polls its queue, so this forces a few collections and allocations first (tests call it
     * after each test class).
     */
    public static List<String> flushAndDrain() throws InterruptedException {
        for (int round = 0; round < 3; round++) {
            System.gc();
            Thread.sleep(20);
            for (int i = 0; i < 64; i++) {
                io.netty.buffer.PooledByteBufAllocator.DEFAULT.buffer(16).release();
                io.netty.buffer.UnpooledByteBufAllocator.DEFAULT.buffer(16).release();
                io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(16).release();
            }
        }
        return drain();
    }

    /** The reports gathered since the last call, and forgets them. */
    public static List<String> drain() {
        synchronized (REPORTS) {
            List<String> out = new ArrayList<>(REPORTS);
            REPORTS.clear();
            return out;
        }
    }

    /**
     * A short form of {@code reports} for a failure message that a build log may cut to its last
     * hundred lines: per leak, where it was created and its three latest accesses, each as its
     * Strata frames only (or its first two frames when it has none), then {@code where} again at
     * the end. The full reports are in the log ({@code buffer leak:} lines).
     */
    public static String summary(String where, List<String> reports) {
        StringBuilder out = new StringBuilder();
        out.append(reports.size()).append(" buffer leak(s) in ").append(where).append(" (full records in the log):");
        for (String report : reports) {
            out.append("\n----");
            String section = null;
            List<String> frames = new ArrayList<>();
            int accesses = 0;
            for (String line : (report + "\n").split("\n")) {
                if (!line.startsWith("\t") && !line.isBlank()) {
                    appendSection(out, section, frames);
                    frames.clear();
                    section = line.strip();
                    if (section.matches("#\\d+:") && ++accesses > 3) {
                        section = null; // older accesses: skipped
                    }
                } else if (section != null && !line.isBlank()) {
                    frames.add(line.strip());
                }
            }
            appendSection(out, section, frames);
        }
        return out.append("\n(").append(reports.size()).append(" buffer leak(s) in ").append(where).append(')').toString();
    }

    private static void appendSection(StringBuilder out, String section, List<String> frames) {
        if (section == null) {
            return;
        }
        out.append('\n').append(section);
        List<String> ours = frames.stream().filter(f -> f.contains("io.strata.")).limit(6).toList();
        for (String f : ours.isEmpty() ? frames.stream().limit(2).toList() : ours) {
            out.append("\n\t").append(f);
        }
    }

    private static void record(String report) {
        COUNT.incrementAndGet();
        synchronized (REPORTS) {
            REPORTS.add(report);
        }
        LOG.error("buffer leak: {}", report);
    }

    private static final class Factory extends ResourceLeakDetectorFactory {
        @Override
        @SuppressWarnings("deprecation")
        public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval, long maxActive) {
            return new Recording<>(resource, samplingInterval);
        }
    }

    private static final class Recording<T> extends ResourceLeakDetector<T> {
        Recording(Class<T> resource, int samplingInterval) {
            super(resource, samplingInterval);
        }

        @Override
        protected void reportTracedLeak(String resourceType, String records) {
            record(resourceType + " released too late or never:" + records);
        }

        @Override
        protected void reportUntracedLeak(String resourceType) {
            record(resourceType + " leaked (enable paranoid leak detection for where)");
        }

        @Override
        protected boolean needReport() {
            return true;
        }
    }
}
