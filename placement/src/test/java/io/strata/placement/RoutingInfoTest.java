package io.strata.placement;

import io.strata.protocol.routing.RoutingCodec;
import io.strata.protocol.routing.RoutingInfo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.config.ConfigNode;
import io.strata.core.ChainId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.rpc.Wire;
import org.junit.jupiter.api.Test;

class RoutingInfoTest {
    static final String CONFIG = """
            [routing]
            version = 7
            [[routing.nodes]]
            id = 1
            address = "127.0.0.1:9101"
            labels = { host = "a", rack = "r1" }
            [[routing.nodes]]
            id = 2
            address = "127.0.0.1:9102"
            [[routing.nodes]]
            id = 3
            address = "127.0.0.1:9103"
            [[routing.targets]]
            id = 101
            node = 1
            [[routing.targets]]
            id = 201
            node = 2
            state = "offline"
            [[routing.targets]]
            id = 301
            node = 3
            [[routing.chains]]
            id = 1
            version = 4
            targets = [101, 301, 201]
            [[routing.tables]]
            id = 1
            chains = [1]
            """;

    static RoutingInfo sample() {
        ConfigNode root = ConfigNode.parse(CONFIG, "t");
        RoutingInfo r = StaticRoutingSource.fromConfig(root.section("routing")).current();
        root.rejectUnknownKeys();
        return r;
    }

    @Test
    void staticConfigBuildsRoutingWithPathsAndStates() {
        RoutingInfo r = sample();
        assertThat(r.version()).isEqualTo(7);
        assertThat(r.chain(ChainId.of(1)).version()).isEqualTo(4);
        assertThat(r.writePath(ChainId.of(1))).containsExactly(TargetId.of(101), TargetId.of(301));
        assertThat(r.readable(ChainId.of(1))).containsExactly(TargetId.of(101), TargetId.of(301));
        assertThat(r.nodeOf(TargetId.of(101)).domain("rack")).isEqualTo("r1");
        assertThat(r.latestTable(3)).hasValueSatisfying(t -> assertThat(t.chains()).containsExactly(ChainId.of(1)));
        assertThat(r.latestTable(2)).isEmpty();
    }

    @Test
    void roundTripsOnTheWireAndRejectsGarbage() {
        RoutingInfo r = sample();
        ByteBuf buf = Unpooled.buffer();
        try {
            RoutingCodec.encode(r, buf);
            assertThat(RoutingCodec.decode(buf.duplicate())).isEqualTo(r);
            ByteBuf cut = buf.slice(0, buf.readableBytes() - 3);
            assertThatThrownBy(() -> RoutingCodec.decode(cut)).isInstanceOf(Wire.Malformed.class);
        } finally {
            buf.release();
        }
    }

    @Test
    void brokenReferencesAreRejectedWithWhatIsWrong() {
        assertThatThrownBy(() -> StaticRoutingSource.fromConfig(ConfigNode.parse(CONFIG.replace("targets = [101, 301, 201]",
                "targets = [101, 999]"), "t").section("routing"))).hasMessageContaining("unknown target-999");
        assertThatThrownBy(() -> StaticRoutingSource.fromConfig(ConfigNode.parse(CONFIG.replace("node = 3", "node = 1"), "t")
                .section("routing"))).hasMessageContaining("two targets on node-1");
        assertThatThrownBy(() -> sample().chain(ChainId.of(9)))
                .isInstanceOfSatisfying(StrataException.class, e -> assertThat(e.status()).isEqualTo(Status.NO_SUCH_CHAIN));
    }

    @Test
    void updatesMustMoveForwardAndReachListeners() {
        StaticRoutingSource s = new StaticRoutingSource(sample());
        RoutingInfo[] seen = new RoutingInfo[1];
        s.onChange(r -> seen[0] = r);
        RoutingInfo r = sample();
        RoutingInfo next = new RoutingInfo(8, r.nodes(), r.targets(), r.chains(), r.tables());
        s.update(next);
        assertThat(seen[0]).isSameAs(next);
        assertThatThrownBy(() -> s.update(r)).hasMessageContaining("must grow");
    }
}
