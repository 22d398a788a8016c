package io.strata.cli;

import io.strata.bench.Table;
import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.protocol.l2.L2Message;
import io.strata.protocol.l2.L2Messages;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.meta.Staging;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.routing.AgentInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;

/**
 * {@code strata admin l2}: the L2 pool. One line per agent (from the agent itself: capacity,
 * what it holds staged and drained, drain rate and lag, writes it refused for lack of room), then
 * the files whose staged bytes are not yet durable in L3, and the files that were lost.
 */
@Command(name = "l2", mixinStandardHelpOptions = true,
        description = {"The L2 pool: agents, capacity, staged and undrained bytes, drain rate and lag, lost files.", "",
                "Asks every L2 agent the cluster manager knows for its state, and the meta service for the staged files "
                        + "not yet durable in L3 (and the lost ones)."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata admin l2", "  strata admin l2 --mgmtd mgmt1:9200"})
final class AdminL2 extends AdminCommand.Call {
    @Override
    String run(MgmtdClient client, Duration t) {
        MgmtdMessage.ClusterStatus s = status(client, t);
        RoutingInfo r = s.routing();
        StringBuilder out = new StringBuilder();
        try (NodeContext ctx = ClientSource.context("strata-admin-l2", source.adminCredentials(), source.tls());
             RpcClient rpc = new RpcClient(ctx, L2Messages.PROTOCOL, RpcOptions.DEFAULTS)) {
            Table agents = new Table("agent", "address", "domain", "lease", "capacity", "used", "staged", "undrained chunks", "cached",
                    "drained", "drain rate", "drain lag", "refused full", "evictions", "pinned", "prefetched from L3");
            for (AgentInfo a : r.agents().values()) {
                NodeInfo n = r.node(a.node());
                String lease = a.serving() ? "live" : "expired";
                try {
                    L2Message.Status st = Futures.join(rpc.call(n.address(), new L2Message.GetStatus(), L2Message.Status.class), t);
                    agents.row(a.node().value(), n.hostPort(), n.domain("domain"), lease + (st.fenced() ? " (fenced)" : "") + (st.diskFailed() ? " (disk failed)" : ""),
                            DataSize.human(st.capacityBytes()), DataSize.human(st.usedBytes()), DataSize.human(st.stagedBytes()),
                            st.stagedChunks(), DataSize.human(st.cachedBytes()), DataSize.human(st.drainedBytes()),
                            DataSize.human(st.drainBytesPerSecond()) + "/s", String.format(Locale.ROOT, "%.1f s", st.drainLagSeconds()),
                            st.refusedFull(), st.evictions(), DataSize.human(st.pinnedBytes()) + " (" + st.pinnedChunks() + " chunks)",
                            DataSize.human(st.prefetchBytes()));
                } catch (RuntimeException e) {
                    agents.row(a.node().value(), n.hostPort(), n.domain("domain"), lease + " (unreachable: " + e.getMessage() + ")",
                            "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-");
                }
            }
            if (r.agents().isEmpty()) {
                out.append("No L2 agent is registered with the cluster manager (start one with `strata l2 --config ...`).\n");
            } else {
                out.append(agents.render());
            }
            out.append(pending(ctx, t));
        }
        return out.toString();
    }

    /** The staged files not yet durable in L3, and the lost ones, from the meta service. */
    private String pending(NodeContext ctx, Duration t) {
        List<InetSocketAddress> meta = source.metaAddresses(ctx);
        try (RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            MetaClient mc = new MetaClient(ctx, rpc, meta, t, 2);
            List<Staging> files = Futures.join(mc.listStagingAsync(Caller.ROOT, true, 0, 1000), t.plusSeconds(1));
            if (files.isEmpty()) {
                return "\nEvery staged file is durable in L3.\n";
            }
            Table table = new Table("inode", "state", "publish", "draining", "durable", "published at", "age", "lost");
            long now = ctx.clock().now().toEpochMilli();
            for (Staging f : files) {
                table.row(f.inode(), f.state().name().toLowerCase(Locale.ROOT), f.publishVersion(), f.drainingVersion(), f.durableVersion(),
                        f.publishedMillis() == 0 ? "-" : Instant.ofEpochMilli(f.publishedMillis()).toString(),
                        f.publishedMillis() == 0 ? "-" : String.format(Locale.ROOT, "%.1f s", (now - f.publishedMillis()) / 1000.0),
                        f.lost().isEmpty() ? "-" : f.lost());
            }
            return "\nStaged files not yet durable in L3" + (files.size() == 1000 ? " (first 1000)" : "") + ":\n" + table.render();
        }
    }
}
