package io.strata.mgmtd;

import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.MgmtdMessages;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.mgmtd.StoredHint;
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
 * chains, chain tables and the routing version; and, apart from routing, the scheduler hints
 * ({@link StoredHint}s: opaque values the manager only numbers and versions, kept here so that
 * they outlive a restart of the stateless scheduler hooks and a manager failover). {@link #apply}
 * is deterministic: every Ratis peer applies the same commands in the same order and ends in the
 * same state. Lease <em>deadlines</em> are not here (they are measured by the leader on its own
 * clock); only their outcome (an {@link MgmtdCommand.Expire}) is.
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

    /**
     * What applying a command did. {@code value} is command-specific (a table's new version, a
     * hint's id); {@code version} is the version a hint command left the hint at (0 otherwise).
     */
    public record Outcome(Status status, String message, long routingVersion, long value, long version) {
        boolean ok() {
            return status == Status.OK;
        }
    }

    private static final int SNAPSHOT_MAGIC = 0x534D4753; // "SMGS"
    /**
     * 4: the revoked tokens follow the hints (format 3, without them, still reads).
     * 3: the scheduler hints follow the local states (format 2, without them, still reads). 2: the
     * routing part carries the L2 agents (format 1, without them, still reads).
     */
    private static final int SNAPSHOT_FORMAT = 4;

    private final TreeMap<NodeId, NodeInfo> nodes = new TreeMap<>();
    private final TreeMap<NodeId, NodeMeta> meta = new TreeMap<>();
    private final TreeMap<TargetId, TargetInfo> targets = new TreeMap<>();
    private final TreeMap<TargetId, LocalState> locals = new TreeMap<>();
    private final TreeMap<ChainId, ChainInfo> chains = new TreeMap<>();
    private final List<ChainTable> tables = new ArrayList<>();
    private long routingVersion;
    private View view = View.EMPTY;
    private final TreeMap<Long, StoredHint> hints = new TreeMap<>();
    /** The id the next created hint gets: ids are never reused, so this survives deletes (and snapshots). */
    private long nextHintId = 1;
    /** The value bytes of all hints, against {@link StoredHint#MAX_TOTAL_BYTES}. */
    private long hintBytes;
    /** Revoked token ids and until when (epoch seconds) each is kept: not part of routing either. */
    private final TreeMap<String, Long> revoked = new TreeMap<>();

    public View view() {
        return view;
    }

    public Outcome apply(MgmtdCommand c) {
        Outcome o = switch (c) {
            case MgmtdCommand.Register r -> register(r);
            case MgmtdCommand.Report r -> report(r);
            case MgmtdCommand.Expire e -> expire(e);
            case MgmtdCommand.CreateTable t -> createTable(t);
            case MgmtdCommand.PutHint p -> putHint(p);
            case MgmtdCommand.DeleteHint d -> deleteHint(d);
            case MgmtdCommand.Revoke r -> revoke(r);
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

    // ---- scheduler hints: never part of routing, so they never bump the routing version ------

    private Outcome putHint(MgmtdCommand.PutHint p) {
        int size = p.value().length;
        String problem = hintValueProblem(size);
        if (problem != null) {
            return fail(Status.INVALID_ARGUMENT, problem);
        }
        if (p.id() == 0) {
            if (hints.size() >= StoredHint.MAX_HINTS) {
                return fail(Status.NO_SPACE, "the cluster manager holds " + hints.size() + " scheduler hints, its limit; delete some first");
            }
            if (hintBytes + size > StoredHint.MAX_TOTAL_BYTES) {
                return fail(Status.NO_SPACE, noRoom(size));
            }
            long id = nextHintId++;
            hints.put(id, new StoredHint(id, 1, p.value()));
            hintBytes += size;
            return hintDone(id, 1);
        }
        StoredHint old = hints.get(p.id());
        if (old == null) {
            return fail(Status.NOT_FOUND, "no hint " + p.id());
        }
        if (old.version() != p.expectedVersion()) {
            return fail(Status.TXN_CONFLICT, "hint " + p.id() + " is at version " + old.version() + ", not " + p.expectedVersion());
        }
        if (hintBytes - old.value().length + size > StoredHint.MAX_TOTAL_BYTES) {
            return fail(Status.NO_SPACE, noRoom(size));
        }
        hints.put(old.id(), new StoredHint(old.id(), old.version() + 1, p.value()));
        hintBytes += size - old.value().length;
        return hintDone(old.id(), old.version() + 1);
    }

    private Outcome deleteHint(MgmtdCommand.DeleteHint d) {
        StoredHint old = hints.get(d.id());
        if (old == null) {
            return fail(Status.NOT_FOUND, "no hint " + d.id());
        }
        if (d.expectedVersion() != 0 && old.version() != d.expectedVersion()) {
            return fail(Status.TXN_CONFLICT, "hint " + d.id() + " is at version " + old.version() + ", not " + d.expectedVersion());
        }
        hints.remove(old.id());
        hintBytes -= old.value().length;
        return hintDone(old.id(), old.version());
    }

    // ---- revoked tokens: polled by the daemons, never part of routing -----------------------

    private Outcome revoke(MgmtdCommand.Revoke r) {
        revoked.values().removeIf(until -> until <= r.now());
        MgmtdMessage.Revocation v = r.revocation();
        Long had = revoked.get(v.tokenId());
        if (had == null && revoked.size() >= MgmtdMessage.Revocation.MAX) {
            return fail(Status.NO_SPACE, "the cluster manager holds " + revoked.size()
                    + " revoked tokens, its limit: a revocation is dropped when its token expires; rotate the cluster key instead");
        }
        revoked.put(v.tokenId(), had == null ? v.expiresAt() : Math.max(had, v.expiresAt()));
        return new Outcome(Status.OK, "", routingVersion, revoked.size(), 0);
    }

    /** The revocations still in force at {@code nowSeconds}, in token id order. */
    public List<MgmtdMessage.Revocation> revoked(long nowSeconds) {
        List<MgmtdMessage.Revocation> out = new ArrayList<>();
        revoked.forEach((id, until) -> {
            if (until > nowSeconds) {
                out.add(new MgmtdMessage.Revocation(id, until));
            }
        });
        return out;
    }

    /** Why a hint value of {@code bytes} cannot be stored, or null if it can (the leader checks before logging a put). */
    static String hintValueProblem(int bytes) {
        return bytes > StoredHint.MAX_VALUE_BYTES
                ? "a hint value of " + bytes + " bytes exceeds the limit of " + StoredHint.MAX_VALUE_BYTES + " bytes"
                : null;
    }

    private String noRoom(int bytes) {
        return "no room for a hint value of " + bytes + " bytes: the cluster manager holds " + hintBytes
                + " bytes of scheduler hints, its limit is " + StoredHint.MAX_TOTAL_BYTES;
    }

    private Outcome hintDone(long id, long version) {
        return new Outcome(Status.OK, "", routingVersion, id, version);
    }

    /**
     * The hints with ids from {@code fromId} on, in id order: at most {@code max}, and no more once
     * their values pass {@code maxBytes} (but always one if there is one). {@code more} when hints
     * follow the last one returned.
     */
    public MgmtdMessage.Hints hints(long fromId, int max, long maxBytes) {
        List<StoredHint> page = new ArrayList<>();
        long bytes = 0;
        for (StoredHint h : hints.tailMap(fromId, true).values()) {
            if (page.size() >= max || !page.isEmpty() && bytes + h.value().length > maxBytes) {
                return new MgmtdMessage.Hints(page, true);
            }
            page.add(h);
            bytes += h.value().length;
        }
        return new MgmtdMessage.Hints(page, false);
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
        return new Outcome(Status.OK, "", routingVersion, value, 0);
    }

    private Outcome fail(Status s, String message) {
        return new Outcome(s, message, routingVersion, 0, 0);
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

    /**
     * Writes the whole state: routing info (RoutingCodec) plus node metadata and local states,
     * then the scheduler hints (the next hint id, then each hint in id order), then the revoked
     * tokens (count, then each id and until when, in id order).
     */
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
        out.writeLong(nextHintId);
        out.writeInt(hints.size());
        hints.values().forEach(h -> MgmtdMessages.encodeHint(h, out));
        out.writeInt(revoked.size());
        revoked.forEach((id, until) -> MgmtdMessages.encodeRevocation(new MgmtdMessage.Revocation(id, until), out));
    }

    /** Replaces this state with a decoded snapshot. */
    public void decode(ByteBuf in) {
        if (Wire.readInt(in, "snapshot magic") != SNAPSHOT_MAGIC) {
            throw new Wire.Malformed("not a cluster-manager snapshot");
        }
        int format = Wire.readInt(in, "snapshot format");
        if (format < 1 || format > SNAPSHOT_FORMAT) {
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
        long nextHint = 1;
        TreeMap<Long, StoredHint> h = new TreeMap<>();
        long hBytes = 0;
        if (format >= 3) { // formats 1 and 2 were written before the manager kept hints
            nextHint = Wire.readLong(in, "next hint id");
            int count = Wire.readCount(in, "hints", StoredHint.MAX_HINTS, 20);
            for (int i = 0; i < count; i++) {
                StoredHint hint = MgmtdMessages.decodeHint(in);
                if (hint.id() <= 0 || hint.id() >= nextHint || h.put(hint.id(), hint) != null) {
                    throw new Wire.Malformed("snapshot: hint id " + hint.id() + " is repeated or outside [1, " + nextHint + ")");
                }
                hBytes += hint.value().length;
            }
        }
        TreeMap<String, Long> rv = new TreeMap<>();
        if (format >= 4) { // format 3 was written before the manager kept revocations
            int count = Wire.readCount(in, "revoked tokens", MgmtdMessage.Revocation.MAX, 12 + 8);
            for (int i = 0; i < count; i++) {
                MgmtdMessage.Revocation v = MgmtdMessages.decodeRevocation(in);
                if (rv.put(v.tokenId(), v.expiresAt()) != null) {
                    throw new Wire.Malformed("snapshot: revoked token " + v.tokenId() + " is repeated");
                }
            }
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
        hints.clear();
        hints.putAll(h);
        nextHintId = nextHint;
        hintBytes = hBytes;
        revoked.clear();
        revoked.putAll(rv);
        publish();
    }
}
