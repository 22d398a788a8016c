package io.strata.bench.peers;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** What the figures were measured on (cores, memory, kernel, JDK, file system), and the mount table. */
final class Machine {
    private Machine() {
    }

    static String describe(Path dir) {
        long memKb = 0;
        try {
            for (String l : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (l.startsWith("MemTotal:")) {
                    memKb = Long.parseLong(l.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | NumberFormatException e) {
            // unknown
        }
        String kernel = read("/proc/sys/kernel/osrelease");
        String fs = "?";
        try {
            var store = Files.getFileStore(dir);
            fs = store.name() + " (" + store.type() + ")";
        } catch (IOException e) {
            // unknown
        }
        return String.format(Locale.ROOT, "cores=%d memory=%.1f GiB kernel=%s jdk=%s, %s on %s",
                Runtime.getRuntime().availableProcessors(), memKb / 1048576.0, kernel, Runtime.version(), dir, fs);
    }

    /** Mount points at or below {@code dir} in this mount namespace. */
    static List<String> mountsUnder(Path dir) {
        List<String> out = new ArrayList<>();
        String prefix = dir.toAbsolutePath().normalize().toString();
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/mounts"))) {
                String[] f = l.split(" ");
                if (f.length > 1) {
                    String mp = f[1].replace("\\040", " ");
                    if (mp.equals(prefix) || mp.startsWith(prefix + "/")) {
                        out.add(mp);
                    }
                }
            }
        } catch (IOException e) {
            // no /proc: nothing to say
        }
        return out;
    }

    private static String read(String file) {
        try {
            return Files.readString(Path.of(file)).strip();
        } catch (IOException e) {
            return "?";
        }
    }
}
