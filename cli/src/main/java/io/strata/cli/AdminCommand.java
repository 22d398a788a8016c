package io.strata.cli;

import io.strata.bench.Table;
import io.strata.core.NodeContext;
import io.strata.core.util.Futures;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.MgmtdMessage.ClusterStatus;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata admin nodes|targets|chains|routing|create-table --mgmtd HOST:PORT[,HOST:PORT]}:
 * the cluster state as the manager's leader sees it, as tables. Without {@code --mgmtd}, the
 * local cluster of {@code strata up} ({@code --data}); the nodes view then names the local
 * process (and its pid) behind each node.
 */
@Command(name = "admin", description = "Show the cluster state held by the cluster manager (nodes, targets, chains, routing).")
final class AdminCommand implements Callable<Integer> {
    @Parameters(paramLabel = "WHAT", description = "nodes | targets | chains | routing | create-table")
    String what;

    @Option(names = "--mgmtd", paramLabel = "HOST:PORT[,...]",
            description = "Cluster manager peers (any of them); default: the local cluster `strata up` runs on --data.")
    String mgmtd;

    @Option(names = "--data", paramLabel = "DIR", description = "Data directory of a local `strata up` cluster: its manager, and its processes' pids.")
    java.nio.file.Path data;

    @Option(names = "--timeout", defaultValue = "10s", description = "How long to try (default ${DEFAULT-VALUE}).")
    String timeout;

    @Option(names = "--table", defaultValue = "1", description = "create-table: the chain table id (default ${DEFAULT-VALUE}).")
    int table;

    @Option(names = "--replicas", defaultValue = "3", description = "create-table: replicas per chain (default ${DEFAULT-VALUE}).")
    int replicas;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        Duration t = io.strata.config.Durations.parse(timeout);
        PrintWriter out = spec.commandLine().getOut();
        ClusterDir local = ClusterDir.resolve(data);
        String managers = mgmtd;
        if (managers == null) {
            managers = UpLayout.find(local.root).map(UpLayout::mgmtdAddress).orElseThrow(() -> new IllegalArgumentException(
                    "give --mgmtd HOST:PORT (no local cluster in " + local.root + "; `strata up` starts one)"));
        }
        try (NodeContext ctx = NodeContext.builder("strata-admin").eventLoopThreads(1).blockingThreads(1).build();
             MgmtdClient client = new MgmtdClient(ctx, MgmtdClient.parse(managers))) {
            if (what.equals("create-table")) {
                var r = Futures.join(client.call(new MgmtdMessage.CreateChainTable(table, replicas),
                        MgmtdMessage.ChainTableCreated.class, Duration.ofSeconds(5), t), t.plusSeconds(1));
                out.printf("chain table %d version %d created (routing version %d)%n", r.tableId(), r.version(), r.routingVersion());
                return 0;
            }
            ClusterStatus s = Futures.join(client.call(new MgmtdMessage.GetStatus(), ClusterStatus.class, Duration.ofSeconds(5), t),
                    t.plusSeconds(1));
            out.print(render(what, s, localProcesses(local)));
            out.flush();
        }
        return 0;
    }

    /** The processes of the local cluster on {@code dir} by RPC address: "name pid" (empty when none runs there). */
    static Map<String, String> localProcesses(ClusterDir dir) {
        Map<String, String> out = new HashMap<>();
        try {
            for (ClusterDir.Member m : dir.members()) {
                out.put(m.rpc(), m.name() + " pid " + m.pid() + (ClusterDir.alive(m.pid()) ? "" : " (gone)"));
            }
        } catch (java.io.IOException e) {
            // no local cluster to describe
        }
        return out;
    }

    /** The table for {@code what} (kept separate from the RPC for tests). */
    static String render(String what, ClusterStatus s) {
        return render(what, s, Map.of());
    }

    /** As above; the nodes view names the local process behind each node's address from {@code local}. */
    static String render(String what, ClusterStatus s, Map<String, String> local) {
        RoutingInfo r = s.routing();
        Table table;
        switch (what) {
            case "nodes" -> {
                table = new Table("node", "address", "role", "lease", "lease left", "incarnation", "host", "rack", "targets", "local process");
                Map<Object, Integer> counts = new HashMap<>();
                r.targets().values().forEach(ti -> counts.merge(ti.node(), 1, Integer::sum));
                for (MgmtdMessage.NodeStatus n : s.nodes()) {
                    NodeInfo ni = r.nodes().get(n.node());
                    table.row(n.node().value(), ni == null ? "-" : ni.hostPort(), n.role().publicName(), n.live() ? "live" : "expired",
                            n.leaseLeftMillis() < 0 ? "-" : n.leaseLeftMillis() + " ms", Long.toHexString(n.incarnation()),
                            ni == null ? "-" : ni.domain("host"), ni == null ? "-" : ni.domain("rack"), counts.getOrDefault(n.node(), 0),
                            ni == null ? "-" : local.getOrDefault(ni.hostPort(), "-"));
                }
            }
            case "targets" -> {
                table = new Table("target", "node", "public", "local", "chain", "position");
                Map<Object, MgmtdMessage.TargetStatus> locals = s.targets().stream()
                        .collect(Collectors.toMap(MgmtdMessage.TargetStatus::target, x -> x));
                for (TargetInfo ti : r.targets().values()) {
                    ChainInfo c = r.chains().values().stream().filter(ch -> ch.targets().contains(ti.id())).findFirst().orElse(null);
                    MgmtdMessage.TargetStatus ls = locals.get(ti.id());
                    table.row(ti.id().value(), ti.node().value(), ti.state().publicName(), ls == null ? "-" : ls.local().publicName(),
                            c == null ? "-" : c.id().value(), c == null ? "-" : c.targets().indexOf(ti.id()) + 1 + "/" + c.replicas());
                }
            }
            case "chains" -> {
                table = new Table("chain", "version", "targets (head first)", "states", "writable", "readable");
                for (ChainInfo c : r.chains().values()) {
                    table.row(c.id().value(), c.version(),
                            c.targets().stream().map(x -> String.valueOf(x.value())).collect(Collectors.joining(" ")),
                            c.targets().stream().map(x -> r.target(x).state().publicName()).collect(Collectors.joining(" ")),
                            r.writePath(c.id()).size(), r.readable(c.id()).size());
                }
            }
            case "routing" -> {
                table = new Table("item", "value");
                table.row("routing version", r.version());
                table.row("manager peers", s.peers().stream().map(p -> p.id() + "=" + p.rpc() + (p.leader() ? " (leader)" : ""))
                        .collect(Collectors.joining(", ")));
                table.row("nodes", r.nodes().size());
                table.row("targets", r.targets().size());
                table.row("chains", r.chains().size());
                for (ChainTable ct : r.tables()) {
                    table.row("chain table " + ct.id() + " v" + ct.version(), ct.chains().size() + " chains of " + ct.replicas()
                            + ": " + ct.chains().stream().map(x -> String.valueOf(x.value())).collect(Collectors.joining(" ")));
                }
            }
            default -> throw new IllegalArgumentException("unknown admin view '" + what + "': use nodes, targets, chains, routing or create-table");
        }
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8);
        table.print(ps);
        return buf.toString(StandardCharsets.UTF_8);
    }

    static List<String> views() {
        return List.of("nodes", "targets", "chains", "routing");
    }
}
