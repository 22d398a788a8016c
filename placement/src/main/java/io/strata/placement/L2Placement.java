package io.strata.placement;

import io.strata.core.NodeId;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Which L2 agents hold a chunk: rendezvous (highest-random-weight) hashing over the candidate
 * agents, keeping the copies in distinct failure domains. The client that writes a chunk, the
 * drain that makes it durable and the prefetch planner that stages it compute the same answer
 * from the same candidates, so the function is written here, specified in
 * docs/internals/l2-placement.md and versioned: a file records the version its staging used,
 * and a version's output never changes (golden values in L2PlacementTest). When an agent joins
 * or leaves, only the chunks it ranks first or second for move (the point of rendezvous hashing).
 *
 * <p>Version 1. For chunk {@code index} of {@code inode} and an agent with id {@code a}:
 * <pre>
 *   key   = splitmix64(inode ^ 0x53545241544C3201) ^ (index * 0x9E3779B97F4A7C15)
 *   score = splitmix64(key ^ (a * 0xC2B2AE3D27D4EB4F))         (compared unsigned)
 * </pre>
 * with {@code splitmix64(x) = mix(x + 0x9E3779B97F4A7C15)} and {@code mix} splitmix64's
 * finaliser (as in the chain chooser). The <b>ranking</b> is the agents by score, highest first
 * (ties: lower id first). The <b>choice</b> of {@code r} copies walks the ranking and takes an
 * agent whose failure domain no chosen agent has; if fewer than {@code r} domains exist it walks
 * again and takes the best agents not yet chosen (and says so: {@link Choice#distinctDomains}).
 */
public final class L2Placement {
    public static final int VERSION = 1;
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    private static final long TAG_V1 = 0x53545241544C3201L;
    private static final long AGENT = 0xC2B2AE3D27D4EB4FL;

    /** An agent that may hold chunks: its id and failure domain (a compute node, a rack). */
    public record Agent(NodeId id, String domain) {
        public Agent {
            if (id == null || domain == null || domain.isBlank()) {
                throw new IllegalArgumentException("an L2 agent needs an id and a failure domain");
            }
        }
    }

    /** The agents chosen for a chunk, first the one writes enter at; whether their domains all differ. */
    public record Choice(List<Agent> agents, boolean distinctDomains) {
        public Choice {
            agents = List.copyOf(agents);
        }
    }

    private L2Placement() {
    }

    /**
     * The agents of {@code routing} that serve, as candidates: each in the failure domain its
     * node's {@code domain} label names, else its host.
     */
    public static List<Agent> serving(io.strata.protocol.routing.RoutingInfo routing) {
        List<Agent> out = new ArrayList<>();
        for (io.strata.protocol.routing.AgentInfo a : routing.agents().values()) {
            if (a.serving()) {
                io.strata.protocol.routing.NodeInfo n = routing.node(a.node());
                String d = n.labels().get("domain");
                out.add(new Agent(a.node(), d != null ? d : n.domain("host")));
            }
        }
        return out;
    }

    /** The score of {@code agent} for chunk {@code index} of {@code inode} (version 1). */
    static long score(long inode, long index, long agent) {
        long key = splitmix64(inode ^ TAG_V1) ^ (index * GOLDEN);
        return splitmix64(key ^ (agent * AGENT));
    }

    /** Every candidate, best first. */
    public static List<Agent> rank(long inode, long index, List<Agent> candidates) {
        List<Agent> out = new ArrayList<>(candidates);
        out.sort((x, y) -> {
            int c = Long.compareUnsigned(score(inode, index, y.id().value()), score(inode, index, x.id().value()));
            return c != 0 ? c : Integer.compare(x.id().value(), y.id().value());
        });
        return out;
    }

    /**
     * The {@code replicas} agents for chunk {@code index} of {@code inode} among {@code candidates}
     * (fewer when there are fewer candidates).
     */
    public static Choice choose(long inode, long index, List<Agent> candidates, int replicas) {
        if (replicas < 1) {
            throw new IllegalArgumentException("replicas must be at least 1, got " + replicas);
        }
        List<Agent> ranked = rank(inode, index, candidates);
        List<Agent> chosen = new ArrayList<>();
        Set<String> domains = new HashSet<>();
        for (Agent a : ranked) {
            if (chosen.size() < replicas && domains.add(a.domain())) {
                chosen.add(a);
            }
        }
        boolean distinct = true;
        for (Agent a : ranked) {
            if (chosen.size() >= replicas) {
                break;
            }
            if (!chosen.contains(a)) {
                chosen.add(a); // fewer domains than copies: the best agents left, sharing a domain
                distinct = false;
            }
        }
        return new Choice(chosen, distinct);
    }

    static long splitmix64(long x) {
        return mix(x + GOLDEN);
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
