package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata cache} as a user meets it away from a mount: help, and one clear line with exit 1
 * for a PATH that is not on a Strata mount (the cache itself is tested on a real mount by
 * fuse-mount's CacheXattrsIT).
 */
class CacheCommandTest {
    @TempDir
    Path dir;

    @Test
    void helpExplainsStatAndDrop() {
        CliTest.Run r = CliTest.strata("cache", "--help");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("Usage: strata cache").contains("stat").contains("drop").contains("user.strata.cache");
        CliTest.Run drop = CliTest.strata("cache", "drop", "--help");
        assertThat(drop.code()).isZero();
        assertThat(drop.out()).contains("a drop never").contains("[PATH]").contains("--json");
    }

    @Test
    void aPathNotOnAStrataMountIsOneLineAndExitOne() throws IOException {
        Path f = Files.writeString(dir.resolve("local.txt"), "x");
        for (String sub : new String[] {"stat", "drop"}) {
            CliTest.Run r = CliTest.strata("cache", sub, f.toString());
            assertThat(r.code()).isEqualTo(1);
            assertThat(r.err().strip()).startsWith("strata: ").contains("is not on a Strata mount").doesNotContain("\n");
            assertThat(r.out()).isEmpty();
        }
        CliTest.Run missing = CliTest.strata("cache", "stat", dir.resolve("nope").toString());
        assertThat(missing.code()).isEqualTo(1);
        assertThat(missing.err().strip()).isEqualTo("strata: " + dir.resolve("nope") + ": no such file or directory");
    }

    @Test
    void withoutPathAndAwayFromAnyMountItSaysWhereItLooked() {
        CacheCommand.Mounts.Entry here = CacheCommand.Mounts.containing(Path.of("").toAbsolutePath());
        Assumptions.assumeFalse(here != null && here.fstype().equals(CacheCommand.FSTYPE), "the build runs inside a Strata mount");
        CliTest.Run r = CliTest.strata("cache", "stat", "--data", dir.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("strata: the current directory").contains("is not on a Strata mount")
                .contains(dir.resolve("mnt").toString()).contains("give a PATH");
    }
}
