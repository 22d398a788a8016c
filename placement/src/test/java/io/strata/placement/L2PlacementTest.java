package io.strata.placement;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeId;
import io.strata.placement.L2Placement.Agent;
import io.strata.placement.L2Placement.Choice;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Version 1 of the L2 placement function: golden values, domains kept apart, little movement. */
class L2PlacementTest {
    static Agent agent(int id, String domain) {
        return new Agent(NodeId.of(id), domain);
    }

    static List<Integer> ids(List<Agent> agents) {
        return agents.stream().map(a -> a.id().value()).toList();
    }

    static final List<Agent> SIX = List.of(agent(1, "n1"), agent(2, "n2"), agent(3, "n3"), agent(4, "n4"), agent(5, "n5"),
            agent(6, "n6"));

    /** Fixed forever for version 1: a change here means data staged by older clients can no longer be found. */
    @Test
    void goldenValuesOfVersion1() {
        assertThat(L2Placement.score(7, 0, 1)).isEqualTo(GOLDEN_SCORE_7_0_1);
        assertThat(ids(L2Placement.rank(7, 0, SIX))).isEqualTo(GOLDEN_RANK_7_0);
        assertThat(ids(L2Placement.rank(7, 1, SIX))).isEqualTo(GOLDEN_RANK_7_1);
        assertThat(ids(L2Placement.choose(123_456_789L, 42, SIX, 2).agents())).isEqualTo(GOLDEN_CHOICE_123456789_42);
    }

    @Test
    void copiesGoToDistinctDomainsWhileThereAreEnough() {
        List<Agent> racks = List.of(agent(1, "r1"), agent(2, "r1"), agent(3, "r2"), agent(4, "r2"));
        for (long i = 0; i < 1000; i++) {
            Choice c = L2Placement.choose(99, i, racks, 2);
            assertThat(c.agents()).hasSize(2);
            assertThat(c.agents().get(0).domain()).isNotEqualTo(c.agents().get(1).domain());
            assertThat(c.distinctDomains()).isTrue();
        }
        Choice one = L2Placement.choose(99, 0, List.of(agent(1, "h"), agent(2, "h")), 2);
        assertThat(one.agents()).hasSize(2);
        assertThat(one.distinctDomains()).as("two agents on one host").isFalse();
        assertThat(L2Placement.choose(99, 0, List.of(agent(1, "h")), 2).agents()).hasSize(1);
    }

    @Test
    void theOrderOfCandidatesDoesNotMatter() {
        List<Agent> reversed = new ArrayList<>(SIX);
        java.util.Collections.reverse(reversed);
        for (long i = 0; i < 200; i++) {
            assertThat(L2Placement.rank(5, i, reversed)).isEqualTo(L2Placement.rank(5, i, SIX));
        }
    }

    /** Removing one agent moves only the chunks that had a copy on it; load spreads evenly. */
    @Test
    void anAgentLeavingMovesOnlyItsChunksAndLoadIsEven() {
        Map<Integer, Integer> firsts = new HashMap<>();
        int moved = 0;
        int chunks = 60_000;
        List<Agent> five = SIX.subList(0, 5);
        for (long i = 0; i < chunks; i++) {
            List<Agent> before = L2Placement.choose(11, i, SIX, 2).agents();
            firsts.merge(before.get(0).id().value(), 1, Integer::sum);
            List<Agent> after = L2Placement.choose(11, i, five, 2).agents();
            if (!before.contains(SIX.get(5))) {
                assertThat(after).as("chunk %d had no copy on agent 6", i).isEqualTo(before);
            } else {
                moved++;
            }
        }
        assertThat(moved).as("chunks with a copy on agent 6: about 2/6").isBetween(chunks / 3 - 1000, chunks / 3 + 1000);
        for (int id = 1; id <= 6; id++) {
            assertThat(firsts.get(id)).as("chunks agent %d ranks first for", id).isBetween(chunks / 6 - 600, chunks / 6 + 600);
        }
    }

    static final long GOLDEN_SCORE_7_0_1 = 0x90a8a666b0ac5d3eL;
    static final List<Integer> GOLDEN_RANK_7_0 = List.of(6, 2, 1, 5, 4, 3);
    static final List<Integer> GOLDEN_RANK_7_1 = List.of(6, 2, 4, 1, 3, 5);
    static final List<Integer> GOLDEN_CHOICE_123456789_42 = List.of(2, 6);
}
