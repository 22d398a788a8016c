package io.strata.l2.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.DataSize;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The {@code [l2]} table: the prefetch byte rate, its default, 0 for unlimited, and what is refused. */
class L2AgentConfigTest {
    static L2AgentConfig read(String extra) {
        ConfigNode root = ConfigNode.parse("[l2]\nnode-id = 11\nmgmtd = [\"127.0.0.1:9200\"]\n" + extra, "t");
        L2AgentConfig c = L2AgentConfig.read(root.section("l2"), Path.of("/data"));
        root.rejectUnknownKeys();
        return c;
    }

    @Test
    void thePrefetchByteRateDefaultsAndMayBeUnlimited() {
        assertThat(read("").prefetchBandwidth()).isEqualTo(L2AgentConfig.DEFAULT_PREFETCH_BANDWIDTH).isEqualTo(DataSize.ofMiB(256));
        assertThat(read("prefetch-bandwidth = \"1GiB\"").prefetchBandwidth()).isEqualTo(DataSize.ofGiB(1));
        assertThat(read("prefetch-bandwidth = 0").prefetchBandwidth()).isEqualTo(DataSize.ZERO);
    }

    @Test
    void aPrefetchByteRateTooSmallToMeanAnythingIsRefusedByName() {
        assertThatThrownBy(() -> read("prefetch-bandwidth = \"32KiB\"")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("l2.prefetch-bandwidth").hasMessageContaining("0 (unlimited) or at least 64KiB");
    }
}
