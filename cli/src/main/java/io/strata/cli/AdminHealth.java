package io.strata.cli;

import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
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
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.storage.StorageMessages;
import io.strata.protocol.storage.TargetScrub;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata admin health}: what needs an operator's attention, one line per finding, and
 * exit status 1 when there is any: nodes without a lease, targets not serving (chains running
 * short), L2 agents unreachable, fenced or with a failed disk, a drain lagging behind, staged
 * files lost, corrupt chunk copies found by scrubbing that could not be repaired.
 */
@Command(name = "health", mixinStandardHelpOptions = true,
        description = {"What needs attention in the cluster; exit status 1 when anything does.", "",
                "Checks the cluster manager's view (node leases, targets not serving, chains short of replicas), "
                        + "every L2 agent (reachable, fenced, disk, drain lag), the meta service's staged files (lost ones) "
                        + "and every storage node's scrub (corrupt copies not repaired). Prints one line per finding, "
                        + "or that all is well."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata admin health", "  strata admin health --drain-lag 5m   (more lag tolerated)"})
final class AdminHealth extends AdminCommand.Call {
    @Option(names = "--drain-lag", defaultValue = "60s", description = "An L2 drain lag above this needs attention "
            + "(default ${DEFAULT-VALUE}).")
    String drainLag;

    @Option(names = "--full-above", defaultValue = "90%", description = "A target whose disk is fuller than this needs attention "
            + "(a percentage, default ${DEFAULT-VALUE}).")
    String fullAbove;

    /** Findings of the last run (what makes the exit status 1). */
    private int findings;

    @Override
    public Integer call() {
        int rc = super.call();
        return rc != 0 ? rc : findings > 0 ? 1 : 0;
    }

    @Override
    String run(MgmtdClient client, Duration t) {
        double lagLimit = io.strata.config.Durations.parse(drainLag).toMillis() / 1000.0;
        double fullLimit = percent(fullAbove);
        MgmtdMessage.ClusterStatus s = status(client, t);
        RoutingInfo r = s.routing();
        List<String> bad = new ArrayList<>();
        List<String> ok = new ArrayList<>();
        for (MgmtdMessage.NodeStatus n : s.nodes()) {
            if (!n.live()) {
                bad.add("node " + n.node().value() + " (" + n.role().name().toLowerCase(Locale.ROOT) + ") holds no lease: it is down "
                        + "or cut off from the cluster manager");
            }
        }
        int notServing = 0;
        for (TargetInfo ti : r.targets().values()) {
            if (ti.state() != TargetState.SERVING) {
                notServing++;
                bad.add("target " + ti.id().value() + " on node " + ti.node().value() + " is " + ti.state().publicName()
                        + (ti.state() == TargetState.SYNCING ? " (being resynced)" : ""));
            }
        }
        for (ChainInfo c : r.chains().values()) {
            long serving = c.targets().stream().filter(x -> r.target(x).state() == TargetState.SERVING).count();
            if (serving < c.replicas()) {
                bad.add(c.id() + " has " + serving + " of " + c.replicas() + " replicas serving"
                        + (serving < 2 && c.replicas() >= 2 ? ": writes are held (replicas.min-ack)" : ""));
            }
        }
        ok.add(s.nodes().size() + " nodes, " + r.targets().size() + " targets (" + (r.targets().size() - notServing) + " serving), "
                + r.chains().size() + " chains");
        space(client, s, t, fullLimit, bad, ok);
        try (NodeContext ctx = ClientSource.context("strata-admin-health", source.adminCredentials(), source.tls())) {
            l2(ctx, r, t, lagLimit, bad, ok);
            lost(ctx, t, bad);
            scrub(ctx, r, t, bad, ok);
        }
        findings = bad.size();
        StringBuilder out = new StringBuilder();
        for (String b : bad) {
            out.append("ATTENTION  ").append(b).append('\n');
        }
        for (String o : ok) {
            out.append("ok         ").append(o).append('\n');
        }
        out.append(bad.isEmpty() ? "Nothing needs attention.\n" : bad.size() + " finding(s) need attention.\n");
        return out.toString();
    }

    /** {@code "90%"} or {@code "90"} as 90.0; a clear error for anything else. */
    private static double percent(String v) {
        String n = v.trim().endsWith("%") ? v.trim().substring(0, v.trim().length() - 1).trim() : v.trim();
        try {
            double p = Double.parseDouble(n);
            if (p >= 0 && p <= 100) {
                return p;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new StrataException(Status.INVALID_ARGUMENT, "--full-above: expected a percentage from 0 to 100 such as 90%, got '" + v + "'");
    }

    /** Targets whose disk is fuller than {@code limit} percent, and the cluster's capacity. */
    private static void space(MgmtdClient client, MgmtdMessage.ClusterStatus s, Duration t, double limit, List<String> bad, List<String> ok) {
        for (MgmtdMessage.TargetStatus ts : s.targets()) {
            if (!ts.spaceKnown() || ts.capacityBytes() == 0) {
                continue;
            }
            double used = 100.0 * (ts.capacityBytes() - ts.freeBytes()) / ts.capacityBytes();
            if (used > limit) {
                TargetInfo ti = s.routing().targets().get(ts.target());
                bad.add(String.format(Locale.ROOT, "target %d%s is %.0f%% full (%s free of %s): writes to its chains fail with NO_SPACE "
                        + "once it fills", ts.target().value(), ti == null ? "" : " on node " + ti.node().value(), used,
                        DataSize.human(ts.freeBytes()), DataSize.human(ts.capacityBytes())));
            }
        }
        try {
            MgmtdMessage.Space sp = Futures.join(client.call(new MgmtdMessage.GetSpace(), MgmtdMessage.Space.class, t, t), t.plusSeconds(1));
            ok.add("space: " + DataSize.human(sp.freeBytes()) + " free of " + DataSize.human(sp.capacityBytes()) + " raw ("
                    + sp.reporting() + " of " + sp.targets() + " serving targets reporting; each file system counted once)");
        } catch (RuntimeException e) {
            bad.add("the cluster manager does not report space: " + e.getMessage());
        }
    }

    private static void l2(NodeContext ctx, RoutingInfo r, Duration t, double lagLimit, List<String> bad, List<String> ok) {
        if (r.agents().isEmpty()) {
            return;
        }
        long undrained = 0;
        try (RpcClient rpc = new RpcClient(ctx, L2Messages.PROTOCOL, RpcOptions.DEFAULTS)) {
            for (AgentInfo a : r.agents().values()) {
                NodeInfo n = r.node(a.node());
                try {
                    L2Message.Status st = Futures.join(rpc.call(n.address(), new L2Message.GetStatus(), L2Message.Status.class), t);
                    undrained += st.stagedBytes();
                    if (st.fenced()) {
                        bad.add("L2 agent " + a.node().value() + " is fenced (no lease)");
                    }
                    if (st.diskFailed()) {
                        bad.add("L2 agent " + a.node().value() + "'s disk failed");
                    }
                    if (st.drainLagSeconds() > lagLimit) {
                        bad.add(String.format(Locale.ROOT, "L2 agent %d drains %.0f s behind (%s staged, not yet in L3)", a.node().value(),
                                st.drainLagSeconds(), DataSize.human(st.stagedBytes())));
                    }
                } catch (RuntimeException e) {
                    bad.add("L2 agent " + a.node().value() + " at " + n.hostPort() + " does not answer: " + e.getMessage());
                }
            }
        }
        ok.add(r.agents().size() + " L2 agents, " + DataSize.human(undrained) + " staged and not yet in L3");
    }

    private void lost(NodeContext ctx, Duration t, List<String> bad) {
        try (RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            MetaClient mc = new MetaClient(ctx, rpc, source.metaAddresses(ctx), t, 2);
            List<Staging> files = Futures.join(mc.listStagingAsync(Caller.ROOT, true, 0, 1000), t.plusSeconds(1));
            for (Staging f : files) {
                if (!f.lost().isEmpty()) {
                    bad.add("staged file inode " + f.inode() + " lost bytes that never reached L3: " + f.lost());
                }
            }
        } catch (RuntimeException e) {
            bad.add("the meta service does not answer: " + e.getMessage());
        }
    }

    private static void scrub(NodeContext ctx, RoutingInfo r, Duration t, List<String> bad, List<String> ok) {
        if (r.targets().isEmpty()) {
            return;
        }
        long repaired = 0;
        try (RpcClient rpc = new RpcClient(ctx, StorageMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            for (AdminScrub.Row row : AdminScrub.ask(rpc, r, false, t)) {
                if (row.scrub() == null) {
                    bad.add("storage node " + row.node().id().value() + " at " + row.node().hostPort() + " does not answer: " + row.error());
                    continue;
                }
                TargetScrub ts = row.scrub();
                repaired += ts.repaired();
                if (ts.unrepaired() > 0) {
                    bad.add("target " + ts.target() + " holds " + ts.unrepaired() + " corrupt chunk cop" + (ts.unrepaired() == 1 ? "y" : "ies")
                            + " no replica could repair (its log names the chunks)");
                }
            }
        }
        ok.add("scrub: " + repaired + " corrupt chunk copies repaired since the storage nodes started");
    }
}
