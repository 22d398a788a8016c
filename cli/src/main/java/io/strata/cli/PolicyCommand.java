package io.strata.cli;

import io.strata.protocol.meta.MetaMessages;
import io.strata.core.rpc.Addresses;
import io.strata.bench.Table;
import io.strata.config.ConfigNode;
import io.strata.core.NodeContext;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Layout;
import io.strata.protocol.meta.PolicyInfo;
import io.strata.protocol.meta.MetaClient;
import io.strata.namespace.service.MetaServer;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata policy set|get|explain PATH [key=value...] --meta HOST:PORT}: a directory's
 * policy. {@code set} changes the directory's own overrides ({@code key=inherit} drops one) for
 * files created afterwards; {@code get} prints the effective policy and marks what the directory
 * sets itself; {@code explain} adds, for each field, the ancestor it came from. On a file, get
 * and explain show the policy and layout fixed when it was created. Acts as the calling user.
 */
@Command(name = "policy", description = "Show or change a directory's policy (set | get | explain).")
final class PolicyCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "ACTION", description = "set | get | explain")
    String action;

    @Parameters(index = "1", paramLabel = "PATH", description = "Absolute path in the namespace.")
    String path;

    @Parameters(index = "2..*", paramLabel = "KEY=VALUE", description = "set: fields to change (key=inherit removes one).")
    List<String> assignments = new ArrayList<>();

    @Option(names = "--meta", required = true, paramLabel = "HOST:PORT[,...]", description = "Meta service instances (any of them).")
    String meta;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (!List.of("set", "get", "explain").contains(action)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "unknown action '" + action + "' (expected set, get or explain)");
        }
        if (action.equals("set") == assignments.isEmpty()) {
            throw new CommandLine.ParameterException(spec.commandLine(), action.equals("set")
                    ? "policy set needs at least one key=value" : "policy " + action + " takes no key=value");
        }
        List<java.net.InetSocketAddress> addrs = new ArrayList<>();
        for (String a : meta.split(",")) {
            var u = Addresses.parse(a.trim());
            addrs.add(new java.net.InetSocketAddress(u.getHostString(), u.getPort()));
        }
        PrintWriter out = spec.commandLine().getOut();
        Caller me = currentUser();
        Duration t = Duration.ofSeconds(15);
        try (NodeContext ctx = NodeContext.builder("strata-policy").eventLoopThreads(1).blockingThreads(1).build();
             RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            MetaClient client = new MetaClient(ctx, rpc, addrs, Duration.ofSeconds(5), 2 * addrs.size() + 1);
            InodeAttrs target = Futures.join(client.resolveAsync(me, path), t);
            if (!target.isDirectory() && !action.equals("set")) {
                out.print(renderFile(path, target));
                out.flush();
                return 0;
            }
            PolicyInfo p = action.equals("set")
                    ? Futures.join(client.policySetAsync(me, target.id(), assignments, null), t)
                    : Futures.join(client.policyGetAsync(me, target.id()), t);
            out.print(render(action, p));
            out.flush();
        }
        return 0;
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
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        java.io.PrintStream ps = new java.io.PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8);
        t.print(ps);
        return bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
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
