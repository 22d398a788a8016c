package io.strata.mgmtd.chains;

import io.strata.core.NodeId;
import io.strata.core.TargetId;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Groups free targets into chains of {@code replicas} targets (docs/internals/placement.md).
 *
 * <p>Hard rule: the targets of a chain sit on different nodes. Soft rules, in this order: the
 * targets of a chain sit on different racks when the free targets allow it; every pair of nodes
 * shares about the same number of chains (so that when a node's disk fails, the reads that
 * rebuild its chains spread over all its peers, as a balanced incomplete block design would);
 * every node gets chains in proportion to its free targets.
 *
 * <p>The method is a greedy construction followed by a deterministic improvement pass:
 * <ol>
 *   <li>Each chain starts with the node that has the most free targets left (ties: lowest id
 *       after rotating by the chain's index, so heads spread); each next member is the node that
 *       (a) adds a rack not yet in the chain, if any node can, (b) has the smallest sum of
 *       shared-chain counts with the members chosen so far, (c) has the most free targets left,
 *       (d) comes first in the rotated id order.</li>
 *   <li>Then, repeatedly, two chains swap one member each (same-node moves excluded) when the
 *       swap keeps both chains valid, keeps rack diversity and lowers the sum of squared pair
 *       counts; chains and members are scanned in a fixed order, so the result is a pure
 *       function of the input.</li>
 * </ol>
 * Targets are taken from each node in increasing id order. Targets that cannot be placed (too
 * few distinct nodes left) stay free. The output depends only on the input (sorted internally);
 * it never uses a library shuffle or hash iteration order.
 */
public final class ChainTableGenerator {
    /** A free target and the failure domains of its node. */
    public record Candidate(TargetId target, NodeId node, String rack) {
    }

    /** The chains built, each head first; {@code unplaced} lists the targets left free. */
    public record Plan(List<List<TargetId>> chains, List<TargetId> unplaced) {
    }

    private static final int MAX_IMPROVE_ROUNDS = 50;

    private ChainTableGenerator() {
    }

    /** {@link #generate(List, int, long)} with seed 1. */
    public static Plan generate(List<Candidate> candidates, int replicas) {
        return generate(candidates, replicas, 1);
    }

    /**
     * Builds chains from {@code candidates}. {@code seed} (the table version, say) drives the
     * improvement pass through {@link SplitMix}: the same input and seed give the same plan.
     */
    public static Plan generate(List<Candidate> candidates, int replicas, long seed) {
        if (replicas < 1 || replicas > 5) {
            throw new IllegalArgumentException("replicas must be 1..5, got " + replicas);
        }
        TreeMap<NodeId, Deque<TargetId>> free = new TreeMap<>();
        Map<NodeId, String> rackOf = new HashMap<>();
        List<Candidate> sorted = new ArrayList<>(candidates);
        sorted.sort(Comparator.comparing(Candidate::target));
        for (Candidate c : sorted) {
            free.computeIfAbsent(c.node(), n -> new ArrayDeque<>()).add(c.target());
            String prev = rackOf.putIfAbsent(c.node(), c.rack());
            if (prev != null && !prev.equals(c.rack())) {
                throw new IllegalArgumentException(c.node() + " is in two racks: " + prev + " and " + c.rack());
            }
        }
        List<NodeId> nodes = new ArrayList<>(free.keySet());
        Map<Long, Integer> pairs = new HashMap<>();
        List<List<NodeId>> chains = new ArrayList<>();
        while (true) {
            List<NodeId> chain = new ArrayList<>();
            Set<String> racks = new HashSet<>();
            int rot = chains.size();
            for (int k = 0; k < replicas; k++) {
                NodeId best = null;
                long[] bestKey = null;
                for (int i = 0; i < nodes.size(); i++) {
                    NodeId n = nodes.get((i + rot) % nodes.size());
                    if (free.get(n).isEmpty() || chain.contains(n)) {
                        continue;
                    }
                    long pairSum = 0;
                    for (NodeId m : chain) {
                        pairSum += pairs.getOrDefault(key(n, m), 0);
                    }
                    long[] keyv = k == 0
                            ? new long[] {-free.get(n).size(), i}
                            : new long[] {racks.contains(rackOf.get(n)) ? 1 : 0, pairSum, -free.get(n).size(), i};
                    if (bestKey == null || compare(keyv, bestKey) < 0) {
                        best = n;
                        bestKey = keyv;
                    }
                }
                if (best == null) {
                    break;
                }
                chain.add(best);
                racks.add(rackOf.get(best));
            }
            if (chain.size() < replicas) {
                break;
            }
            for (int a = 0; a < chain.size(); a++) {
                for (int b = a + 1; b < chain.size(); b++) {
                    pairs.merge(key(chain.get(a), chain.get(b)), 1, Integer::sum);
                }
            }
            for (NodeId n : chain) {
                free.get(n).poll(); // reserve one slot; the target itself is bound below
            }
            chains.add(chain);
        }
        anneal(chains, pairs, rackOf, seed);
        improve(chains, pairs, rackOf);
        // Bind node slots to concrete targets, in chain order, lowest target id first.
        TreeMap<NodeId, Deque<TargetId>> slots = new TreeMap<>();
        for (Candidate c : sorted) {
            slots.computeIfAbsent(c.node(), n -> new ArrayDeque<>()).add(c.target());
        }
        List<List<TargetId>> out = new ArrayList<>();
        for (List<NodeId> chain : chains) {
            List<TargetId> ts = new ArrayList<>();
            for (NodeId n : chain) {
                ts.add(slots.get(n).poll());
            }
            out.add(List.copyOf(ts));
        }
        List<TargetId> unplaced = new ArrayList<>();
        slots.values().forEach(unplaced::addAll);
        unplaced.sort(Comparator.naturalOrder());
        return new Plan(List.copyOf(out), List.copyOf(unplaced));
    }

    /**
     * Simulated annealing over member swaps (same moves as {@link #improve}), temperature
     * falling geometrically; keeps the best assignment seen. Random draws come from
     * {@link SplitMix}, a generator specified here, so results never depend on a library.
     */
    private static void anneal(List<List<NodeId>> chains, Map<Long, Integer> pairs, Map<NodeId, String> rackOf, long seed) {
        if (chains.size() < 2 || chains.get(0).size() < 2) {
            return;
        }
        SplitMix rnd = new SplitMix(seed);
        int steps = Math.min(400_000, 4_000 * chains.size());
        double t = 2.0;
        double cool = Math.pow(0.005 / t, 1.0 / steps);
        long cost = cost(pairs);
        long best = cost;
        List<List<NodeId>> bestChains = copy(chains);
        Map<Long, Integer> bestPairs = new HashMap<>(pairs);
        for (int step = 0; step < steps; step++, t *= cool) {
            int x = rnd.nextInt(chains.size());
            int y = rnd.nextInt(chains.size());
            if (x == y) {
                continue;
            }
            List<NodeId> cx = chains.get(x);
            List<NodeId> cy = chains.get(y);
            int i = rnd.nextInt(cx.size());
            int j = rnd.nextInt(cy.size());
            NodeId a = cx.get(i);
            NodeId b = cy.get(j);
            if (a.equals(b) || cy.contains(a) || cx.contains(b)
                    || racksOf(cx, i, b, rackOf) < racksOf(cx, i, a, rackOf)
                    || racksOf(cy, j, a, rackOf) < racksOf(cy, j, b, rackOf)) {
                continue;
            }
            long delta = swapDelta(cx, i, b, pairs);
            applySwap(cx, i, b, pairs);
            delta += swapDelta(cy, j, a, pairs);
            if (delta <= 0 || rnd.nextDouble() < Math.exp(-delta / t)) {
                applySwap(cy, j, a, pairs);
                cost += delta;
                if (cost < best) {
                    best = cost;
                    bestChains = copy(chains);
                    bestPairs = new HashMap<>(pairs);
                }
            } else {
                applySwap(cx, i, a, pairs); // undo
            }
        }
        for (int k = 0; k < chains.size(); k++) {
            chains.set(k, bestChains.get(k));
        }
        pairs.clear();
        pairs.putAll(bestPairs);
    }

    private static long cost(Map<Long, Integer> pairs) {
        long c = 0;
        for (int v : pairs.values()) {
            c += (long) v * v;
        }
        return c;
    }

    private static List<List<NodeId>> copy(List<List<NodeId>> chains) {
        List<List<NodeId>> out = new ArrayList<>();
        for (List<NodeId> c : chains) {
            out.add(new ArrayList<>(c));
        }
        return out;
    }

    /** SplitMix64 (Steele, Lea, Flood 2014): a tiny generator fixed here so placements never change with the JDK. */
    static final class SplitMix {
        private long state;

        SplitMix(long seed) {
            this.state = seed;
        }

        long nextLong() {
            long z = (state += 0x9E3779B97F4A7C15L);
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        int nextInt(int bound) {
            return (int) Long.remainderUnsigned(nextLong(), bound);
        }

        double nextDouble() {
            return (nextLong() >>> 11) * 0x1.0p-53;
        }
    }

    /** Member swaps between chains that lower the sum of squared pair counts. */
    private static void improve(List<List<NodeId>> chains, Map<Long, Integer> pairs, Map<NodeId, String> rackOf) {
        for (int round = 0; round < MAX_IMPROVE_ROUNDS; round++) {
            boolean improved = false;
            for (int x = 0; x < chains.size(); x++) {
                for (int y = x + 1; y < chains.size(); y++) {
                    List<NodeId> cx = chains.get(x);
                    List<NodeId> cy = chains.get(y);
                    for (int i = 0; i < cx.size(); i++) {
                        for (int j = 0; j < cy.size(); j++) {
                            NodeId a = cx.get(i);
                            NodeId b = cy.get(j);
                            if (a.equals(b) || cy.contains(a) || cx.contains(b)) {
                                continue;
                            }
                            if (racksOf(cx, i, b, rackOf) < racksOf(cx, i, a, rackOf)
                                    || racksOf(cy, j, a, rackOf) < racksOf(cy, j, b, rackOf)) {
                                continue;
                            }
                            long delta = swapDelta(cx, i, b, pairs) + swapDelta(cy, j, a, pairs);
                            if (delta < 0) {
                                applySwap(cx, i, b, pairs);
                                applySwap(cy, j, a, pairs);
                                improved = true;
                            }
                        }
                    }
                }
            }
            if (!improved) {
                return;
            }
        }
    }

    private static int racksOf(List<NodeId> chain, int pos, NodeId replacement, Map<NodeId, String> rackOf) {
        Set<String> r = new HashSet<>();
        for (int k = 0; k < chain.size(); k++) {
            r.add(rackOf.get(k == pos ? replacement : chain.get(k)));
        }
        return r.size();
    }

    /** Change of sum(count^2) when chain[pos] is replaced by {@code by}. */
    private static long swapDelta(List<NodeId> chain, int pos, NodeId by, Map<Long, Integer> pairs) {
        NodeId old = chain.get(pos);
        long d = 0;
        for (int k = 0; k < chain.size(); k++) {
            if (k == pos) {
                continue;
            }
            NodeId m = chain.get(k);
            int co = pairs.getOrDefault(key(old, m), 0);
            int cn = pairs.getOrDefault(key(by, m), 0);
            d += (long) (co - 1) * (co - 1) - (long) co * co; // old pair loses one
            d += (long) (cn + 1) * (cn + 1) - (long) cn * cn; // new pair gains one
        }
        return d;
    }

    private static void applySwap(List<NodeId> chain, int pos, NodeId by, Map<Long, Integer> pairs) {
        NodeId old = chain.get(pos);
        for (int k = 0; k < chain.size(); k++) {
            if (k != pos) {
                pairs.merge(key(old, chain.get(k)), -1, Integer::sum);
                pairs.merge(key(by, chain.get(k)), 1, Integer::sum);
            }
        }
        chain.set(pos, by);
    }

    private static int compare(long[] a, long[] b) {
        for (int i = 0; i < a.length; i++) {
            int c = Long.compare(a[i], b[i]);
            if (c != 0) {
                return c;
            }
        }
        return 0;
    }

    /** An unordered node pair as one long. */
    static long key(NodeId a, NodeId b) {
        int x = Math.min(a.value(), b.value());
        int y = Math.max(a.value(), b.value());
        return ((long) x << 32) | (y & 0xFFFFFFFFL);
    }

    /** How many chains each unordered node pair shares, for balance reports. */
    public static Map<List<NodeId>, Integer> pairCounts(List<List<NodeId>> chainsByNode) {
        Map<List<NodeId>, Integer> out = new TreeMap<>(Comparator.<List<NodeId>, NodeId>comparing(l -> l.get(0)).thenComparing(l -> l.get(1)));
        for (List<NodeId> c : chainsByNode) {
            for (int a = 0; a < c.size(); a++) {
                for (int b = a + 1; b < c.size(); b++) {
                    NodeId x = c.get(a).value() < c.get(b).value() ? c.get(a) : c.get(b);
                    NodeId y = x == c.get(a) ? c.get(b) : c.get(a);
                    out.merge(List.of(x, y), 1, Integer::sum);
                }
            }
        }
        return out;
    }
}
