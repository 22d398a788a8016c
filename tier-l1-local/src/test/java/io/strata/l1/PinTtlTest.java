package io.strata.l1;

import static io.strata.l1.Fixture.chunk;
import static io.strata.l1.Fixture.io;
import static io.strata.l1.Fixture.read;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.fault.FaultInjector;
import io.strata.core.time.ManualClock;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Pin and TTL from the policy (CacheHints): pinned blocks outlive eviction and restarts; idle blocks leave after their TTL. */
class PinTtlTest extends FileTierFixture {
    static final int BLOCK = 4096;
    static final int CHUNK = 64 * 1024;

    ManualClock clock = new ManualClock();

    PinTtlTest() {
        super("pin", 9);
    }

    /** On the manual clock, so that pins and TTLs expire when the test says. */
    @Override
    NodeContext newContext(String name, long seed) {
        return NodeContext.builder(name).clock(clock).seed(seed).faults(new FaultInjector(seed))
                .eventLoopThreads(1).blockingThreads(2).build();
    }

    @BeforeEach
    void open() {
        for (int c = 0; c < 8; c++) {
            Fixture.write(below, chunk(40, c, CHUNK), 0, Fixture.bytes(c, CHUNK), io(1));
            Fixture.write(below, chunk(41, c, CHUNK), 0, Fixture.bytes(100 + c, CHUNK), io(1));
        }
    }

    private L1Config config() {
        // memory for 4 blocks, NVMe for 24
        return Fixture.config("pin", DataSize.ofBytes(4 * (BLOCK + MemoryTier.OVERHEAD)), DataSize.ofBytes(BLOCK),
                dir.resolve("nvme"), DataSize.ofBytes(24 * NvmeStore.footprint(BLOCK)));
    }

    @Test
    void pinnedBlocksSurviveHotTrafficAndRestarts() {
        IoOptions pin = io(1, Fixture.pinned(true, Optional.empty()));
        try (L1Tier l1 = new L1Tier(ctx, config(), below)) {
            for (int b = 0; b < 8; b++) {
                read(l1, chunk(40, 0, CHUNK), (long) b * BLOCK, BLOCK, pin);
            }
            Futures.join(l1.nvme().barrier());
            // other data, read often enough to beat any unpinned block in admission
            for (int pass = 0; pass < 4; pass++) {
                for (int c = 0; c < 8; c++) {
                    read(l1, chunk(41, c, CHUNK), 0, CHUNK, io(1));
                }
                Futures.join(l1.nvme().barrier());
            }
            FileStats s = l1.stats(InodeId.of(40));
            assertThat(s.nvmeBlocks()).isEqualTo(8);
            assertThat(s.pinnedBytes()).isEqualTo(8L * BLOCK);
            assertThat(l1.nvme().usedBytes()).isLessThanOrEqualTo(24 * NvmeStore.footprint(BLOCK));
        }
        try (L1Tier l1 = new L1Tier(ctx, config(), below)) {
            assertThat(l1.stats(InodeId.of(40)).pinnedBytes()).isEqualTo(8L * BLOCK);
            int before = below.reads.get();
            for (int b = 0; b < 8; b++) {
                assertThat(read(l1, chunk(40, 0, CHUNK), (long) b * BLOCK, BLOCK, pin))
                        .isEqualTo(java.util.Arrays.copyOfRange(Fixture.bytes(0, CHUNK), b * BLOCK, (b + 1) * BLOCK));
            }
            assertThat(below.reads.get()).isEqualTo(before);
            // unpinning (the policy changed): the blocks become ordinary
            for (int b = 0; b < 8; b++) {
                read(l1, chunk(40, 0, CHUNK), (long) b * BLOCK, BLOCK, io(1));
            }
            assertThat(l1.stats(InodeId.of(40)).pinnedBytes()).isZero();
        }
    }

    @Test
    void pinnedBytesNeverExceedTheCapacity() {
        IoOptions pin = io(1, Fixture.pinned(true, Optional.empty()));
        try (L1Tier l1 = new L1Tier(ctx, config(), below)) {
            for (int c = 0; c < 2; c++) {
                read(l1, chunk(40, c, CHUNK), 0, CHUNK, pin); // 32 blocks pinned, room for 24
                Futures.join(l1.nvme().barrier());
            }
            assertThat(l1.nvme().pinnedBytes()).isEqualTo(24L * NvmeStore.footprint(BLOCK));
            assertThat(l1.metrics().count("strata.l1.nvme.refused", "reason", "capacity")).isEqualTo(8);
        }
    }

    @Test
    void idleBlocksLeaveAfterTheirTtl() {
        IoOptions ttl = io(1, Fixture.pinned(false, Optional.of(Duration.ofSeconds(10))));
        try (L1Tier l1 = new L1Tier(ctx, config(), below)) {
            read(l1, chunk(40, 0, CHUNK), 0, 2 * BLOCK, ttl);
            Futures.join(l1.nvme().barrier());
            assertThat(l1.stats(InodeId.of(40)).nvmeBlocks()).isEqualTo(2);
            clock.advance(Duration.ofSeconds(6));
            int before = below.reads.get();
            read(l1, chunk(40, 0, CHUNK), 0, 2 * BLOCK, ttl); // a use: idle time starts again
            assertThat(below.reads.get()).isEqualTo(before);
            clock.advance(Duration.ofSeconds(6));
            Futures.join(l1.sweepAsync(), Fixture.T);
            assertThat(l1.stats(InodeId.of(40)).nvmeBlocks()).isEqualTo(2);
            clock.advance(Duration.ofSeconds(5));
            Futures.join(l1.sweepAsync(), Fixture.T);
            FileStats s = l1.stats(InodeId.of(40));
            assertThat(s.nvmeBlocks()).isZero();
            assertThat(s.memoryBlocks()).isZero();
            read(l1, chunk(40, 0, CHUNK), 0, 2 * BLOCK, ttl);
            assertThat(below.reads.get()).isEqualTo(before + 2);
        }
    }
}
