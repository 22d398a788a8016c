package io.strata.protocol.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Wire;
import io.strata.core.ChainId;
import io.strata.protocol.TagRange;
import io.strata.protocol.routing.AgentInfo;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.LocalState;
import io.strata.protocol.mgmtd.MgmtdMessage.*;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MgmtdMessagesTest {
    static final NodeInfo NODE = new NodeInfo(NodeId.of(3), "10.0.0.3", 9100, Map.of("rack", "r2", "host", "h3"));
    static final String ID = "0123456789abcdef0123456789abcdef";
    static final List<TargetReport> REPORTS = List.of(new TargetReport(TargetId.of(301), LocalState.UP_TO_DATE, 17),
            new TargetReport(TargetId.of(302), LocalState.OFFLINE, 0));

    static List<Message> samples() {
        RoutingInfo r = sampleRouting();
        return List.of(
                new RegisterNode(NODE, NodeRole.STORAGE, 42L, List.of(TargetId.of(301), TargetId.of(302))),
                new LeaseGranted(20_000, 4_000, 9, 3),
                new Heartbeat(NodeId.of(3), 42L, REPORTS, List.of(new TargetSpace(TargetId.of(301), 1L << 40, 1L << 39, 66306)), 64L << 20),
                new GetRouting(7, 20_000),
                new RoutingReply(r),
                new GetStatus(),
                new ClusterStatus(r, List.of(new PeerStatus("m1", "127.0.0.1:1", true), new PeerStatus("m2", "127.0.0.1:2", false)),
                        List.of(new NodeStatus(NodeId.of(1), NodeRole.STORAGE, 5, true, 1234),
                                new NodeStatus(NodeId.of(2), NodeRole.META, 6, false, -1)),
                        List.of(new TargetStatus(TargetId.of(101), LocalState.ONLINE), new TargetStatus(TargetId.of(102), LocalState.UP_TO_DATE, 1L << 40, 7))),
                new CreateChainTable(1, 3),
                new ChainTableCreated(1, 2, 40),
                new PutHint(0, 0, "{\"job\":\"train-7\"}".getBytes(StandardCharsets.UTF_8)),
                new HintPut(12, 3),
                new DeleteHint(12, 3),
                new HintDeleted(12),
                new GetHints(1, MgmtdMessages.MAX_HINTS_PAGE),
                new Hints(List.of(new StoredHint(1, 1, new byte[] {1, 2, 3}), new StoredHint(5, 9, new byte[0])), true),
                new RevokeToken(ID, 1_900_000_000L),
                new TokenRevoked(2),
                new GetRevoked(),
                new Revoked(List.of(new Revocation(ID, 1_900_000_000L), new Revocation("f".repeat(32), Revocation.FOR_GOOD))),
                new GetSpace(),
                new Space(3L << 40, 1L << 40, 5, 6));
    }

    @Test
    void everyMessageRoundTripsAndRejectsEveryTruncation() {
        Protocol p = MgmtdMessages.PROTOCOL;
        TagRange.MGMTD.check(MgmtdMessages.TYPES);
        assertThat(samples()).hasSize(MgmtdMessages.TYPES.size());
        for (Message m : samples()) {
            MessageType<?> t = p.typeOf(m);
            ByteBuf buf = Unpooled.buffer();
            try {
                t.encode(m, buf);
                assertThat(p.decode(t, buf.duplicate())).as(t.name()).isEqualTo(m);
                for (int cut = 0; cut < buf.readableBytes(); cut++) {
                    ByteBuf part = buf.slice(0, cut);
                    assertThatThrownBy(() -> p.decode(t, part)).as(t.name() + " cut at " + cut).isInstanceOf(Wire.Malformed.class);
                }
                ByteBuf longer = Unpooled.copiedBuffer(buf.duplicate(), Unpooled.wrappedBuffer(new byte[] {0}));
                assertThatThrownBy(() -> p.decode(t, longer)).as(t.name() + " with a trailing byte").isInstanceOf(Wire.Malformed.class);
            } finally {
                buf.release();
            }
        }
    }

    @Test
    void badFieldValuesAreRejected() {
        ByteBuf b = Unpooled.buffer();
        try {
            MgmtdMessages.CREATE_CHAIN_TABLE.encode(new CreateChainTable(1, 3), b);
            b.setByte(4, 9); // replicas 9
            assertThatThrownBy(() -> MgmtdMessages.PROTOCOL.decode(MgmtdMessages.CREATE_CHAIN_TABLE, b.duplicate()))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("replicas");
            b.clear();
            MgmtdMessages.HEARTBEAT.encode(new Heartbeat(NodeId.of(3), 1, REPORTS), b);
            b.setByte(4 + 8 + 4 + 8, 77); // first report's local-state tag
            assertThatThrownBy(() -> MgmtdMessages.PROTOCOL.decode(MgmtdMessages.HEARTBEAT, b.duplicate()))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("local state");
            b.clear();
            MgmtdMessages.LEASE_GRANTED.encode(new LeaseGranted(1, 1, 1), b);
            b.setLong(0, 0);
            assertThatThrownBy(() -> MgmtdMessages.PROTOCOL.decode(MgmtdMessages.LEASE_GRANTED, b.duplicate()))
                    .isInstanceOf(Wire.Malformed.class);
            b.clear();
            MgmtdMessages.LEASE_GRANTED.encode(new LeaseGranted(1, 1, 1, 2), b);
            b.setInt(8 + 8 + 8, -1); // draining agents
            assertThatThrownBy(() -> MgmtdMessages.PROTOCOL.decode(MgmtdMessages.LEASE_GRANTED, b.duplicate()))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("draining agents");
            b.clear();
            MgmtdMessages.HEARTBEAT.encode(new Heartbeat(NodeId.of(11), 1, List.of(), List.of(), 5), b);
            b.setLong(b.writerIndex() - 8, -5); // drain backlog
            assertThatThrownBy(() -> MgmtdMessages.PROTOCOL.decode(MgmtdMessages.HEARTBEAT, b.duplicate()))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("drain backlog");
            b.clear();
            MgmtdMessages.HINTS.encode(new Hints(List.of(new StoredHint(1, 1, new byte[1])), false), b);
            b.setInt(4 + 8 + 8, StoredHint.MAX_VALUE_BYTES + 1); // the hint's value length
            assertThatThrownBy(() -> MgmtdMessages.PROTOCOL.decode(MgmtdMessages.HINTS, b.duplicate()))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("hint value");
            b.clear();
            MgmtdMessages.REVOKE_TOKEN.encode(new RevokeToken(ID, 1), b);
            b.setByte(4, 'X'); // not a hex digit
            assertThatThrownBy(() -> MgmtdMessages.PROTOCOL.decode(MgmtdMessages.REVOKE_TOKEN, b.duplicate()))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("32 lowercase hex digits");
            b.clear();
            MgmtdMessages.REVOKE_TOKEN.encode(new RevokeToken(ID, 1), b);
            b.setLong(4 + 32, 0);
            assertThatThrownBy(() -> MgmtdMessages.PROTOCOL.decode(MgmtdMessages.REVOKE_TOKEN, b.duplicate()))
                    .isInstanceOf(Wire.Malformed.class).hasMessageContaining("revoked until");
        } finally {
            b.release();
        }
    }

    @Test
    void hintsCompareTheirValuesByContent() {
        assertThat(new StoredHint(3, 2, new byte[] {7, 8})).isEqualTo(new StoredHint(3, 2, new byte[] {7, 8}))
                .hasSameHashCodeAs(new StoredHint(3, 2, new byte[] {7, 8}))
                .isNotEqualTo(new StoredHint(3, 2, new byte[] {7, 9}))
                .isNotEqualTo(new StoredHint(3, 3, new byte[] {7, 8}))
                .hasToString("StoredHint[id=3, version=2, 2 bytes]");
        assertThat(new PutHint(0, 0, new byte[] {1})).isEqualTo(new PutHint(0, 0, new byte[] {1}))
                .isNotEqualTo(new PutHint(0, 0, new byte[] {2}));
    }

    /** Two nodes, two targets (one syncing), one chain of both, one table: as a manager would publish it. */
    static RoutingInfo sampleRouting() {
        NodeInfo a = new NodeInfo(NodeId.of(1), "127.0.0.1", 9101, Map.of("host", "a", "rack", "r1"));
        NodeInfo b = new NodeInfo(NodeId.of(2), "127.0.0.1", 9102, Map.of());
        TargetInfo t1 = new TargetInfo(TargetId.of(101), a.id(), TargetState.SERVING);
        TargetInfo t2 = new TargetInfo(TargetId.of(201), b.id(), TargetState.SYNCING);
        NodeInfo l2a = new NodeInfo(NodeId.of(11), "127.0.0.1", 9111, Map.of("domain", "n1"));
        NodeInfo l2b = new NodeInfo(NodeId.of(12), "127.0.0.1", 9112, Map.of());
        ChainInfo c = new ChainInfo(ChainId.of(1), 4, List.of(t1.id(), t2.id()));
        return new RoutingInfo(7, Map.of(a.id(), a, b.id(), b, l2a.id(), l2a, l2b.id(), l2b), Map.of(t1.id(), t1, t2.id(), t2),
                Map.of(c.id(), c), List.of(new ChainTable(1, 1, 2, List.of(c.id()))),
                Map.of(l2a.id(), new AgentInfo(l2a.id(), true), l2b.id(), new AgentInfo(l2b.id(), false)));
    }
}
