package io.strata.l2;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The ranking a prefetch places by and its readers look up is the placement function's (docs/internals/l2-placement.md). */
class HoldersTest {
    @Test
    void theCachedRankingIsThePlacementRankingWhateverTheOrderOfAgents() {
        assertThat(Holders.cachedRanking(7, 0, List.of(1, 2, 3, 4, 5, 6))).containsExactly(6, 2, 1, 5, 4, 3);
        assertThat(Holders.cachedRanking(7, 1, List.of(4, 6, 1, 3, 2, 5))).containsExactly(6, 2, 4, 1, 3, 5);
        assertThat(Holders.cachedRanking(7, 0, List.of(3, 1))).containsExactly(1, 3);
    }
}
