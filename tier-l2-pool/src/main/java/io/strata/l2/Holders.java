package io.strata.l2;

import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.placement.L2Placement;
import io.strata.protocol.meta.Staging;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Where a staged chunk lives, as the writer, the reader and the drain all compute it from the
 * file's staging record (docs/internals/l2.md): the chunk's override when the record has one
 * (an empty override: written through to L3), else the placement function's choice among the
 * epoch's candidates. The first holder is where updates enter.
 */
public final class Holders {
    private Holders() {
    }

    /** The holders (agent node ids) of chunk {@code index} of the record's file. */
    public static List<Integer> of(Staging s, int index) {
        List<Integer> o = s.overrides().get(index);
        if (o != null) {
            return o;
        }
        return chosen(s, index);
    }

    /** The placement function's choice for chunk {@code index} among the record's candidates. */
    public static List<Integer> chosen(Staging s, int index) {
        return ids(L2Placement.choose(s.inode().value(), index, agents(s), s.replicas()).agents());
    }

    /** Every candidate of the record, best first for chunk {@code index}. */
    public static List<Integer> ranking(Staging s, int index) {
        return ids(L2Placement.rank(s.inode().value(), index, agents(s)));
    }

    /**
     * Where a prefetch puts chunk {@code index} of a file that is not staged, and where its
     * readers look ({@link io.strata.core.tier.CachedCopies}): {@code agents} (node ids, in any
     * order) best first for the chunk, by the placement function's ranking. A prefetch puts the
     * chunk on the first; a reader tries the first two that serve.
     */
    public static List<Integer> cachedRanking(long inode, int index, List<Integer> agents) {
        List<L2Placement.Agent> candidates = new ArrayList<>(agents.size());
        for (int a : agents) {
            candidates.add(new L2Placement.Agent(NodeId.of(a), "agent-" + a)); // the ranking ignores domains
        }
        return ids(L2Placement.rank(inode, index, candidates));
    }

    /** The candidates to propose for a new epoch: the agents serving in {@code r}. */
    public static List<Staging.Candidate> candidates(RoutingInfo r) {
        List<Staging.Candidate> out = new ArrayList<>();
        for (L2Placement.Agent a : L2Placement.serving(r)) {
            out.add(new Staging.Candidate(a.id().value(), a.domain()));
        }
        return out;
    }

    /** Whether agent {@code id} holds a live lease in {@code r}. */
    public static boolean serving(RoutingInfo r, int id) {
        var a = r.agents().get(NodeId.of(id));
        return a != null && a.serving();
    }

    /** The agent's node, if routing knows it. */
    public static Optional<NodeInfo> node(RoutingInfo r, int id) {
        return Optional.ofNullable(r.nodes().get(NodeId.of(id)));
    }

    /** The RPC address of agent {@code id}; NOT_SERVING when routing does not know it. */
    public static InetSocketAddress address(RoutingInfo r, int id) {
        return node(r, id).orElseThrow(() -> new StrataException(Status.NOT_SERVING, "L2 agent " + id + " is not in routing v"
                + r.version())).address();
    }

    private static List<L2Placement.Agent> agents(Staging s) {
        List<L2Placement.Agent> out = new ArrayList<>(s.candidates().size());
        for (Staging.Candidate c : s.candidates()) {
            out.add(new L2Placement.Agent(NodeId.of(c.node()), c.domain()));
        }
        return out;
    }

    private static List<Integer> ids(List<L2Placement.Agent> agents) {
        List<Integer> out = new ArrayList<>(agents.size());
        for (L2Placement.Agent a : agents) {
            out.add(a.id().value());
        }
        return out;
    }
}
