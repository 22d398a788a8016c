package io.strata.cli;

import io.strata.bench.Table;
import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.storage.StorageMessage.ScrubControl;
import io.strata.protocol.storage.StorageMessage.ScrubReport;
import io.strata.protocol.storage.StorageMessages;
import io.strata.protocol.storage.TargetScrub;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata admin scrub}: every storage target's background check of its chunks (passes,
 * progress, corrupt copies found, repaired and not), and {@code --start} to begin a pass now.
 */
@Command(name = "scrub", mixinStandardHelpOptions = true,
        description = {"Checks of every stored chunk against its checksums, and repairs of corrupt copies.", "",
                "Shows each storage target's scrub: whether a pass is running and how far it is, the chunks and bytes "
                        + "checked, the passes completed, and the corrupt copies found, repaired from another replica, "
                        + "and not repaired (no replica had a good copy). --start begins a pass on every target that is "
                        + "not scrubbing; --wait shows progress until every pass has ended. Passes also start on their "
                        + "own ([storage.scrub] interval, default 7 days) and read at most [storage.scrub] rate per target."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata admin scrub", "  strata admin scrub --start --wait"})
final class AdminScrub extends AdminCommand.Call {
    @Option(names = "--start", description = "Start a pass on every target that is not scrubbing now.")
    boolean start;

    @Option(names = "--wait", description = "Show progress every few seconds until no pass is running.")
    boolean await;

    @Override
    String run(MgmtdClient client, Duration t) {
        MgmtdMessage.ClusterStatus s = status(client, t);
        RoutingInfo r = s.routing();
        if (r.targets().isEmpty()) {
            return "No storage target is registered with the cluster manager.\n";
        }
        PrintWriter out = spec.commandLine().getOut();
        try (NodeContext ctx = ClientSource.context("strata-admin-scrub", source.adminCredentials(), source.tls());
             RpcClient rpc = new RpcClient(ctx, StorageMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            List<Row> rows = ask(rpc, r, start, t);
            while (await && rows.stream().anyMatch(x -> x.scrub != null && x.scrub.running())) {
                out.println(progress(rows));
                out.flush();
                try {
                    Thread.sleep(2000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
                rows = ask(rpc, r, false, t);
            }
            return render(rows);
        }
    }

    /** One target's answer, or why its node did not answer. */
    record Row(NodeInfo node, TargetScrub scrub, String error) {
    }

    /** Every storage node's scrub report (the nodes holding targets, in id order; {@code start}: after starting passes). */
    static List<Row> ask(RpcClient rpc, RoutingInfo r, boolean start, Duration t) {
        TreeSet<NodeId> storage = new TreeSet<>((a, b) -> Integer.compare(a.value(), b.value()));
        for (TargetInfo ti : r.targets().values()) {
            storage.add(ti.node());
        }
        List<Row> rows = new ArrayList<>();
        for (NodeId id : storage) {
            NodeInfo n = r.node(id);
            try (var resp = Futures.join(rpc.call(n.address(), new ScrubControl(start), io.strata.core.rpc.Payload.NONE, t), t)) {
                for (TargetScrub ts : resp.message(ScrubReport.class).targets()) {
                    rows.add(new Row(n, ts, null));
                }
            } catch (RuntimeException e) {
                rows.add(new Row(n, null, e.getMessage()));
            }
        }
        return rows;
    }

    private static String progress(List<Row> rows) {
        long chunks = 0;
        long checked = 0;
        long bytes = 0;
        long corrupt = 0;
        int running = 0;
        for (Row x : rows) {
            if (x.scrub != null && x.scrub.running()) {
                running++;
                chunks += x.scrub.chunks();
                checked += x.scrub.checkedChunks();
                bytes += x.scrub.checkedBytes();
            }
            corrupt += x.scrub == null ? 0 : x.scrub.corrupt();
        }
        return String.format(Locale.ROOT, "scrub: %d target(s) running, %d/%d chunks (%s) checked, %d corrupt found so far",
                running, checked, chunks, DataSize.human(bytes), corrupt);
    }

    private static String render(List<Row> rows) {
        Table table = new Table("node", "address", "target", "state", "progress", "checked", "passes", "corrupt", "repaired",
                "unrepaired", "last pass ended");
        long unrepaired = 0;
        for (Row x : rows) {
            if (x.scrub == null) {
                table.row(x.node.id().value(), x.node.hostPort(), "-", "unreachable: " + x.error, "-", "-", "-", "-", "-", "-", "-");
                continue;
            }
            TargetScrub ts = x.scrub;
            unrepaired += ts.unrepaired();
            String progress = ts.startedMillis() == 0 ? "-" : ts.checkedChunks() + "/" + ts.chunks() + " chunks"
                    + (ts.chunks() > 0 ? String.format(Locale.ROOT, " (%.0f%%)", 100.0 * Math.min(ts.checkedChunks(), ts.chunks()) / ts.chunks()) : "");
            table.row(x.node.id().value(), x.node.hostPort(), ts.target(), ts.running() ? "running" : "idle", progress,
                    DataSize.human(ts.checkedBytes()), ts.passes(), ts.corrupt(), ts.repaired(), ts.unrepaired(),
                    ts.endedMillis() == 0 ? "never" : Instant.ofEpochMilli(ts.endedMillis()).toString());
        }
        String out = table.render();
        if (unrepaired > 0) {
            out += "\n" + unrepaired + " corrupt chunk cop" + (unrepaired == 1 ? "y" : "ies") + " could not be repaired: no other replica "
                    + "had a good copy of the same version. Reads of those chunks fail with EIO where no replica is intact; "
                    + "the storage nodes' logs name the chunks.\n";
        }
        return out;
    }
}
