package io.strata.cli;

import io.strata.bench.Table;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Layout;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.meta.PolicyInfo;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/**
 * {@code strata policy set|get|explain PATH [key=value...]}: a directory's policy, on the
 * cluster {@link ClientSource} finds (the meta service only: no storage connection). {@code set}
 * changes the directory's own overrides ({@code key=inherit} drops one) for files created
 * afterwards; {@code get} prints the effective policy and marks what the directory sets itself;
 * {@code explain} adds, for each field, the ancestor it came from. On a file, get and explain
 * show the policy and layout fixed when it was created. Acts as the calling user.
 */
@Command(name = "policy", mixinStandardHelpOptions = true,
        description = {"Show or change a directory's policy (set | get | explain).", "",
                "A policy chooses striping, replicas, tiers, durability, consistency and QoS for the files created "
                        + "under a directory afterwards. What a directory does not set itself it inherits from its parent, up "
                        + "to the defaults at /."},
        subcommands = {PolicyCommand.Set.class, PolicyCommand.Get.class, PolicyCommand.Explain.class},
        footerHeading = "%nExamples:%n",
        footer = {"  strata policy get /ckpt",
                "  strata policy set /ckpt consistency=close-to-open stripe.width=8",
                "  strata policy explain /ckpt/run1"})
final class PolicyCommand {
    /** What the three actions share: the cluster, the path, and the RPC to its meta service. */
    abstract static class Action implements Callable<Integer> {
        @Mixin
        ClientSource source;

        @Parameters(index = "0", paramLabel = "PATH", description = "Absolute path in the namespace.")
        String path;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        /** "set", "get" or "explain". */
        abstract String action();

        /** The action on the directory {@code dir}. */
        abstract CompletableFuture<PolicyInfo> apply(MetaClient client, Caller me, InodeId dir);

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            Caller me = currentUser();
            Duration t = Duration.ofSeconds(15);
            try (NodeContext ctx = ClientSource.context("strata-policy", source.credentials(), source.tls());
                 RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
                List<InetSocketAddress> addrs = source.metaAddresses(ctx);
                MetaClient client = new MetaClient(ctx, rpc, addrs, Duration.ofSeconds(5), 2 * addrs.size() + 1);
                InodeAttrs target = UserErrors.at(path, () -> Futures.join(client.resolveAsync(me, path), t));
                if (!target.isDirectory() && !action().equals("set")) {
                    out.print(renderFile(path, target));
                    out.flush();
                    return 0;
                }
                PolicyInfo p = UserErrors.at(path, () -> Futures.join(apply(client, me, target.id()), t));
                out.print(render(action(), p));
                out.flush();
            }
            return 0;
        }
    }

    @Command(name = "set", mixinStandardHelpOptions = true,
            description = {"Change a directory's own policy fields.", "",
                    "The new values apply to files created under it from now on; existing files keep the layout they were "
                            + "created with. key=inherit drops the directory's own value, so that its parent's applies again. "
                            + "Prints the effective policy afterwards; needs write permission on the directory."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata policy set /ckpt replicas=2 qos=checkpoint",
                    "  strata policy set /ckpt stripe.width=inherit    back to the parent's value"})
    static final class Set extends Action {
        @Parameters(index = "1..*", arity = "1..*", paramLabel = "KEY=VALUE", description = "Fields to change (key=inherit removes one).")
        List<String> assignments = new ArrayList<>();

        @Override
        String action() {
            return "set";
        }

        @Override
        CompletableFuture<PolicyInfo> apply(MetaClient client, Caller me, InodeId dir) {
            return client.policySetAsync(me, dir, assignments, null);
        }
    }

    @Command(name = "get", mixinStandardHelpOptions = true,
            description = {"Print a directory's effective policy.", "",
                    "One field a line, marking the fields the directory sets itself. On a file: the policy and layout "
                            + "fixed when it was created."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata policy get /",
                    "  strata policy get /ckpt --mgmtd mgmt1:9200         on a real cluster"})
    static final class Get extends Action {
        @Override
        String action() {
            return "get";
        }

        @Override
        CompletableFuture<PolicyInfo> apply(MetaClient client, Caller me, InodeId dir) {
            return client.policyGetAsync(me, dir);
        }
    }

    @Command(name = "explain", mixinStandardHelpOptions = true,
            description = {"Print a directory's effective policy and where each field comes from.", "",
                    "For each field: the directory itself, the ancestor that set it, or the default. On a file: as get."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata policy explain /ckpt/run1"})
    static final class Explain extends Action {
        @Override
        String action() {
            return "explain";
        }

        @Override
        CompletableFuture<PolicyInfo> apply(MetaClient client, Caller me, InodeId dir) {
            return client.policyGetAsync(me, dir);
        }
    }

    /** The output of get/set/explain for a directory (separate from the RPC for tests). */
    static String render(String action, PolicyInfo p) {
        StringBuilder sb = new StringBuilder();
        if (action.equals("explain")) {
            Table table = new Table("field", "value", "from");
            for (PolicyInfo.Field s : p.effective()) {
                table.row(s.key(), s.value(), s.from());
            }
            sb.append("policy of ").append(p.path()).append('\n').append(print(table));
        } else {
            Table table = new Table("field", "value", "set here");
            for (PolicyInfo.Field s : p.effective()) {
                table.row(s.key(), s.value(), p.overrides().containsKey(s.key()) ? "yes" : "");
            }
            sb.append(action.equals("set") ? "updated " : "policy of ").append(p.path()).append('\n').append(print(table));
        }
        return sb.toString();
    }

    static String renderFile(String path, InodeAttrs f) {
        Layout l = f.layout();
        StringBuilder sb = new StringBuilder(path).append(" is a file: its policy and layout were fixed when it was created\n");
        if (l != null) {
            sb.append("layout: chunk ").append(l.chunkSize()).append(" B, stripe ").append(l.stripeWidth()).append(", table ")
                    .append(l.tableId()).append(" v").append(l.tableVersion()).append(", ").append(l.replicas()).append(" replicas, chains ")
                    .append(l.chains()).append(" (chooser v").append(l.chooserVersion()).append(")\n");
        }
        Table table = new Table("field", "value");
        for (Map.Entry<String, String> e : new java.util.TreeMap<>(f.policy()).entrySet()) {
            table.row(e.getKey(), e.getValue());
        }
        return sb + print(table);
    }

    private static String print(Table t) {
        return t.render();
    }

    /** The calling process's uid, gid and groups (root when the platform does not say). */
    static Caller currentUser() {
        try {
            com.sun.security.auth.module.UnixSystem u = new com.sun.security.auth.module.UnixSystem();
            long[] groups = u.getGroups();
            int[] gs = new int[Math.min(groups == null ? 0 : groups.length, Caller.MAX_GROUPS)];
            for (int i = 0; i < gs.length; i++) {
                gs[i] = (int) groups[i];
            }
            return new Caller((int) u.getUid(), (int) u.getGid(), gs);
        } catch (RuntimeException | LinkageError e) {
            return Caller.ROOT;
        }
    }
}
