package io.strata.l2.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.DataSize;
import io.strata.core.qos.QosShares;
import io.strata.core.tier.QosClass;
import io.strata.placement.NodeAgent;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The {@code [l2]} table: the prefetch byte rate, its default, 0 for unlimited, the disk's QoS shares, and what is refused. */
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

    @Test
    void theDisksQosSharesDefaultToAStorageTargetsWithAReadThreadPerSlot() {
        QosShares q = read("").qos();
        assertThat(q.enabled()).isTrue();
        assertThat(q.slots()).isEqualTo(L2Agent.READ_THREADS);
        assertThat(q.share(QosClass.BACKGROUND)).isEqualTo(QosShares.DEFAULTS.share(QosClass.BACKGROUND));
    }

    @Test
    void aQosTableChangesOnlyWhatItNames() {
        QosShares q = read("[l2.qos]\nslots = 4\nprefetch = { limit = \"100MiB\" }\n").qos();
        assertThat(q.slots()).isEqualTo(4);
        assertThat(q.share(QosClass.PREFETCH).limit()).isEqualTo(100L << 20);
        assertThat(q.share(QosClass.PREFETCH).weight()).isEqualTo(QosShares.DEFAULTS.share(QosClass.PREFETCH).weight());
        assertThat(q.share(QosClass.TRAINING_READ)).isEqualTo(QosShares.DEFAULTS.share(QosClass.TRAINING_READ));
        assertThat(read("[l2.qos]\nenabled = false\n").qos().enabled()).isFalse();
    }

    @Test
    void aBadQosValueIsRefusedByItsKey() {
        assertThatThrownBy(() -> read("[l2.qos]\nslots = 0\n")).isInstanceOf(ConfigException.class).hasMessageContaining("l2.qos.slots");
        assertThatThrownBy(() -> read("[l2.qos]\ntraining-read = { weight = 5000 }\n")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("l2.qos.training-read.weight");
        assertThatThrownBy(() -> read("[l2.qos]\nbulk = { weight = 2 }\n")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("l2.qos.bulk");
    }

    @Test
    void aDrainBudgetIsSharedEquallyAndNeverRaisesAnAgentsOwnRate() {
        assertThat(read("").drainRate(100)).as("no budget: each agent its own drain-bandwidth").isEqualTo(512L << 20);
        L2AgentConfig c = read("drain-budget = \"2GiB\"");
        assertThat(c.drainRate(1)).as("one agent: its own rate caps it").isEqualTo(512L << 20);
        assertThat(c.drainRate(8)).isEqualTo(256L << 20);
        assertThat(c.drainRate(1 << 20)).as("never below 64 KiB/s").isEqualTo(64 * 1024);
        assertThatThrownBy(() -> read("drain-budget = \"32KiB\"")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("l2.drain-budget").hasMessageContaining("0 (none) or at least 64KiB");
    }

    @Test
    void theBudgetIsSharedByTheAgentsTheManagerCountsAsDraining() {
        // 10 agents serve; two answers in a row counted this one and one other: half each, the idle 8 take none
        assertThat(L2Agent.drainShares(10, counted(2), counted(2))).isEqualTo(2);
        assertThat(L2Agent.drainShares(10, counted(1), counted(1))).as("draining alone").isEqualTo(1);
        // not counted yet (it has only begun to drain): never more than the equal share among the serving
        assertThat(L2Agent.drainShares(10, notCounted(1), notCounted(1))).isEqualTo(10);
        assertThat(L2Agent.drainShares(3, notCounted(5), notCounted(5))).as("more counted than serving a moment ago").isEqualTo(6);
        assertThat(L2Agent.drainShares(0, notCounted(0), notCounted(0))).isEqualTo(1);
        // counted alone right after it began: it keeps the serving share until a second answer agrees
        assertThat(L2Agent.drainShares(2, counted(1), notCounted(0))).isEqualTo(2);
        assertThat(L2Agent.drainShares(2, counted(2), counted(1))).as("the other one began too: halves at once").isEqualTo(2);
        // the other one stopped: the whole budget once two answers say so
        assertThat(L2Agent.drainShares(2, counted(1), counted(2))).isEqualTo(2);
        assertThat(L2Agent.drainShares(2, counted(1), counted(1))).isEqualTo(1);
    }

    private static NodeAgent.DrainCount counted(int draining) {
        return new NodeAgent.DrainCount(draining, true);
    }

    private static NodeAgent.DrainCount notCounted(int draining) {
        return new NodeAgent.DrainCount(draining, false);
    }
}
