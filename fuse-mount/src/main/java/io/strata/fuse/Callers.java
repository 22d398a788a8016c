package io.strata.fuse;

import io.strata.protocol.meta.Caller;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The user a FUSE request comes from: uid and gid from the request, supplementary groups from
 * {@code /proc/<pid>/status} (FUSE does not carry them), remembered per pid for a second.
 */
final class Callers {
    private record Entry(Caller caller, long atNanos) {
    }

    private static final long TTL = 1_000_000_000L;
    private final ConcurrentHashMap<Long, Entry> byPid = new ConcurrentHashMap<>();

    Caller of(long uid, long gid, long pid) {
        if (uid == 0) {
            return new Caller(0, (int) gid, new int[0]);
        }
        long now = System.nanoTime();
        Entry e = byPid.get(pid);
        if (e != null && e.caller.uid() == uid && e.caller.gid() == gid && now - e.atNanos < TTL) {
            return e.caller;
        }
        Caller c = new Caller((int) uid, (int) gid, groups(pid));
        if (byPid.size() > 4096) {
            byPid.clear();
        }
        byPid.put(pid, new Entry(c, now));
        return c;
    }

    private static int[] groups(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith("Groups:")) {
                    String[] parts = line.substring(7).trim().split("\\s+");
                    int n = 0;
                    int[] out = new int[Math.min(parts.length, Caller.MAX_GROUPS)];
                    for (String p : parts) {
                        if (!p.isEmpty() && n < out.length) {
                            out[n++] = Integer.parseInt(p);
                        }
                    }
                    return java.util.Arrays.copyOf(out, n);
                }
            }
        } catch (IOException | RuntimeException e) {
            // the process is gone or /proc is unreadable: no supplementary groups
        }
        return new int[0];
    }
}
