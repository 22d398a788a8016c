package io.strata.l1;

import static io.strata.l1.Fixture.chunk;
import static io.strata.l1.Fixture.io;
import static io.strata.l1.Fixture.read;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.DataSize;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.util.Futures;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A training epoch's single pass must not wipe the hot set: a hot set read several times, then a
 * scan of many times the cache's size read once, then the hot set again: every hot block is
 * still served by L1 (an LRU cache of the same size would have lost all of them).
 */
class ScanResistanceTest extends FileTierFixture {
    static final int BLOCK = 4096;
    static final int CHUNK = 64 * 1024;
    static final int PER_CHUNK = CHUNK / BLOCK;

    ScanResistanceTest() {
        super("scan", 3);
    }

    @BeforeEach
    void open() {
        // 2,100 blocks of data: block n of the data set is block n % 16 of chunk n / 16 of inode 100
        byte[] chunkData = new byte[CHUNK];
        for (int c = 0; c < 2100 / PER_CHUNK + 1; c++) {
            Arrays.fill(chunkData, (byte) c);
            Fixture.write(below, chunk(100, c, CHUNK), 0, chunkData, io(1));
        }
    }

    private static ChunkAddress chunkOf(int block) {
        return chunk(100, block / PER_CHUNK, CHUNK);
    }

    private void readBlock(L1Tier l1, int block) {
        byte[] got = read(l1, chunkOf(block), (long) (block % PER_CHUNK) * BLOCK, BLOCK, io(1));
        assertThat(got).hasSize(BLOCK);
        assertThat(got[0]).isEqualTo((byte) (block / PER_CHUNK));
    }

    @Test
    void memoryTierKeepsTheHotSetThroughAScan() {
        // memory for 64 blocks; a hot set of 32; a scan of 2,000
        long memory = 64L * (BLOCK + MemoryTier.OVERHEAD);
        try (L1Tier l1 = new L1Tier(ctx, Fixture.config("mem", DataSize.ofBytes(memory), DataSize.ofBytes(BLOCK), null, null), below)) {
            for (int pass = 0; pass < 5; pass++) {
                for (int b = 0; b < 32; b++) {
                    readBlock(l1, b);
                }
            }
            for (int b = 100; b < 2100; b++) {
                readBlock(l1, b);
            }
            int before = below.reads.get();
            for (int b = 0; b < 32; b++) {
                readBlock(l1, b);
            }
            assertThat(below.reads.get() - before).as("hot blocks fetched again after the scan").isZero();
            assertThat(l1.stats().memoryBlocks()).isLessThanOrEqualTo(64);
        }
    }

    @Test
    void nvmeTierKeepsTheHotSetThroughAScan() {
        // memory for 16 blocks, NVMe for 64; a hot set of 48 (more than memory holds); a scan of 2,000
        long memory = 16L * (BLOCK + MemoryTier.OVERHEAD);
        long nvme = 64L * NvmeStore.footprint(BLOCK);
        L1Config cfg = Fixture.config("nvme", DataSize.ofBytes(memory), DataSize.ofBytes(BLOCK), dir.resolve("nvme"), DataSize.ofBytes(nvme));
        try (L1Tier l1 = new L1Tier(ctx, cfg, below)) {
            for (int pass = 0; pass < 4; pass++) {
                for (int b = 0; b < 48; b++) {
                    readBlock(l1, b);
                }
                Futures.join(l1.nvme().barrier());
            }
            for (int b = 100; b < 2100; b++) {
                readBlock(l1, b);
                if (b % 100 == 0) {
                    Futures.join(l1.nvme().barrier());
                }
            }
            Futures.join(l1.nvme().barrier());
            assertThat(l1.nvme().usedBytes()).isLessThanOrEqualTo(nvme);
            assertThat(l1.metrics().count("strata.l1.nvme.refused", "reason", "admission")).as("scan blocks refused").isGreaterThan(1000);
            int before = below.reads.get();
            for (int b = 0; b < 48; b++) {
                readBlock(l1, b);
            }
            assertThat(below.reads.get() - before).as("hot blocks fetched again after the scan").isZero();
        }
    }
}
