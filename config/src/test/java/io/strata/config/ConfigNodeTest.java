package io.strata.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.DataSize;
import io.strata.core.rpc.RpcOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigNodeTest {
    @Test
    void readsTypedValuesWithDefaults(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("node.toml");
        Files.writeString(f, """
                [node]
                name = "storage-1"
                listen = "127.0.0.1:9100"
                data = "/var/lib/strata/s1"
                [rpc]
                max-in-flight = 64
                default-timeout = "5s"
                max-payload = "72MiB"
                max-connections = 100
                idle-timeout = "2m"
                read-timeout = "5s"
                """);
        ConfigNode root = ConfigNode.load(f);
        NodeConfig n = NodeConfig.read(root, "x");
        root.rejectUnknownKeys();
        assertThat(n.name()).isEqualTo("storage-1");
        assertThat(n.listen().getPort()).isEqualTo(9100);
        assertThat(n.data()).isEqualTo(Path.of("/var/lib/strata/s1"));
        assertThat(n.rpc().maxInFlight()).isEqualTo(64);
        assertThat(n.rpc().defaultTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(n.rpc().maxPayload()).isEqualTo(DataSize.ofMiB(72));
        assertThat(n.rpc().maxQueued()).isEqualTo(RpcOptions.DEFAULTS.maxQueued());
        assertThat(n.rpc().maxConnections()).isEqualTo(100);
        assertThat(n.rpc().idleTimeout()).isEqualTo(Duration.ofMinutes(2));
        assertThat(n.rpc().readTimeout()).isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void badValuesNameTheFullKeyPathAndTheValue() {
        assertThatThrownBy(() -> NodeConfig.read(ConfigNode.parse("[rpc]\nmax-in-flight = \"many\"", "t"), "x"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("rpc.max-in-flight: expected an integer, got string \"many\"");
        assertThatThrownBy(() -> NodeConfig.read(ConfigNode.parse("[rpc]\ndefault-timeout = 30", "t"), "x"))
                .hasMessageContaining("rpc.default-timeout: expected a duration with a unit");
        assertThatThrownBy(() -> NodeConfig.read(ConfigNode.parse("[rpc]\nmax-payload = \"4GiB\"", "t"), "x"))
                .hasMessageContaining("rpc.max-payload: must be between 64KiB and 1GiB, got 4GiB");
        assertThatThrownBy(() -> NodeConfig.read(ConfigNode.parse("[node]\ntransport = \"carrier-pigeon\"", "t"), "x"))
                .hasMessageContaining("node.transport: unknown transport 'carrier-pigeon'");
        assertThatThrownBy(() -> NodeConfig.read(ConfigNode.parse("[node]\nlisten = \"nohost\"", "t"), "x"))
                .hasMessageContaining("node.listen: expected host:port");
    }

    @Test
    void unknownKeysAreErrorsWithASuggestion() {
        ConfigNode root = ConfigNode.parse("[rpc]\nmax-inflight = 3\n", "t");
        NodeConfig.read(root, "x");
        assertThatThrownBy(root::rejectUnknownKeys)
                .hasMessage("rpc.max-inflight: unknown key (did you mean rpc.max-in-flight?)");
    }

    @Test
    void brokenTomlAndMissingFilesAreClearErrors(@TempDir Path dir) {
        assertThatThrownBy(() -> ConfigNode.parse("[rpc\nx = 1", "bad.toml"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("bad.toml is not valid TOML at line");
        assertThatThrownBy(() -> ConfigNode.load(dir.resolve("missing.toml")))
                .hasMessageContaining("does not exist");
    }

    @Test
    void arraysOfTablesCarryTheirIndexInErrors() {
        ConfigNode root = ConfigNode.parse("""
                [[targets]]
                path = "/a"
                [[targets]]
                path = 7
                """, "t");
        var targets = root.sections("targets");
        assertThat(targets.get(0).string("path", null)).isEqualTo("/a");
        assertThatThrownBy(() -> targets.get(1).string("path", null)).hasMessageStartingWith("targets[1].path: expected a string");
    }

    @Test
    void durationsReadAsOperatorsWriteThem() {
        assertThat(Durations.parse("250ms")).isEqualTo(Duration.ofMillis(250));
        assertThat(Durations.parse("5m")).isEqualTo(Duration.ofMinutes(5));
        assertThat(Durations.parse("PT2H")).isEqualTo(Duration.ofHours(2));
        assertThat(Durations.format(Duration.ofSeconds(90))).isEqualTo("90s");
        assertThat(Durations.format(Duration.ofHours(48))).isEqualTo("2d");
        assertThatThrownBy(() -> Durations.parse("soon")).hasMessageContaining("'soon'");
    }
}
