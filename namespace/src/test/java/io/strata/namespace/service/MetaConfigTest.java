package io.strata.namespace.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class MetaConfigTest {
    static MetaConfig parse(String toml) {
        ConfigNode root = ConfigNode.parse(toml, "test.toml");
        MetaConfig c = MetaConfig.read(root);
        root.rejectUnknownKeys();
        return c;
    }

    @Test
    void defaultsAndChainTablesAreRead() {
        MetaConfig c = parse("""
                [node]
                data = "/var/lib/strata/m1"
                [[meta.chain-tables]]
                id = 1
                version = 2
                replicas = 2
                chains = [5, 6]
                """);
        assertThat(c.backend()).isEqualTo("lmdb");
        assertThat(c.lmdbPath()).isEqualTo(Path.of("/var/lib/strata/m1/meta"));
        assertThat(c.lmdbSync()).isTrue();
        assertThat(c.options().workers()).isEqualTo(8);
        assertThat(c.options().gcBusyChunksPerSecond()).isEqualTo(5);
        assertThat(c.options().gcBusyMaxWait()).isEqualTo(java.time.Duration.ofSeconds(60));
        assertThat(c.chainTables().latest(2)).hasValueSatisfying(t -> assertThat(t.version()).isEqualTo(2));
    }

    @Test
    void badValuesNameTheirKey() {
        assertThatThrownBy(() -> parse("[meta]\nbackend = \"redis\"\n[node]\ndata = \"/x\"")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("meta.backend");
        assertThatThrownBy(() -> parse("[meta]\nbackend = \"fdb\"")).hasMessageContaining("meta.fdb.cluster-file");
        assertThatThrownBy(() -> parse("[meta]\nworkers = 0\n[node]\ndata = \"/x\"")).hasMessageContaining("meta.workers");
        assertThatThrownBy(() -> parse("[meta]\n[node]")).hasMessageContaining("node.data");
        assertThatThrownBy(() -> parse("[node]\ndata = \"/x\"\n[[meta.chain-tables]]\nid = 1\nreplicas = 7\nchains = [1]"))
                .hasMessageContaining("meta.chain-tables[0]");
        assertThatThrownBy(() -> parse("[node]\ndata = \"/x\"\n[meta]\ngc-intervall = \"1s\"")).hasMessageContaining("meta.gc-intervall");
        assertThat(parse("[meta]\nbackend = \"fdb\"\n[meta.fdb]\ncluster-file = \"/etc/fdb.cluster\"").fdbPrefix()).isEqualTo("strata/");
        assertThatThrownBy(() -> parse("[node]\ndata = \"/x\"\n[meta]\ngc-chunks-per-second = 100\ngc-busy-chunks-per-second = 500"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("meta.gc-busy-chunks-per-second")
                .hasMessageContaining("above gc-chunks-per-second (100)");
        assertThatThrownBy(() -> parse("[node]\ndata = \"/x\"\n[meta]\ngc-busy-max-wait = \"-1s\""))
                .hasMessageContaining("meta.gc-busy-max-wait");
    }
}
