package io.strata.fuse;

import java.nio.file.Path;

/**
 * The libfuse the FUSE ITs mount through: {@code -Dstrata.test.fuse=libfuse3} runs every one of
 * them on the libfuse3 mount (default libfuse2, the mount's default).
 */
final class FuseUnderTest {
    private FuseUnderTest() {
    }

    static MountOptions.Libfuse libfuse() {
        return MountOptions.Libfuse.parse("-Dstrata.test.fuse", System.getProperty("strata.test.fuse", "libfuse2"));
    }

    /** {@link MountOptions#at} on the libfuse under test. */
    static MountOptions at(Path dir) {
        return MountOptions.at(dir).withFuse(libfuse());
    }
}
