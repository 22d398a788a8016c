package io.strata.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.qos.QosShares;
import io.strata.core.tier.QosClass;
import org.junit.jupiter.api.Test;

class QosConfigTest {
    private static QosShares read(String toml) {
        ConfigNode root = ConfigNode.parse(toml, "test.toml");
        QosShares q = QosConfig.read(root.section("qos"));
        root.rejectUnknownKeys();
        return q;
    }

    @Test
    void aClassTableChangesOnlyWhatItNames() {
        QosShares q = read("""
                [qos]
                slots = 4
                background = { limit = "100MiB" }
                training-read = { reservation = "1GiB", weight = 20 }
                """);
        assertThat(q.enabled()).isTrue();
        assertThat(q.slots()).isEqualTo(4);
        assertThat(q.share(QosClass.BACKGROUND)).isEqualTo(new QosShares.Share(0, 1, 100L << 20));
        assertThat(q.share(QosClass.TRAINING_READ)).isEqualTo(new QosShares.Share(1L << 30, 20, 0));
        assertThat(q.share(QosClass.CHECKPOINT)).isEqualTo(QosShares.DEFAULTS.share(QosClass.CHECKPOINT));
        assertThat(read("").equals(QosShares.DEFAULTS)).isTrue();
        assertThat(read("[qos]\nenabled = false\n").enabled()).isFalse();
    }

    @Test
    void badValuesNameTheirKey() {
        assertThatThrownBy(() -> read("[qos]\nbackground = { weight = 0 }\n")).hasMessageContaining("qos.background.weight");
        assertThatThrownBy(() -> read("[qos]\ncheckpoint = { reservation = \"2GiB\", limit = \"1GiB\" }\n"))
                .hasMessageContaining("qos.checkpoint").hasMessageContaining("exceeds the limit");
        assertThatThrownBy(() -> read("[qos]\ntraining = { weight = 2 }\n")).hasMessageContaining("qos.training").hasMessageContaining("unknown key");
        assertThatThrownBy(() -> read("[qos]\nslots = 0\n")).hasMessageContaining("qos.slots");
    }
}
