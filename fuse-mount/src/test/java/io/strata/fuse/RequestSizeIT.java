package io.strata.fuse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.testing.Fuse;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * How big the kernel's requests to each mount are: {@code dd bs=1M} writes reach the libfuse2
 * mount as 128 KiB requests and the libfuse3 one as 1 MiB requests (from the mount's
 * {@code strata.fuse.request.bytes} summary), reads likewise, and the file reads back intact. Each libfuse is
 * skipped, with the reason printed, where it cannot mount.
 */
@Fuse
class RequestSizeIT {
    static final int MIB = 1 << 20;
    static final int FILE_MIB = 32;

    @ParameterizedTest
    @EnumSource(MountOptions.Libfuse.class)
    void ddWithOneMebibyteBlocksReachesTheMountInRequestsOfTheLibfusesMaximum(MountOptions.Libfuse libfuse, @TempDir Path dir)
            throws IOException {
        Optional<String> why = FuseMount.unavailable(libfuse);
        why.ifPresent(w -> System.err.println("[strata] RequestSizeIT " + libfuse.configName() + " skipped: " + w));
        assumeTrue(why.isEmpty(), () -> libfuse.configName() + " cannot mount here: " + why.orElse(""));
        try (MountedCluster c = MountedCluster.start(dir, 5, libfuse)) {
            Path local = dir.resolve("local.bin");
            Sh.run(dir, "dd", "if=/dev/urandom", "of=" + local, "bs=1M", "count=" + FILE_MIB, "status=none").ok();
            Path f = c.mnt.resolve("big.bin");
            Sh.run(dir, "dd", "if=" + local, "of=" + f, "bs=1M", "conv=fsync", "status=none").ok();
            DistributionSummary writes = summary(c.meters(), "write");
            System.out.printf("[strata] %s: %d write requests for %d MiB, largest %.0f bytes%n", libfuse.configName(), writes.count(),
                    FILE_MIB, writes.max());
            assertThat(writes.max()).as("largest write request").isEqualTo(libfuse.maxRequest());
            assertThat(writes.totalAmount()).isEqualTo((double) FILE_MIB * MIB);
            assertThat(writes.count()).as("write requests").isEqualTo((long) FILE_MIB * MIB / libfuse.maxRequest());

            assertThat(Sh.sha256(f)).isEqualTo(Sh.sha256(local));
            DistributionSummary reads = summary(c.meters(), "read");
            System.out.printf("[strata] %s: %d read requests, largest %.0f bytes%n", libfuse.configName(), reads.count(), reads.max());
            assertThat(reads.max()).as("largest read request (libfuse3: with the mount's 1 MiB readahead)").isEqualTo(libfuse.maxRequest());
        }
    }

    private static DistributionSummary summary(MeterRegistry meters, String op) {
        return meters.get("strata.fuse.request.bytes").tag("op", op).summary();
    }
}
