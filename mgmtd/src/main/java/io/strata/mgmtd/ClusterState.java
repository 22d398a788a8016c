package io.strata.mgmtd;

import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.mgmtd.TargetReport;
import io.netty.buffer.ByteBuf;
import io.strata.core.ChainId;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.TargetId;
import io.strata.core.rpc.Wire;
import io.strata.protocol.routing.AgentInfo;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingCodec;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.mgmtd.chains.ChainTableGenerator;
import io.strata.mgmtd.chains.ChainUpdater;
import io.strata.protocol.routing.LocalState;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The cluster manager's replicated state and the one place that changes it: nodes (address,
 * labels, role, incarnation, whether its lease is live), targets (public and local state),
 * chains, chain tables and the routing version. {@link #apply} is deterministic: every Ratis
 * peer applies the same commands in the same order and ends in the same state. Lease
 * <em>deadlines</em> are not here (they are measured by the leader on its own clock); only
 * their outcome (an {@link MgmtdCommand.Expire}) is.
 *
 * <p>Not thread-safe: {@link MgmtdStateMachine} serialises access and publishes immutable
 * {@link View}s for readers.
 */
public final class ClusterState {
    /** What the manager knows of a node beyond its routing entry. */
    public record NodeMeta(NodeRole role, long incarnation, boolean live) {
    }

    /** An immutable picture of the state, for readers (RPC handlers, admin, tests). */
    public record View(RoutingInfo routing, Map<NodeId, NodeMeta> nodes, Map<TargetId, LocalState> locals) {
        public static final View EMPTY = new View(RoutingInfo.EMPTY, Map.of(), Map.of());
    }

    /** What applying a command did. {@code value} is command-specific (a table's new version). */
    public record Outcome(Status status, String message, long routingVersion, long value) {
        boolean ok() {
            return status == Status.OK;
        }
    }

    private static final int SNAPSHOT_MAGIC = 0x534D4753; // "SMGS"
    /** 2: the routing part carries the L2 agents (format 1, without them, still reads). */
    private static final int SNAPSHOT_FORMAT = 2;

    private final TreeMap<NodeId, NodeInfo> nodes = new TreeMap<>();
    private final TreeMap<NodeId, NodeMeta> meta = new TreeMap<>();
    private final TreeMap<TargetId, TargetInfo> targets = new TreeMap<>();
    private final TreeMap<TargetId, LocalState> locals = new TreeMap<>();
    private final TreeMap<ChainId, ChainInfo> chains = new TreeMap<>();
    private final List<ChainTable> tables = new ArrayList<>();
    private long routingVersion;
    private View view = View.EMPTY;

    public View view() {
        return view;
    }

    public Outcome apply(MgmtdCommand c) {
        Outcome o = switch (c) {
            case MgmtdCommand.Register r -> register(r);
            case MgmtdCommand.Report r -> report(r);
            case MgmtdCommand.Expire e -> expire(e);
            case MgmtdCommand.CreateTable t -> createTable(t);
        };
        return o;
    }

    private Outcome register(MgmtdCommand.Register r) {
        NodeId id = r.node().id();
        for (TargetId t : r.targets()) {
            TargetInfo ti = targets.get(t);
            if (ti != null && !ti.node().equals(id)) {
                return fail(Status.INVALID_ARGUMENT, t + " already belongs to " + ti.node());
            }
        }
        if (new HashSet<>(r.targets()).size() != r.targets().size()) {
            return fail(Status.INVALID_ARGUMENT, "a target is listed twice in " + r.targets());
        }
        NodeMeta m = meta.get(id);
        boolean sameLife = m != null && m.live() && m.incarnation() == r.incarnation();
        boolean changed = false;
        if (m != null && !sameLife) {
            // The old incarnation is gone (a restart) or its lease expired: whatever it held may
            // be behind, so its targets go through offline before they return.
            Set<TargetId> own = targetsOf(id);
            for (TargetId t : own) {
                locals.put(t, LocalState.OFFLINE);
            }
            changed |= updateChainsOf(own);
        }
        if (!r.node().equals(nodes.get(id)) || !sameLife || !r.role().equals(m == null ? null : m.role())) {
            changed = true;
        }
        nodes.put(id, r.node());
        meta.put(id, new NodeMeta(r.role(), r.incarnation(), true));
        Set<TargetId> listed = new HashSet<>(r.targets());
        for (TargetId t : r.targets()) {
            if (!targets.containsKey(t)) {
                targets.put(t, new TargetInfo(t, id, TargetState.WAITING));
                changed = true;
            }
            if (!sameLife) {
                locals.put(t, LocalState.ONLINE);
            } else {
                locals.putIfAbsent(t, LocalState.ONLINE);
            }
        }
        for (TargetId t : targetsOf(id)) {
            if (!listed.contains(t) && locals.get(t) != LocalState.OFFLINE) {
                locals.put(t, LocalState.OFFLINE); // the node no longer has this target (disk removed)
            }
        }
        changed |= updateChainsOf(targetsOf(id));
        return done(changed, 0);
    }

    private Outcome report(MgmtdCommand.Report r) {
        NodeMeta m = meta.get(r.node());
        if (m == null || !m.live() || m.incarnation() != r.incarnation()) {
            return fail(Status.LEASE_EXPIRED, r.node() + " (incarnation " + r.incarnation() + ") holds no lease; register again");
        }
        Set<TargetId> touched = new HashSet<>();
        for (TargetReport tr : r.reports()) {
            TargetInfo ti = targets.get(tr.target());
            if (ti == null || !ti.node().equals(r.node())) {
                return fail(Status.NO_SUCH_TARGET, tr.target() + " is not a target of " + r.node());
            }
        }
        for (TargetReport tr : r.reports()) {
            LocalState next = effectiveReport(tr);
            if (next != locals.get(tr.target())) {
                locals.put(tr.target(), next);
                touched.add(tr.target());
            }
        }
        boolean changed = updateChainsOf(touched);
        return done(changed || !touched.isEmpty(), 0);
    }

    /**
     * The local state the manager records for a report: up-to-date counts only for a serving
     * target, or for a syncing one whose chain is still at the version the resync ran under.
     */
    LocalState effectiveReport(TargetReport tr) {
        if (tr.local() != LocalState.UP_TO_DATE) {
            return tr.local();
        }
        TargetInfo ti = targets.get(tr.target());
        if (ti.state() == TargetState.SERVING) {
            return LocalState.UP_TO_DATE;
        }
        ChainInfo c = chainOf(tr.target());
        if (ti.state() == TargetState.SYNCING && c != null && c.version() == tr.chainVersion()) {
            return LocalState.UP_TO_DATE;
        }
        return LocalState.ONLINE;
    }

    /** Whether a heartbeat carrying {@code reports} would change anything (so must be committed). */
    public boolean changes(List<TargetReport> reports) {
        for (TargetReport tr : reports) {
            TargetInfo ti = targets.get(tr.target());
            if (ti == null || effectiveReport(tr) != locals.get(tr.target())) {
                return true;
            }
        }
        return false;
    }

    private Outcome expire(MgmtdCommand.Expire e) {
        NodeMeta m = meta.get(e.node());
        if (m == null || !m.live() || m.incarnation() != e.incarnation()) {
            return done(false, 0); // already expired or re-registered: nothing to do
        }
        meta.put(e.node(), new NodeMeta(m.role(), m.incarnation(), false));
        Set<TargetId> own = targetsOf(e.node());
        for (TargetId t : own) {
            locals.put(t, LocalState.OFFLINE);
        }
        updateChainsOf(own);
        return done(true, 0);
    }

    private Outcome createTable(MgmtdCommand.CreateTable t) {
        Set<TargetId> used = new HashSet<>();
        chains.values().forEach(c -> used.addAll(c.targets()));
        List<ChainTableGenerator.Candidate> free = new ArrayList<>();
        for (TargetInfo ti : targets.values()) {
            NodeMeta m = meta.get(ti.node());
            if (!used.contains(ti.id()) && m.live() && m.role() == NodeRole.STORAGE && locals.get(ti.id()).alive()) {
                free.add(new ChainTableGenerator.Candidate(ti.id(), ti.node(), nodes.get(ti.node()).domain("rack")));
            }
        }
        int version = 1;
        List<ChainId> members = new ArrayList<>();
        for (ChainTable ct : tables) {
            if (ct.id() == t.tableId() && ct.version() >= version) {
                if (ct.replicas() != t.replicas()) {
                    return fail(Status.INVALID_ARGUMENT, "chain table " + t.tableId() + " has " + ct.replicas()
                            + " replicas, not " + t.replicas());
                }
                version = ct.version() + 1;
                members = new ArrayList<>(ct.chains());
            }
        }
        ChainTableGenerator.Plan plan = ChainTableGenerator.generate(free, t.replicas(), version);
        if (plan.chains().isEmpty()) {
            return fail(Status.INVALID_ARGUMENT, "cannot build chains of " + t.replicas() + " replicas: free targets on "
                    + free.stream().map(ChainTableGenerator.Candidate::node).distinct().count() + " live storage nodes");
        }
        int next = chains.isEmpty() ? 1 : chains.lastKey().value() + 1;
        for (List<TargetId> c : plan.chains()) {
            ChainId id = ChainId.of(next++);
            chains.put(id, new ChainInfo(id, 1, c));
            for (TargetId tid : c) {
                targets.put(tid, targets.get(tid).withState(TargetState.SERVING)); // a new chain is empty: in sync
            }
            members.add(id);
        }
        tables.add(new ChainTable(t.tableId(), version, t.replicas(), members));
        return done(true, version);
    }

    /** Runs the chain updater on every chain holding one of {@code touched}; unchained targets follow their local state. */
    private boolean updateChainsOf(Set<TargetId> touched) {
        if (touched.isEmpty()) {
            return false;
        }
        boolean changed = false;
        Set<TargetId> chained = new HashSet<>();
        for (ChainInfo c : List.copyOf(chains.values())) {
            chained.addAll(c.targets());
            if (c.targets().stream().noneMatch(touched::contains)) {
                continue;
            }
            Map<TargetId, TargetState> states = new HashMap<>();
            c.targets().forEach(t -> states.put(t, targets.get(t).state()));
            ChainUpdater.Result r = ChainUpdater.update(c, states, locals::get);
            for (TargetId t : c.targets()) {
                TargetState s = r.states().get(t);
                locals.put(t, ChainUpdater.settled(locals.get(t), s));
                if (s != targets.get(t).state()) {
                    targets.put(t, targets.get(t).withState(s));
                }
            }
            if (r.changed()) {
                chains.put(c.id(), r.chain());
                changed = true;
            }
        }
        for (TargetId t : touched) {
            if (!chained.contains(t) && targets.containsKey(t)) {
                TargetState s = locals.get(t).alive() ? TargetState.WAITING : TargetState.OFFLINE;
                if (targets.get(t).state() != s) {
                    targets.put(t, targets.get(t).withState(s));
                    changed = true;
                }
            }
        }
        return changed;
    }

    private Set<TargetId> targetsOf(NodeId node) {
        Set<TargetId> out = new HashSet<>();
        for (TargetInfo t : targets.values()) {
            if (t.node().equals(node)) {
                out.add(t.id());
            }
        }
        return out;
    }

    private ChainInfo chainOf(TargetId t) {
        for (ChainInfo c : chains.values()) {
            if (c.targets().contains(t)) {
                return c;
            }
        }
        return null;
    }

    private Outcome done(boolean changed, long value) {
        if (changed) {
            routingVersion++;
            publish();
        }
        return new Outcome(Status.OK, "", routingVersion, value);
    }

    private Outcome fail(Status s, String message) {
        return new Outcome(s, message, routingVersion, 0);
    }

    private void publish() {
        view = new View(routing(), Map.copyOf(meta), Map.copyOf(locals));
    }

    /** The routing of the current state: L2 agents are the nodes registered with that role, serving while their lease is live. */
    private RoutingInfo routing() {
        Map<NodeId, AgentInfo> agents = new TreeMap<>();
        meta.forEach((id, m) -> {
            if (m.role() == NodeRole.L2_AGENT) {
                agents.put(id, new AgentInfo(id, m.live()));
            }
        });
        return new RoutingInfo(routingVersion, nodes, targets, chains, tables, agents);
    }

    // ---- snapshots ----------------------------------------------------------------------

    /** Writes the whole state: routing info (RoutingCodec) plus node metadata and local states. */
    public void encode(ByteBuf out) {
        out.writeInt(SNAPSHOT_MAGIC);
        out.writeInt(SNAPSHOT_FORMAT);
        RoutingCodec.encode(routing(), out);
        out.writeInt(meta.size());
        meta.forEach((id, m) -> {
            out.writeInt(id.value());
            Wire.writeEnum(out, m.role());
            out.writeLong(m.incarnation());
            Wire.writeBool(out, m.live());
        });
        out.writeInt(locals.size());
        locals.forEach((t, l) -> {
            out.writeLong(t.value());
            Wire.writeEnum(out, l);
        });
    }

    /** Replaces this state with a decoded snapshot. */
    public void decode(ByteBuf in) {
        if (Wire.readInt(in, "snapshot magic") != SNAPSHOT_MAGIC) {
            throw new Wire.Malformed("not a cluster-manager snapshot");
        }
        int format = Wire.readInt(in, "snapshot format");
        if (format != SNAPSHOT_FORMAT && format != 1) {
            throw new Wire.Malformed("unknown snapshot format " + format);
        }
        // the agents are derived from the node metadata that follows; format 1 did not repeat them
        RoutingInfo r = format == 1 ? RoutingCodec.decodeWithoutAgents(in) : RoutingCodec.decode(in);
        Map<NodeId, NodeMeta> m = new HashMap<>();
        int n = Wire.readCount(in, "node meta", 1 << 20, 14);
        for (int i = 0; i < n; i++) {
            m.put(NodeId.of(Wire.readInt(in, "node")), new NodeMeta(Wire.readEnum(in, NodeRole.class, "role"),
                    Wire.readLong(in, "incarnation"), Wire.readBool(in, "live")));
        }
        Map<TargetId, LocalState> l = new HashMap<>();
        int k = Wire.readCount(in, "local states", 1 << 20, 9);
        for (int i = 0; i < k; i++) {
            l.put(TargetId.of(Wire.readLong(in, "target")), Wire.readEnum(in, LocalState.class, "local state"));
        }
        if (in.isReadable()) {
            throw new Wire.Malformed("snapshot: " + in.readableBytes() + " bytes left");
        }
        nodes.clear();
        nodes.putAll(r.nodes());
        meta.clear();
        meta.putAll(m);
        targets.clear();
        targets.putAll(r.targets());
        locals.clear();
        locals.putAll(l);
        chains.clear();
        chains.putAll(r.chains());
        tables.clear();
        tables.addAll(r.tables());
        routingVersion = r.version();
        publish();
    }
}
