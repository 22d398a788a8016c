package io.strata.l1;

import static io.strata.l1.Fixture.chunk;
import static io.strata.l1.Fixture.io;
import static io.strata.l1.Fixture.read;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.DataSize;
import io.strata.core.util.Futures;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The NVMe tier never fills the disk: with a disk whose free space shrinks as the cache writes
 * (and when something else takes space), the cache stops writing at the free-space floor, and
 * gives space back when the disk's free space falls under it. The disk is simulated by a free
 * space function (the real one would need a small file system mounted for the test); every
 * byte the cache keeps comes off it.
 */
class DiskFloorTest extends FileTierFixture {
    static final int BLOCK = 64 * 1024;
    static final int CHUNK = 1024 * 1024;
    static final long FLOOR = 8L << 20;

    DiskFloorTest() {
        super("floor", 7);
    }

    @BeforeEach
    void open() {
        for (int c = 0; c < 8; c++) {
            Fixture.write(below, chunk(30, c, CHUNK), 0, Fixture.bytes(c, CHUNK), io(1));
        }
    }

    @Test
    void theCacheStopsAtTheFloorAndGivesSpaceBack() {
        AtomicLong others = new AtomicLong(); // bytes other programs took on the disk
        long disk = FLOOR + (3L << 20);       // 3 MiB above the floor when the cache is empty
        L1Tier[] holder = new L1Tier[1];
        L1Config cfg = Fixture.config("floor", DataSize.ofMiB(1), DataSize.ofBytes(BLOCK), dir.resolve("nvme"), DataSize.ofGiB(1));
        cfg = cfg.withNvme(cfg.nvme().orElseThrow().withMinFree(DataSize.ofBytes(FLOOR)));
        java.util.function.LongSupplier free = () -> disk - others.get() - (holder[0] == null ? 0 : holder[0].nvme().usedBytes());
        try (L1Tier l1 = new L1Tier(ctx, cfg, below, free)) {
            holder[0] = l1;
            for (int c = 0; c < 8; c++) {
                assertThat(read(l1, chunk(30, c, CHUNK), 0, CHUNK, io(1))).isEqualTo(Fixture.bytes(c, CHUNK));
                Futures.join(l1.nvme().barrier());
                assertThat(free.getAsLong()).as("free space after caching chunk %d", c).isGreaterThanOrEqualTo(FLOOR);
            }
            assertThat(l1.nvme().usedBytes()).isGreaterThan(2L << 20).isLessThanOrEqualTo(3L << 20);
            assertThat(l1.metrics().count("strata.l1.nvme.refused", "reason", "disk-floor")).isGreaterThan(0);
            // another program takes 2 MiB: the next sweep gives it back
            others.set(2L << 20);
            Futures.join(l1.sweepAsync(), Fixture.T);
            assertThat(free.getAsLong()).isGreaterThanOrEqualTo(FLOOR);
            assertThat(l1.nvme().usedBytes()).isLessThanOrEqualTo(1L << 20);
            assertThat(l1.metrics().count("strata.l1.evictions", "tier", "nvme", "cause", "disk-floor")).isGreaterThan(0);
            // reads stay correct whatever the cache could keep
            for (int c = 0; c < 8; c++) {
                assertThat(read(l1, chunk(30, c, CHUNK), 0, CHUNK, io(1))).isEqualTo(Fixture.bytes(c, CHUNK));
            }
            Futures.join(l1.nvme().barrier());
            assertThat(free.getAsLong()).isGreaterThanOrEqualTo(FLOOR);
        }
    }
}
