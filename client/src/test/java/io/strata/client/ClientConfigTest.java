package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.DataSize;
import io.strata.core.tier.QosClass;
import io.strata.l3.ReadPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ClientConfigTest {
    static final String ROUTING = """
            [routing]
            version = 3
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
            chains = [1]
            """;

    static ClientConfig parse(String toml) {
        ConfigNode root = ConfigNode.parse(toml, "test.toml");
        ClientConfig c = ClientConfig.read(root);
        root.rejectUnknownKeys();
        return c;
    }

    @Test
    void readsEveryKey() {
        ClientConfig c = parse("""
                [client]
                name = "loader-7"
                meta = ["127.0.0.1:9300", "10.0.0.2:9300"]
                io-timeout = "5s"
                meta-timeout = "7s"
                attempt-timeout = "500ms"
                read-policy = "round-robin"
                readahead = "4MiB"
                write-buffer = "8MiB"
                write-buffer-total = "64MiB"
                dentry-ttl = "0s"
                job = "train-42"
                job-qos = "training-read"
                [client.in-flight]
                checkpoint = "8MiB"
                training-read = "1GiB"
                background = "0"
                [l1]
                memory = "64MiB"
                """ + ROUTING);
        assertThat(c.name()).isEqualTo("loader-7");
        assertThat(c.meta()).hasSize(2);
        assertThat(c.staticRouting().orElseThrow().version()).isEqualTo(3);
        assertThat(c.ioTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(c.attemptTimeout()).isEqualTo(Duration.ofMillis(500));
        assertThat(c.readPolicy()).isEqualTo(ReadPolicy.ROUND_ROBIN);
        assertThat(c.readahead()).isEqualTo(DataSize.ofMiB(4));
        assertThat(c.writeBuffer()).isEqualTo(DataSize.ofMiB(8));
        assertThat(c.dentryTtl()).isZero();
        assertThat(c.l1().orElseThrow().memory()).isEqualTo(DataSize.ofMiB(64));
        assertThat(c.job()).contains("train-42");
        assertThat(c.jobQos()).contains(QosClass.TRAINING_READ);
        assertThat(c.inFlight()).containsEntry(QosClass.CHECKPOINT, DataSize.ofMiB(8).bytes())
                .containsEntry(QosClass.TRAINING_READ, DataSize.ofGiB(1).bytes())
                .containsEntry(QosClass.BACKGROUND, 0L)
                .containsEntry(QosClass.PREFETCH, DataSize.ofMiB(16).bytes());
    }

    @Test
    void defaultsNeedOnlyWhereMetaAndChunksAre() {
        ClientConfig c = parse("[client]\nmeta = [\"127.0.0.1:9300\"]\n" + ROUTING);
        assertThat(c.ioTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(c.readahead()).isEqualTo(DataSize.ofMiB(16));
        assertThat(c.l1()).isEmpty();
        assertThat(c.inFlight()).containsEntry(QosClass.CHECKPOINT, DataSize.ofMiB(32).bytes())
                .containsEntry(QosClass.TRAINING_READ, 0L);
        ClientConfig m = parse("[client]\nmgmtd = [\"127.0.0.1:9200\"]\n");
        assertThat(m.meta()).isEmpty();
        assertThat(m.mgmtd()).hasSize(1);
    }

    @Test
    void badValuesNameTheirKey() {
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:9300\"]\n"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.mgmtd");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"nope\"]\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.meta[0]");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:1\"]\nio-timeout = \"-1s\"\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.io-timeout");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:1\"]\nwrite-buffer = \"8MiB\"\nwrite-buffer-total = \"1MiB\"\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.write-buffer-total");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:1\"]\nread-policy = \"closest\"\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.read-policy");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:1\"]\nreadahed = \"1MiB\"\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.readahed");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:1\"]\n[client.in-flight]\ncheckpoint = \"-1MiB\"\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.in-flight.checkpoint");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:1\"]\n[client.in-flight]\nbulk = \"1MiB\"\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.in-flight.bulk");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:1\"]\njob = \"a job\"\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.job");
        assertThatThrownBy(() -> parse("[client]\nmeta = [\"127.0.0.1:1\"]\njob-qos = \"urgent\"\n" + ROUTING))
                .isInstanceOf(ConfigException.class).hasMessageContaining("client.job-qos").hasMessageContaining("unknown qos");
    }
}
