package io.strata.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.mgmtd.TargetReport;
import io.strata.protocol.routing.LocalState;
import io.strata.protocol.routing.NodeInfo;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The manager's Ratis log entries round-trip and reject garbage. */
class MgmtdCommandTest {
    static final NodeInfo NODE = new NodeInfo(NodeId.of(3), "10.0.0.3", 9100, Map.of("rack", "r2", "host", "h3"));
    static final List<TargetReport> REPORTS = List.of(new TargetReport(TargetId.of(301), LocalState.UP_TO_DATE, 17),
            new TargetReport(TargetId.of(302), LocalState.OFFLINE, 0));

    @Test
    void logCommandsRoundTripAndRejectGarbage() {
        List<MgmtdCommand> cmds = List.of(
                new MgmtdCommand.Register(NODE, NodeRole.STORAGE, 9, List.of(TargetId.of(301))),
                new MgmtdCommand.Report(NodeId.of(3), 9, REPORTS),
                new MgmtdCommand.Expire(NodeId.of(3), 9),
                new MgmtdCommand.CreateTable(2, 3),
                new MgmtdCommand.PutHint(0, 0, new byte[] {'{', '}'}),
                new MgmtdCommand.PutHint(7, 2, new byte[0]),
                new MgmtdCommand.DeleteHint(7, 3));
        for (MgmtdCommand c : cmds) {
            ByteBuf b = Unpooled.buffer();
            try {
                MgmtdCommand.encode(c, b);
                assertThat(MgmtdCommand.decode(b.duplicate())).isEqualTo(c);
                for (int cut = 0; cut < b.readableBytes(); cut++) {
                    ByteBuf part = b.slice(0, cut);
                    assertThatThrownBy(() -> MgmtdCommand.decode(part)).isInstanceOf(RuntimeException.class);
                }
            } finally {
                b.release();
            }
        }
        assertThatThrownBy(() -> MgmtdCommand.decode(Unpooled.wrappedBuffer(new byte[] {99}))).hasMessageContaining("command tag");
    }
}
