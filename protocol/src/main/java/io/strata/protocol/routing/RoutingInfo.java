package io.strata.protocol.routing;

import io.strata.core.ChainId;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * An immutable, versioned snapshot of the cluster's layout: nodes, targets and their public
 * states, chains, chain tables, and the L2 agents with whether each serves. The cluster manager bumps {@link #version()} on every change
 * and pushes it; clients and storage nodes route by it and refresh when a node rejects their
 * chain version. Construction checks that every reference resolves.
 */
public record RoutingInfo(long version, Map<NodeId, NodeInfo> nodes, Map<TargetId, TargetInfo> targets,
                          Map<ChainId, ChainInfo> chains, List<ChainTable> tables, Map<NodeId, AgentInfo> agents) {

    public static final RoutingInfo EMPTY = new RoutingInfo(0, Map.of(), Map.of(), Map.of(), List.of());

    /** Routing without L2 agents. */
    public RoutingInfo(long version, Map<NodeId, NodeInfo> nodes, Map<TargetId, TargetInfo> targets, Map<ChainId, ChainInfo> chains,
                       List<ChainTable> tables) {
        this(version, nodes, targets, chains, tables, Map.of());
    }

    public RoutingInfo {
        nodes = Collections.unmodifiableMap(new TreeMap<>(nodes));
        agents = Collections.unmodifiableMap(new TreeMap<>(agents));
        for (AgentInfo a : agents.values()) {
            if (!nodes.containsKey(a.node())) {
                throw new IllegalArgumentException("L2 agent on unknown " + a.node());
            }
        }
        targets = Collections.unmodifiableMap(new TreeMap<>(targets));
        chains = Collections.unmodifiableMap(new TreeMap<>(chains));
        tables = List.copyOf(tables);
        for (TargetInfo t : targets.values()) {
            if (!nodes.containsKey(t.node())) {
                throw new IllegalArgumentException(t.id() + " is on unknown " + t.node());
            }
        }
        for (ChainInfo c : chains.values()) {
            List<NodeId> seen = new ArrayList<>();
            for (TargetId t : c.targets()) {
                TargetInfo ti = targets.get(t);
                if (ti == null) {
                    throw new IllegalArgumentException(c.id() + " lists unknown " + t);
                }
                if (seen.contains(ti.node())) {
                    throw new IllegalArgumentException(c.id() + " has two targets on " + ti.node());
                }
                seen.add(ti.node());
            }
        }
        for (ChainTable t : tables) {
            for (ChainId c : t.chains()) {
                ChainInfo ci = chains.get(c);
                if (ci == null) {
                    throw new IllegalArgumentException("chain table " + t.id() + " v" + t.version() + " lists unknown " + c);
                }
                if (ci.replicas() != t.replicas()) {
                    throw new IllegalArgumentException("chain table " + t.id() + " v" + t.version() + " has " + t.replicas()
                            + " replicas but " + c + " has " + ci.replicas());
                }
            }
        }
    }

    /** The chain, or NO_SUCH_CHAIN (retryable: a newer routing version may know it). */
    public ChainInfo chain(ChainId id) {
        ChainInfo c = chains.get(id);
        if (c == null) {
            throw new StrataException(Status.NO_SUCH_CHAIN, id + " is not in routing version " + version);
        }
        return c;
    }

    public TargetInfo target(TargetId id) {
        TargetInfo t = targets.get(id);
        if (t == null) {
            throw new StrataException(Status.NO_SUCH_TARGET, id + " is not in routing version " + version);
        }
        return t;
    }

    public NodeInfo node(NodeId id) {
        NodeInfo n = nodes.get(id);
        if (n == null) {
            throw new StrataException(Status.UNKNOWN_NODE, id + " is not in routing version " + version);
        }
        return n;
    }

    /** The node a target lives on. */
    public NodeInfo nodeOf(TargetId target) {
        return node(target(target).node());
    }

    /** The chain's write path: its writable targets in chain order (head first). */
    public List<TargetId> writePath(ChainId id) {
        List<TargetId> out = new ArrayList<>();
        for (TargetId t : chain(id).targets()) {
            if (target(t).state().writable()) {
                out.add(t);
            }
        }
        return out;
    }

    /** The chain's targets that may serve reads, in chain order. */
    public List<TargetId> readable(ChainId id) {
        List<TargetId> out = new ArrayList<>();
        for (TargetId t : chain(id).targets()) {
            if (target(t).state().readable()) {
                out.add(t);
            }
        }
        return out;
    }

    /** A chain table by id and version. */
    public Optional<ChainTable> table(int id, int tableVersion) {
        return tables.stream().filter(t -> t.id() == id && t.version() == tableVersion).findFirst();
    }

    /** The newest version of the table whose chains have {@code replicas} targets. */
    public Optional<ChainTable> latestTable(int replicas) {
        return tables.stream().filter(t -> t.replicas() == replicas)
                .max((a, b) -> a.id() != b.id() ? Integer.compare(b.id(), a.id()) : Integer.compare(a.version(), b.version()));
    }

    /** The chains that place a target on {@code node}. */
    public List<ChainId> chainsOn(NodeId node) {
        List<ChainId> out = new ArrayList<>();
        for (ChainInfo c : chains.values()) {
            for (TargetId t : c.targets()) {
                if (target(t).node().equals(node)) {
                    out.add(c.id());
                    break;
                }
            }
        }
        return out;
    }
}
