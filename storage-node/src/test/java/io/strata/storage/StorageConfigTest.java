package io.strata.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.TargetId;
import java.io.IOException;
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

    /** Writes {@code toml} to {@code dir/name} and loads it as a storage daemon's config file. */
    private StorageDaemonConfig load(String name, String toml) throws IOException {
        Path f = dir.resolve(name);
        Files.writeString(f, toml);
        return StorageDaemonConfig.load(f);
    }

    @Test
    void readsAWholeDaemonConfig() throws Exception {
        StorageDaemonConfig c = load("s.toml", """
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

    @Test
    void scrubSettingsAreReadAndCheckedWithTheirKey() {
        StorageConfig c = StorageConfig.read(ConfigNode.parse(
                "[s]\nnode-id = 1\npipeline = false\n[s.scrub]\nenabled = false\ninterval = \"12h\"\nrate = \"8MiB\"\n[[s.targets]]\nid = 5\n", "t")
                .section("s"), dir);
        assertThat(c.pipeline()).isFalse();
        assertThat(c.scrub()).isEqualTo(new ScrubOptions(false, Duration.ofHours(12), io.strata.core.DataSize.ofMiB(8)));
        assertThat(StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\n[[s.targets]]\nid = 5\n", "t").section("s"), dir).scrub())
                .as("defaults").isEqualTo(ScrubOptions.DEFAULTS);
        assertThat(StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\n[[s.targets]]\nid = 5\n", "t").section("s"), dir).pipeline())
                .as("pipelined by default").isTrue();
        assertThatThrownBy(() -> StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\n[s.scrub]\nrate = \"1KiB\"\n[[s.targets]]\nid = 5\n", "t")
                .section("s"), dir)).isInstanceOf(ConfigException.class).hasMessageContaining("s.scrub.rate");
        assertThatThrownBy(() -> StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\n[s.scrub]\ninterval = \"10ms\"\n[[s.targets]]\nid = 5\n", "t")
                .section("s"), dir)).isInstanceOf(ConfigException.class).hasMessageContaining("s.scrub.interval");
    }

    @Test
    void aManagedNodeNamesItsClusterManagerInsteadOfARoutingTable() throws Exception {
        StorageDaemonConfig c = load("m.toml", """
                [node]
                data = "%s"
                [storage]
                node-id = 4
                mgmtd = ["127.0.0.1:9200", "127.0.0.1:9201", "127.0.0.1:9202"]
                advertise = "10.1.2.3:9100"
                labels = { host = "h4", rack = "r2" }
                resync-bandwidth = "64MiB"
                failed-after-io-errors = 5
                [[storage.targets]]
                id = 401
                """.formatted(dir.resolve("data")));
        assertThat(c.storage().managed()).isTrue();
        assertThat(c.staticRouting()).isEmpty();
        assertThat(c.storage().mgmtd()).hasSize(3);
        assertThat(c.storage().mgmtd().get(1).getPort()).isEqualTo(9201);
        assertThat(c.storage().advertise().getHostString()).isEqualTo("10.1.2.3");
        assertThat(c.storage().labels()).containsEntry("rack", "r2").containsEntry("host", "h4");
        assertThat(c.storage().resyncBandwidth().bytes()).isEqualTo(64L << 20);
        assertThat(c.storage().ioErrorLimit()).isEqualTo(5);
    }

    @Test
    void routingComesFromExactlyOnePlace() throws Exception {
        String base = """
                [node]
                data = "%s"
                [storage]
                node-id = 1
                %s
                [[storage.targets]]
                id = 101
                """;
        assertThatThrownBy(() -> load("n.toml", base.formatted(dir, ""))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("storage.mgmtd");
        assertThatThrownBy(() -> load("b.toml", base.formatted(dir, "mgmtd = [\"127.0.0.1:9200\"]") + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("routing");
        assertThatThrownBy(() -> load("e.toml", base.formatted(dir, "mgmtd = []"))).hasMessageContaining("storage.mgmtd");
        assertThatThrownBy(() -> load("x.toml", base.formatted(dir, "mgmtd = [\"nowhere\"]"))).hasMessageContaining("storage.mgmtd[0]");
        assertThatThrownBy(() -> load("s.toml", base.formatted(dir, "mgmtd = [\"127.0.0.1:9200\"]\nresync-bandwidth = \"1KiB\"")))
                .hasMessageContaining("storage.resync-bandwidth");
    }

    @Test
    void aResyncBudgetIsSharedByTheSyncingTargetsAndNeverRaisesANodesOwnRate() {
        StorageConfig none = StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\n[[s.targets]]\nid = 5\n", "t").section("s"), dir);
        assertThat(none.resyncRate(1, 10)).as("no budget: the node's own resync-bandwidth").isEqualTo(256L << 20);
        StorageConfig c = StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\nresync-budget = \"1GiB\"\n[[s.targets]]\nid = 5\n", "t")
                .section("s"), dir);
        assertThat(c.resyncRate(1, 8)).as("one of 8 syncing targets").isEqualTo(128L << 20);
        assertThat(c.resyncRate(2, 8)).isEqualTo(256L << 20);
        assertThat(c.resyncRate(3, 4)).as("capped by resync-bandwidth").isEqualTo(256L << 20);
        assertThat(c.resyncRate(0, 0)).as("nothing syncing").isEqualTo(256L << 20);
        assertThatThrownBy(() -> StorageConfig.read(ConfigNode.parse("[s]\nnode-id = 1\nresync-budget = \"1KiB\"\n[[s.targets]]\nid = 5\n",
                "t").section("s"), dir)).isInstanceOf(ConfigException.class).hasMessageContaining("storage.resync-budget")
                .hasMessageContaining("0 (none) or at least 64KiB");
    }
}
