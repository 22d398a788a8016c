package io.strata.mgmtd.chains;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.mgmtd.chains.ChainTableGenerator.Candidate;
import io.strata.mgmtd.chains.ChainTableGenerator.Plan;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IntSummaryStatistics;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ChainTableGeneratorTest {
    /** nodes × targetsPerNode candidates; target id = node * 1000 + k; rack = "r" + (node % racks). */
    static List<Candidate> cluster(int nodes, int targetsPerNode, int racks) {
        List<Candidate> out = new ArrayList<>();
        for (int n = 1; n <= nodes; n++) {
            for (int k = 1; k <= targetsPerNode; k++) {
                out.add(new Candidate(TargetId.of(n * 1000L + k), NodeId.of(n), "r" + (n % racks)));
            }
        }
        return out;
    }

    static NodeId nodeOf(TargetId t) {
        return NodeId.of((int) (t.value() / 1000));
    }

    static List<List<NodeId>> byNode(Plan p) {
        return p.chains().stream().map(c -> c.stream().map(ChainTableGeneratorTest::nodeOf).toList()).toList();
    }

    /** Min and max chains shared by a pair of nodes, over every pair. */
    static IntSummaryStatistics pairStats(Plan p, int nodes) {
        Map<List<NodeId>, Integer> counts = ChainTableGenerator.pairCounts(byNode(p));
        IntSummaryStatistics s = new IntSummaryStatistics();
        for (int a = 1; a <= nodes; a++) {
            for (int b = a + 1; b <= nodes; b++) {
                s.accept(counts.getOrDefault(List.of(NodeId.of(a), NodeId.of(b)), 0));
            }
        }
        return s;
    }

    @Test
    void replicasLandOnDifferentNodesAndEveryTargetIsUsed() {
        for (int nodes = 3; nodes <= 12; nodes++) {
            for (int replicas = 1; replicas <= Math.min(5, nodes); replicas++) {
                int perNode = replicas * 2;
                Plan p = ChainTableGenerator.generate(cluster(nodes, perNode, 1), replicas);
                assertThat(p.unplaced()).as("%d nodes r=%d", nodes, replicas).isEmpty();
                assertThat(p.chains()).hasSize(nodes * perNode / replicas);
                Set<TargetId> seen = new HashSet<>();
                for (List<TargetId> c : p.chains()) {
                    assertThat(c).hasSize(replicas);
                    assertThat(c.stream().map(ChainTableGeneratorTest::nodeOf).distinct().count()).isEqualTo(replicas);
                    assertThat(seen.addAll(c)).isTrue();
                }
            }
        }
    }

    @Test
    void replicasSpreadOverRacksWhenTheLabelsAllowIt() {
        // 9 nodes in 3 racks, r = 3: every chain must cover the 3 racks
        Plan p = ChainTableGenerator.generate(cluster(9, 6, 3), 3);
        assertThat(p.unplaced()).isEmpty();
        for (List<TargetId> c : p.chains()) {
            assertThat(c.stream().map(t -> nodeOf(t).value() % 3).distinct().count()).as("%s", c).isEqualTo(3);
        }
        // 4 nodes in 2 racks, r = 3: two racks at least
        p = ChainTableGenerator.generate(cluster(4, 3, 2), 3);
        for (List<TargetId> c : p.chains()) {
            assertThat(c.stream().map(t -> nodeOf(t).value() % 2).distinct().count()).isEqualTo(2);
        }
    }

    @Test
    void recoveryReadsSpreadEvenlyOverPeers() {
        // the 3FS example: 5 nodes, r = 3, 6 targets per node: a perfect design has every pair in 3 chains
        IntSummaryStatistics s = pairStats(ChainTableGenerator.generate(cluster(5, 6, 1), 3), 5);
        assertThat(s.getMin()).isEqualTo(3);
        assertThat(s.getMax()).isEqualTo(3);
        // larger clusters: every pair shares a chain, and the spread stays within one
        int[][] shapes = {{8, 6, 3}, {10, 9, 3}, {12, 11, 3}, {16, 15, 3}, {7, 6, 2}, {9, 8, 4}};
        for (int[] sh : shapes) {
            IntSummaryStatistics st = pairStats(ChainTableGenerator.generate(cluster(sh[0], sh[1], 1), sh[2]), sh[0]);
            assertThat(st.getMin()).as("%d nodes, %d targets, r=%d: %s", sh[0], sh[1], sh[2], st).isPositive();
            assertThat(st.getMax() - st.getMin()).as("%d nodes, %d targets, r=%d: %s", sh[0], sh[1], sh[2], st).isLessThanOrEqualTo(1);
        }
    }

    @Test
    void theSameInputGivesTheSameChainsWhateverItsOrder() {
        List<Candidate> in = cluster(10, 6, 3);
        Plan a = ChainTableGenerator.generate(in, 3);
        List<Candidate> shuffled = new ArrayList<>(in);
        Collections.shuffle(shuffled, new Random(42));
        assertThat(ChainTableGenerator.generate(shuffled, 3)).isEqualTo(a);
    }

    @Test
    void headsAreSpreadOverNodes() {
        Plan p = ChainTableGenerator.generate(cluster(6, 6, 1), 3);
        Map<NodeId, Integer> heads = new HashMap<>();
        p.chains().forEach(c -> heads.merge(nodeOf(c.get(0)), 1, Integer::sum));
        assertThat(heads).hasSize(6);
    }

    @Test
    void tooFewNodesLeaveTargetsUnplaced() {
        Plan p = ChainTableGenerator.generate(cluster(2, 4, 1), 3);
        assertThat(p.chains()).isEmpty();
        assertThat(p.unplaced()).hasSize(8);
    }

    /** Prints the balance figures quoted in docs/internals/placement.md. */
    @Test
    void printBalance() {
        int[][] shapes = {{5, 6, 3}, {6, 10, 3}, {8, 6, 3}, {10, 9, 3}, {12, 11, 3}, {16, 15, 3}, {20, 19, 3}, {9, 8, 4}};
        for (int[] sh : shapes) {
            Plan p = ChainTableGenerator.generate(cluster(sh[0], sh[1], 1), sh[2]);
            IntSummaryStatistics st = pairStats(p, sh[0]);
            System.out.printf("placement balance: nodes=%d targets/node=%d r=%d chains=%d pair min=%d max=%d avg=%.2f%n",
                    sh[0], sh[1], sh[2], p.chains().size(), st.getMin(), st.getMax(), st.getAverage());
        }
    }
}
