package io.strata.cli;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The CPU time a local cluster's daemons used, by kind ({@code mount}, {@code l2}, {@code storage},
 * ...: a member's name without its number), for benchmarks that say what a phase cost.
 */
final class DaemonCpu {
    private DaemonCpu() {
    }

    /** CPU time so far of the daemons of the cluster in {@code data}, in nanoseconds, summed per kind of {@code kinds}. */
    static Map<String, Long> read(Path data, List<String> kinds) {
        Map<String, Long> m = new LinkedHashMap<>();
        for (String kind : kinds) {
            m.put(kind, 0L);
        }
        try {
            for (ClusterDir.Member member : new ClusterDir(data).members()) {
                String kind = member.name().replaceFirst("-\\d+$", "");
                long ns = ProcessHandle.of(member.pid()).flatMap(h -> h.info().totalCpuDuration()).map(Duration::toNanos).orElse(0L);
                m.merge(kind, ns, Long::sum);
            }
        } catch (IOException | RuntimeException e) {
            // unknown: the figures say 0
        }
        return m;
    }

    /** "mount 1.2, l2 3.4, storage 0.5": CPU seconds each kind used between two {@link #read}s. */
    static String used(List<String> kinds, Map<String, Long> before, Map<String, Long> after) {
        StringBuilder sb = new StringBuilder();
        for (String kind : kinds) {
            long d = after.getOrDefault(kind, 0L) - before.getOrDefault(kind, 0L);
            sb.append(sb.isEmpty() ? "" : ", ").append(kind).append(' ').append(String.format(Locale.ROOT, "%.1f", d / 1e9));
        }
        return sb.toString();
    }
}
