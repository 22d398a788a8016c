package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.DataSize;
import io.strata.core.tier.CacheControl;
import io.strata.core.tier.TierKind;
import io.strata.l1.L1Config;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client's tier stack is composed from its config by one builder, and each file enters it
 * where its directory's policy says: with an L1 configured, files under {@code tiers.l1=on}
 * are cached by it, files under {@code tiers.l1=off} go straight to the layer below (L2, which
 * passes files that are not staged on to L3). The cache is reached as a facet of the stack, never
 * by its class.
 */
class TierStackTest {
    @Test
    void filesEnterTheStackWhereTheirPolicySaysAndTheCacheIsAFacet(@TempDir Path dir) {
        try (TestCluster c = TestCluster.start(dir, 73)) {
            StrataFileSystem plain = c.client("plain");
            assertThat(plain.facet(CacheControl.class)).as("no L1 configured").isEmpty();
            assertThat(kinds(plain)).as("L2 is always in the stack: it finds its agents in routing").containsExactly(TierKind.L2, TierKind.L3);

            StrataFileSystem cached = c.client("cached", cfg -> cfg.withL1(L1Config.memoryOnly(DataSize.ofMiB(64))));
            assertThat(kinds(cached)).containsExactly(TierKind.L1, TierKind.L2, TierKind.L3);
            CacheControl l1 = cached.facet(CacheControl.class).orElseThrow();

            cached.mkdirs("/on");
            cached.mkdirs("/off");
            cached.setPolicy("/off", "tiers.l1=off");
            byte[] data = FileSystemTest.random(3 << 20, 5);
            FileSystemTest.writeFile(cached, "/on/f", data);
            FileSystemTest.writeFile(cached, "/off/f", data);
            assertThat(FileSystemTest.readAll(cached, "/on/f")).isEqualTo(data);
            assertThat(FileSystemTest.readAll(cached, "/off/f")).isEqualTo(data);

            assertThat((long) l1.report(cached.stat("/on/f").inode()).get("memory.blocks")).as("blocks of a file under tiers.l1=on")
                    .isPositive();
            assertThat((long) l1.report(cached.stat("/off/f").inode()).get("memory.blocks")).as("blocks of a file under tiers.l1=off")
                    .isZero();
        }
    }

    private static List<TierKind> kinds(StrataFileSystem fs) {
        return fs.core().tiers().tiers().stream().map(t -> t.kind()).toList();
    }
}
