package io.strata.l3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.TargetId;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StorageConfigTest {
    @TempDir
    Path dir;

    static final String ROUTING = """
            [routing]
            version = 1
            [[routing.nodes]]
            id = 1
            address = "127.0.0.1:9101"
            [[routing.targets]]
            id = 101
            node = 1
            [[routing.chains]]
            id = 1
            targets = [101]
            [[routing.tables]]
            id = 1
            version = 1
            chains = [1]
            """;

    @Test
    void readsAWholeDaemonConfig() throws Exception {
        Path f = dir.resolve("s.toml");
        Files.writeString(f, """
                [node]
                name = "storage-1"
                listen = "127.0.0.1:0"
                data = "%s"
                [storage]
                node-id = 1
                forward-timeout = "750ms"
                verify-reads = false
                [[storage.targets]]
                id = 101
                """.formatted(dir.resolve("data")) + ROUTING);
        StorageDaemonConfig c = StorageDaemonConfig.load(f);
        assertThat(c.storage().nodeId().value()).isEqualTo(1);
        assertThat(c.storage().forwardTimeout()).isEqualTo(Duration.ofMillis(750));
        assertThat(c.storage().engine().verifyReads()).isFalse();
        assertThat(c.storage().targets()).containsExactly(new StorageConfig.Target(TargetId.of(101), dir.resolve("data").resolve("target-101")));
        assertThat(c.routing().current().chain(io.strata.core.ChainId.of(1)).targets()).containsExactly(TargetId.of(101));
    }

    @Test
    void badValuesNameTheirKey() {
        assertThatThrownBy(() -> StorageConfig.read(ConfigNode.parse("[[targets]]\nid = 1\n", "t").section("x"), dir))
                .isInstanceOf(ConfigException.class).hasMessageContaining("node-id");
        assertThatThrownBy(() -> StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\n", "t").section("s"), dir))
                .hasMessageContaining("s.targets");
        assertThatThrownBy(() -> StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\n[[s.targets]]\nid = 5\n[[s.targets]]\nid = 5\n", "t")
                .section("s"), dir)).hasMessageContaining("s.targets[1].id");
        assertThatThrownBy(() -> StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\nforward-timeout = \"1ms\"\n[[s.targets]]\nid = 5\n", "t")
                .section("s"), dir)).hasMessageContaining("s.forward-timeout");
        ConfigNode typo = ConfigNode.parse("[s]\nnode-id = 1\nverify-read = true\n[[s.targets]]\nid = 5\n", "t");
        StorageConfig.read(typo.section("s"), dir);
        assertThatThrownBy(typo::rejectUnknownKeys).hasMessageContaining("s.verify-read");
    }
}
