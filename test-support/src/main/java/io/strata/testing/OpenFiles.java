package io.strata.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** What this process holds open, for tests that check a component closes its files. */
public final class OpenFiles {
    private OpenFiles() {
    }

    /** Open descriptors of this process that name a file under {@code dir} (from /proc/self/fd). */
    public static long under(Path dir) throws IOException {
        Path real = dir.toRealPath();
        long n = 0;
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    if (Files.readSymbolicLink(fd).startsWith(real)) {
                        n++;
                    }
                } catch (IOException gone) {
                    // closed while we looked
                }
            }
        }
        return n;
    }
}
