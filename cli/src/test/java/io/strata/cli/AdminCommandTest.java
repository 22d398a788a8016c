package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.util.Futures;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.core.util.Eventually;
import io.strata.harness.MiniMgmtdCluster;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AdminCommandTest {
    @TempDir
    Path dir;

    @Test
    void adminPrintsNodesTargetsChainsAndRouting() {
        Duration t = Duration.ofSeconds(20);
        try (MiniMgmtdCluster m = MiniMgmtdCluster.builder(dir).peers(1).lease(Duration.ofSeconds(30)).autoTable(3).start();
             NodeContext ctx = NodeContext.seeded("admin-test", 3);
             MgmtdClient c = new MgmtdClient(ctx, m.addresses())) {
            for (int n = 1; n <= 3; n++) {
                Futures.join(c.call(new MgmtdMessage.RegisterNode(new NodeInfo(NodeId.of(n), "127.0.0.1", 9400 + n, Map.of("rack", "rack-" + n)),
                        NodeRole.STORAGE, n, List.of(TargetId.of(n * 100L + 1))), MgmtdMessage.LeaseGranted.class, t, t), t);
            }
            Eventually.await("table", t, () -> m.peer(0).routing().latestTable(3).isPresent());
            String nodes = run("admin", "nodes", "--mgmtd", m.addressList());
            assertThat(nodes).contains("rack-2").contains("127.0.0.1:9403").contains("live").contains("storage");
            String targets = run("admin", "targets", "--mgmtd", m.addressList());
            assertThat(targets).contains("301").contains("serving").contains("online");
            String chains = run("admin", "chains", "--mgmtd", m.addressList());
            assertThat(chains).contains("serving serving serving");
            String routing = run("admin", "routing", "--mgmtd", m.addressList());
            assertThat(routing).contains("chain table 1 v1").contains("(leader)");
        }
    }

    static String run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = StrataMain.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertThat(code).as(err.toString(StandardCharsets.UTF_8)).isZero();
        return out.toString(StandardCharsets.UTF_8);
    }
}
