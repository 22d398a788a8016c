package io.strata.namespace;

import io.strata.protocol.meta.Layout;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.ChainId;
import io.strata.core.InodeId;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Chain choice version 1 is a contract: these golden layouts were computed from the written
 * specification (docs/internals/keyspace.md) by a separate implementation and must never change.
 * A new algorithm is a new version.
 */
class ChainChooserTest {
    static ChainTables.Table table(int n) {
        List<ChainId> cs = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            cs.add(ChainId.of(100 + i));
        }
        return new ChainTables.Table(1, 1, 3, cs);
    }

    static List<Integer> ids(Layout l) {
        return l.chains().stream().map(ChainId::value).toList();
    }

    @Test
    void version1GoldenLayouts() {
        ChainTables.Table t = table(10);
        assertThat(ids(ChainChooser.choose(InodeId.of(2), t, 1 << 20, 4))).containsExactly(109, 110, 101, 108);
        assertThat(ids(ChainChooser.choose(InodeId.of(3), t, 1 << 20, 4))).containsExactly(101, 103, 102, 110);
        assertThat(ids(ChainChooser.choose(InodeId.of(1000), t, 1 << 20, 4))).containsExactly(108, 107, 106, 109);
        assertThat(ids(ChainChooser.choose(InodeId.of(123456789L), t, 1 << 20, 4))).containsExactly(102, 103, 101, 104);
        assertThat(ids(ChainChooser.choose(InodeId.of(-1L), t, 1 << 20, 4))).containsExactly(106, 107, 105, 104);
        assertThat(ids(ChainChooser.choose(InodeId.of(42), t, 1 << 20, 10)))
                .containsExactly(105, 101, 107, 106, 109, 104, 108, 110, 102, 103);
        Layout l = ChainChooser.choose(InodeId.of(2), t, 1 << 20, 4);
        assertThat(l.baseIndex()).isEqualTo(7);
        assertThat(l.seed()).isEqualTo(0x76f64d661c584761L);
        assertThat(l.chooserVersion()).isEqualTo(1);
        assertThat(l.tableId()).isEqualTo(1);
    }

    @Test
    void aLayoutUsesDistinctChainsAndIsRecomputable() {
        ChainTables.Table t = table(16);
        for (long ino = 2; ino < 500; ino++) {
            Layout l = ChainChooser.choose(InodeId.of(ino), t, 4 << 20, 8);
            assertThat(new HashSet<>(l.chains())).hasSize(8);
            assertThat(ChainChooser.recompute(l, t)).isEqualTo(l.chains());
            assertThat(l.chainOf(9)).isEqualTo(l.chains().get(1));
        }
        // width beyond the table is capped at the table's size
        assertThat(ChainChooser.choose(InodeId.of(7), table(3), 1 << 20, 64).stripeWidth()).isEqualTo(3);
    }

    @Test
    void filesSpreadEvenlyOverTheTable() {
        ChainTables.Table t = table(12);
        int[] firstChunk = new int[12];
        int files = 12_000;
        for (long ino = 2; ino < 2 + files; ino++) {
            firstChunk[ChainChooser.choose(InodeId.of(ino), t, 1 << 20, 4).chains().get(0).value() - 101]++;
        }
        for (int c : firstChunk) {
            assertThat(c).isBetween(files / 12 * 8 / 10, files / 12 * 12 / 10);
        }
    }
}
