package io.strata.l1;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.DataSize;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class L1ConfigTest {
    private static L1Config parse(String toml) {
        ConfigNode root = ConfigNode.parse(toml, "test.toml");
        L1Config c = L1Config.read(root.section("l1"));
        root.rejectUnknownKeys();
        return c;
    }

    @Test
    void readsEveryKey() {
        L1Config c = parse("""
                [l1]
                name = "node-7"
                memory = "2GiB"
                block-size = "256KiB"
                sweep-interval = "500ms"
                small-miss = "block"
                [l1.nvme]
                dir = "/nvme/l1"
                capacity = "50GiB"
                min-free = "5GiB"
                fsync = false
                max-queued = "128MiB"
                index-map-size = "2GiB"
                read-on-caller = false
                [l1.write-back]
                buffer = "64MiB"
                small-write-max = "256KiB"
                flush-concurrency = 4
                retries = 7
                retry-backoff = "50ms"
                close-timeout = "10s"
                """);
        assertThat(c.name()).isEqualTo("node-7");
        assertThat(c.memory()).isEqualTo(DataSize.ofGiB(2));
        assertThat(c.blockSize()).isEqualTo(DataSize.ofKiB(256));
        assertThat(c.sweepInterval()).isEqualTo(Duration.ofMillis(500));
        assertThat(c.smallMiss()).isEqualTo(L1Config.SmallMiss.BLOCK);
        L1Config.Nvme n = c.nvme().orElseThrow();
        assertThat(n.dir()).isEqualTo(Path.of("/nvme/l1"));
        assertThat(n.capacity()).isEqualTo(DataSize.ofGiB(50));
        assertThat(n.minFree()).isEqualTo(DataSize.ofGiB(5));
        assertThat(n.fsync()).isFalse();
        assertThat(n.maxQueued()).isEqualTo(DataSize.ofMiB(128));
        assertThat(n.indexMapSize()).isEqualTo(DataSize.ofGiB(2));
        assertThat(n.readOnCaller()).isFalse();
        assertThat(c.writeBack()).isEqualTo(new L1Config.WriteBack(DataSize.ofMiB(64), DataSize.ofKiB(256), 4, 7,
                Duration.ofMillis(50), Duration.ofSeconds(10)));
    }

    @Test
    void defaultsWithoutNvme() {
        L1Config c = parse("[l1]\n");
        assertThat(c.nvme()).isEmpty();
        assertThat(c.blockSize()).isEqualTo(DataSize.ofMiB(1));
        assertThat(c.memory()).isEqualTo(DataSize.ofGiB(1));
        assertThat(c.writeBack()).isEqualTo(L1Config.WriteBack.DEFAULTS);
        assertThat(c.smallMiss()).isEqualTo(L1Config.SmallMiss.RANGE);
    }

    @Test
    void badValuesNameTheirKey() {
        assertThatThrownBy(() -> parse("[l1]\nsmall-miss = \"page\"\n")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("\"range\" or \"block\"").extracting(e -> ((ConfigException) e).key()).isEqualTo("l1.small-miss");
        assertThatThrownBy(() -> parse("[l1]\nblock-size = \"3KiB\"\n")).isInstanceOf(ConfigException.class)
                .extracting(e -> ((ConfigException) e).key()).isEqualTo("l1.block-size");
        assertThatThrownBy(() -> parse("[l1]\nblock-size = \"96KiB\"\n")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("power of two").extracting(e -> ((ConfigException) e).key()).isEqualTo("l1.block-size");
        assertThatThrownBy(() -> parse("[l1.nvme]\ncapacity = \"1GiB\"\n")).isInstanceOf(ConfigException.class)
                .extracting(e -> ((ConfigException) e).key()).isEqualTo("l1.nvme.dir");
        assertThatThrownBy(() -> parse("[l1.nvme]\ndir = \"/x\"\ncapacity = \"4KiB\"\n")).isInstanceOf(ConfigException.class)
                .extracting(e -> ((ConfigException) e).key()).isEqualTo("l1.nvme.capacity");
        assertThatThrownBy(() -> parse("[l1.write-back]\nbuffer = \"1MiB\"\nsmall-write-max = \"2MiB\"\n"))
                .isInstanceOf(ConfigException.class).extracting(e -> ((ConfigException) e).key()).isEqualTo("l1.write-back.small-write-max");
        assertThatThrownBy(() -> parse("[l1]\nmemroy = \"1GiB\"\n")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("did you mean l1.memory");
        assertThatThrownBy(() -> parse("[l1]\nmemory = \"512KiB\"\n")).isInstanceOf(ConfigException.class)
                .extracting(e -> ((ConfigException) e).key()).isEqualTo("l1.memory");
    }
}
