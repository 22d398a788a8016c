package io.strata.fuse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class MountOptionsTest {
    private static MountOptions read(String toml) {
        return MountOptions.read(ConfigNode.parse(toml, "test.toml").section("mount"));
    }

    @Test
    void fuseDefaultsToLibfuse2AndReadsLibfuse3() {
        assertThat(read("[mount]\ndir = \"/mnt/s\"\n").fuse()).isEqualTo(MountOptions.Libfuse.LIBFUSE2);
        assertThat(read("[mount]\ndir = \"/mnt/s\"\nfuse = \"libfuse3\"\n").fuse()).isEqualTo(MountOptions.Libfuse.LIBFUSE3);
    }

    @Test
    void anUnknownLibfuseIsRefusedWithItsKeyPath() {
        assertThatThrownBy(() -> read("[mount]\ndir = \"/mnt/s\"\nfuse = \"fuse3\"\n")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("mount.fuse").hasMessageContaining("\"libfuse2\" or \"libfuse3\"").hasMessageContaining("fuse3");
    }

    @Test
    void eachLibfuseGetsItsOwnOptionsAndRequestSize() {
        MountOptions o = MountOptions.at(Path.of("/mnt/s")).withTimeouts(Duration.ZERO, Duration.ofSeconds(1));
        assertThat(String.join(" ", o.fuseArgs(Duration.ZERO, Duration.ofSeconds(1)))).contains("big_writes", "max_write=131072");
        String three = String.join(" ", o.withFuse(MountOptions.Libfuse.LIBFUSE3).fuseArgs(Duration.ZERO, Duration.ofSeconds(1)));
        // libfuse3 refuses big_writes, use_ino and hard_remove on its command line; max_write is set in init
        assertThat(three).contains("max_read=1048576", "entry_timeout=1.000").doesNotContain("big_writes", "use_ino", "max_write");
        assertThat(MountOptions.Libfuse.LIBFUSE3.maxRequest()).isEqualTo(1 << 20);
    }
}
