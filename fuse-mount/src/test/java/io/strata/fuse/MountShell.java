package io.strata.fuse;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** A mounted local cluster that stays up until killed (for poking at the mount by hand while developing); prints FUSE request counts on "stats" files. */
final class MountShell {
    private MountShell() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Files.createDirectories(dir);
        try (MountedCluster c = MountedCluster.start(dir, 1)) {
            System.out.println("MOUNTED " + c.mnt);
            Path trigger = dir.resolve("stats");
            while (true) {
                Thread.sleep(200);
                if (Files.exists(trigger)) {
                    Files.delete(trigger);
                    StringBuilder sb = new StringBuilder();
                    for (Meter m : c.meters().getMeters()) {
                        if (m instanceof Timer t && m.getId().getName().equals("strata.fuse.requests") && t.count() > 0) {
                            sb.append(m.getId().getTag("op")).append('/').append(m.getId().getTag("result")).append(' ').append(t.count())
                                    .append(" mean ").append((long) t.mean(TimeUnit.MICROSECONDS)).append("us\n");
                        }
                    }
                    Files.writeString(dir.resolve("stats.txt"), sb.toString());
                }
            }
        }
    }
}
