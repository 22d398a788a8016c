package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a store must free before a write, against its capacity and the file system's free-space floor. */
class SpaceBudgetTest {
    @TempDir
    Path dir;

    @Test
    void theNeedIsTheLargerOfCapacityAndFloor() {
        SpaceBudget b = new SpaceBudget(1000, 500, () -> 0);
        SpaceBudget.Need roomy = b.need(100, 100, 10_000);
        assertThat(roomy.bytes()).isLessThanOrEqualTo(0);
        assertThat(roomy.floorBound()).isFalse();

        SpaceBudget.Need full = b.need(950, 100, 10_000); // 50 over capacity, floor far away
        assertThat(full.overCapacity()).isEqualTo(50);
        assertThat(full.bytes()).isEqualTo(50);
        assertThat(full.floorBound()).isFalse();

        SpaceBudget.Need disk = b.need(100, 100, 550); // 50 under the floor after the write
        assertThat(disk.underFloor()).isEqualTo(50);
        assertThat(disk.bytes()).isEqualTo(50);
        assertThat(disk.floorBound()).isTrue();

        SpaceBudget.Need both = b.need(950, 100, 520); // 50 over capacity, 80 under the floor
        assertThat(both.bytes()).isEqualTo(80);
        assertThat(both.floorBound()).isTrue();

        SpaceBudget.Need giveBack = b.need(800, 0, 300); // a sweep: 200 below the floor
        assertThat(giveBack.bytes()).isEqualTo(200);
        assertThat(giveBack.underFloor()).isEqualTo(200);
    }

    @Test
    void theFileSystemsUsableSpaceIsRead() throws IOException {
        SpaceBudget b = new SpaceBudget(1 << 20, 0, SpaceBudget.usableSpace(dir));
        assertThat(b.usable()).isPositive();
        assertThat(b.capacity()).isEqualTo(1 << 20);
    }
}
