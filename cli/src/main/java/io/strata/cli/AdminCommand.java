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
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code strata admin nodes|targets|chains|routing|create-table|l2}: the cluster state as the
 * manager's leader sees it, as tables, on the cluster {@link ClientSource} finds, presenting its
 * admin token. For the local cluster of {@code strata up}, the nodes view names the local process
 * (and its pid) behind each node. {@code strata admin token create} issues tokens ({@link AdminToken}).
 */
@Command(name = "admin", mixinStandardHelpOptions = true,
        description = {"Show the cluster state held by the cluster manager (nodes, targets, chains, routing) and the L2 pool.", "",
                "Tables as the manager's leader sees them: the registered nodes and their leases, the targets and "
                        + "their states, the chains, and the routing (versions, manager peers, chain tables). create-table "
                        + "builds a chain table from the registered targets."},
        subcommands = {AdminCommand.Nodes.class, AdminCommand.Targets.class, AdminCommand.Chains.class, AdminCommand.Routing.class,
                AdminCommand.CreateTable.class, AdminL2.class, AdminScrub.class, AdminHealth.class, AdminSlow.class, AdminToken.class,
                AdminInit.Init.class, AdminInit.Cert.class},
        footerHeading = "%nExamples:%n",
        footer = {"  strata admin nodes                        the local cluster, with its pids",
                "  strata admin chains --mgmtd mgmt1:9200    a real cluster"})
final class AdminCommand {
    /** What every admin subcommand shares: the cluster, a timeout, one call to the manager. */
    abstract static class Call implements Callable<Integer> {
        @Mixin
        ClientSource source;

        @Option(names = "--timeout", defaultValue = "10s", description = "How long to try (default ${DEFAULT-VALUE}).")
        String timeout;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            Duration t = io.strata.config.Durations.parse(timeout);
            PrintWriter out = spec.commandLine().getOut();
            try (NodeContext ctx = ClientSource.context("strata-admin", source.adminCredentials(), source.tls());
                 MgmtdClient client = new MgmtdClient(ctx, source.managers())) {
                out.print(run(client, t));
                out.flush();
            }
            return 0;
        }

        abstract String run(MgmtdClient client, Duration t);

        /** The whole cluster state from the manager's leader. */
        static ClusterStatus status(MgmtdClient client, Duration t) {
            return Futures.join(client.call(new MgmtdMessage.GetStatus(), ClusterStatus.class, Duration.ofSeconds(5), t), t.plusSeconds(1));
        }
    }

    /** A table of the cluster status. */
    abstract static class View extends Call {
        /** The view's name, as {@link #render} takes it. */
        abstract String what();

        @Override
        String run(MgmtdClient client, Duration t) {
            ClusterStatus s = status(client, t);
            Map<String, String> local = source.cluster() instanceof ClientSource.Cluster.Local l ? localProcesses(l.dir()) : Map.of();
            return render(what(), s, local);
        }
    }

    @Command(name = "nodes", mixinStandardHelpOptions = true,
            description = {"The nodes registered with the cluster manager.", "",
                    "Id, address, role (storage, meta), lease state and time left, incarnation, host and rack, and how "
                            + "many targets; for a local `strata up` cluster also the process and pid behind each node."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin nodes", "  strata admin nodes --mgmtd mgmt1:9200,mgmt2:9200"})
    static final class Nodes extends View {
        @Override
        String what() {
            return "nodes";
        }
    }

    @Command(name = "targets", mixinStandardHelpOptions = true,
            description = {"The storage targets and their states.", "",
                    "Id, node, public state (serving, syncing, offline...), the state its node reports, and its chain and "
                            + "position in it."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin targets"})
    static final class Targets extends View {
        @Override
        String what() {
            return "targets";
        }
    }

    @Command(name = "chains", mixinStandardHelpOptions = true,
            description = {"The CRAQ chains and their targets.", "",
                    "Id, version, targets from head to tail and their states, and how many of them take writes and serve "
                            + "reads."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin chains"})
    static final class Chains extends View {
        @Override
        String what() {
            return "chains";
        }
    }

    @Command(name = "routing", mixinStandardHelpOptions = true,
            description = {"The routing summary.", "",
                    "Its version, the manager peers (and which one leads), the number of nodes, targets and chains, and "
                            + "each chain table with its chains."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin routing"})
    static final class Routing extends View {
        @Override
        String what() {
            return "routing";
        }
    }

    @Command(name = "create-table", mixinStandardHelpOptions = true,
            description = {"Build a chain table from the registered targets.", "",
                    "Chains of --replicas targets, each on a different node. New files draw their chains from the newest "
                            + "table of their replica count."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin create-table --table 2 --replicas 2 --mgmtd mgmt1:9200"})
    static final class CreateTable extends Call {
        @Option(names = "--table", defaultValue = "1", description = "The chain table id (default ${DEFAULT-VALUE}).")
        int table;

        @Option(names = "--replicas", defaultValue = "3", description = "Replicas per chain (default ${DEFAULT-VALUE}).")
        int replicas;

        @Override
        String run(MgmtdClient client, Duration t) {
            var r = Futures.join(client.call(new MgmtdMessage.CreateChainTable(table, replicas),
                    MgmtdMessage.ChainTableCreated.class, Duration.ofSeconds(5), t), t.plusSeconds(1));
            return String.format("chain table %d version %d created (routing version %d)%n", r.tableId(), r.version(), r.routingVersion());
        }
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
            default -> throw new IllegalArgumentException("unknown admin view '" + what + "'");
        }
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8);
        table.print(ps);
        return buf.toString(StandardCharsets.UTF_8);
    }
}
