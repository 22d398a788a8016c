package io.strata.l1;

import static io.strata.l1.Fixture.bytes;
import static io.strata.l1.Fixture.chunk;
import static io.strata.l1.Fixture.io;
import static io.strata.l1.Fixture.read;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.DataSize;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.util.Futures;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Damaged NVMe blocks are never returned: flipped bytes (CRC32C), a deleted or truncated block
 * file, an I/O error or a failed block write; each is dropped, counted, and the read returns the
 * right bytes from the tier below, after which the block is cached again.
 */
class NvmeCorruptionTest extends FileTierFixture {
    static final int CHUNK = 256 * 1024;
    static final int BLOCK = 16 * 1024;

    NvmeCorruptionTest() {
        super("corrupt", 5);
    }
    ChunkAddress c = chunk(21, 0, CHUNK);
    byte[] data = bytes(21, CHUNK);

    @BeforeEach
    void open() {
        Fixture.write(below, c, 0, data, io(1));
    }

    private L1Tier l1() {
        return l1(true);
    }

    /** A memory tier of one block: reads of other blocks come from NVMe (read on the caller's thread, or on the blocking pool). */
    private L1Tier l1(boolean readOnCaller) {
        L1Config c = Fixture.config("c", DataSize.ofKiB(17), DataSize.ofBytes(BLOCK), dir.resolve("nvme"), DataSize.ofMiB(4));
        return new L1Tier(ctx, c.withNvme(c.nvme().orElseThrow().withReadOnCaller(readOnCaller)), below);
    }

    private void fill() {
        try (L1Tier l1 = l1()) {
            assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
            Futures.join(l1.nvme().barrier());
            assertThat(l1.nvme().blockCount()).isEqualTo(CHUNK / BLOCK);
        }
    }

    private Path blockFile(L1Tier l1, int block) {
        return l1.nvme().path(new BlockKey(21, 1, 0, block));
    }

    @Test
    void damagedBlockFilesAreDroppedCountedAndFetchedAgain() throws Exception {
        fill();
        try (L1Tier l1 = l1()) {
            try (FileChannel ch = FileChannel.open(blockFile(l1, 3), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                ByteBuffer b = ByteBuffer.allocate(16);
                ch.read(b, 1000);
                b.flip();
                for (int i = 0; i < 16; i++) {
                    b.put(i, (byte) ~b.get(i));
                }
                ch.write(b, 1000);
            }
            Files.delete(blockFile(l1, 5));
            try (FileChannel ch = FileChannel.open(blockFile(l1, 7), StandardOpenOption.WRITE)) {
                ch.truncate(BLOCK / 2);
            }
            int before = below.reads.get();
            assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
            assertThat(below.reads.get() - before).isEqualTo(3);
            L1Metrics m = l1.metrics();
            assertThat(m.count("strata.l1.corruptions", "kind", "crc")).isEqualTo(1);
            assertThat(m.count("strata.l1.corruptions", "kind", "missing")).isEqualTo(1);
            assertThat(m.count("strata.l1.corruptions", "kind", "short")).isEqualTo(1);
            assertThat(l1.stats().corruptions()).isEqualTo(3);
            Futures.join(l1.nvme().barrier());
            assertThat(l1.nvme().blockCount()).isEqualTo(CHUNK / BLOCK); // cached again, with good files
        }
        try (L1Tier l1 = l1()) {
            int before = below.reads.get();
            assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
            assertThat(below.reads.get()).isEqualTo(before);
            assertThat(l1.stats().corruptions()).isZero();
        }
    }

    /**
     * A small read of an NVMe block reads and checks only the sub-blocks it covers (4 KiB of a
     * 16 KiB block here): damage elsewhere in the block does not touch it, and damage inside its
     * range is caught, counted and read from below.
     */
    @Test
    void smallReadsCheckOnlyTheSubBlocksTheyRead() throws Exception {
        fill();
        int sub = NvmeStore.subBlock(BLOCK);
        assertThat(sub).isEqualTo(4096);
        int base = 3 * BLOCK;
        try (L1Tier l1 = l1()) {
            try (FileChannel ch = FileChannel.open(blockFile(l1, 3), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                ByteBuffer b = ByteBuffer.allocate(1);
                ch.read(b, 100); // in the first sub-block
                b.put(0, (byte) ~b.get(0)).position(0);
                ch.write(b, 100);
            }
            int before = below.reads.get();
            assertThat(read(l1, c, base + sub + 10, 3000, io(1))).isEqualTo(java.util.Arrays.copyOfRange(data, base + sub + 10, base + sub + 3010));
            assertThat(read(l1, c, base + 2 * sub - 500, 1000, io(1))) // across two clean sub-blocks
                    .isEqualTo(java.util.Arrays.copyOfRange(data, base + 2 * sub - 500, base + 2 * sub + 500));
            assertThat(below.reads.get()).as("served from NVMe").isEqualTo(before);
            assertThat(l1.stats().corruptions()).isZero();
            assertThat(l1.stats().nvmeHits()).isEqualTo(2);
            assertThat(l1.stats().memoryBlocks()).as("small NVMe reads do not promote the block to memory").isZero();
            assertThat(read(l1, c, base + 50, 100, io(1))).isEqualTo(java.util.Arrays.copyOfRange(data, base + 50, base + 150));
            assertThat(l1.metrics().count("strata.l1.corruptions", "kind", "crc")).isEqualTo(1);
            assertThat(below.reads.get() - before).as("the damaged block fetched from below").isEqualTo(1);
        }
    }

    /** A cache written with another block size is emptied at open, and caches blocks again (its shard directories were wiped with it). */
    @Test
    void aCacheOfAnotherBlockSizeIsEmptiedAndCachesAgain() {
        fill();
        L1Config c2 = Fixture.config("c", DataSize.ofKiB(33), DataSize.ofBytes(2 * BLOCK), dir.resolve("nvme"), DataSize.ofMiB(4));
        try (L1Tier l1 = new L1Tier(ctx, c2, below)) {
            assertThat(l1.nvme().blockCount()).isZero();
            assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
            Futures.join(l1.nvme().barrier());
            assertThat(l1.nvme().blockCount()).isEqualTo(CHUNK / (2 * BLOCK));
            assertThat(l1.metrics().count("strata.l1.nvme.refused", "reason", "write-error")).isZero();
        }
    }

    /** An index value too short to hold its checksums (a damaged index) is dropped at open; the cache still opens. */
    @Test
    void aDamagedIndexValueIsDroppedAtOpen() {
        fill();
        try (org.lmdbjava.Env<ByteBuffer> env = org.lmdbjava.Env.create().setMapSize(64L << 20).setMaxDbs(2)
                .open(dir.resolve("nvme").resolve("index").toFile(), org.lmdbjava.EnvFlags.MDB_NOTLS)) {
            var blocks = env.openDbi("blocks");
            try (var txn = env.txnWrite()) {
                ByteBuffer key = new BlockKey(21, 1, 0, 3).encode(ByteBuffer.allocateDirect(24));
                blocks.put(txn, key, ByteBuffer.allocateDirect(5).put(new byte[] {1, 2, 3, 4, 5}).flip());
                txn.commit();
            }
        }
        try (L1Tier l1 = l1()) {
            assertThat(l1.nvme().blockCount()).isEqualTo(CHUNK / BLOCK - 1);
            int before = below.reads.get();
            assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
            assertThat(below.reads.get() - before).as("only the dropped block from below").isEqualTo(1);
        }
    }

    @Test
    void readErrorsAndFailedBlockWritesNeverFailTheRead() {
        fill();
        try (L1Tier l1 = l1(false)) {
            var rule = ctx.faults().arm(NvmeStore.READ, new Fault.Fail(new StrataException(Status.IO_ERROR, "injected EIO"))).times(2);
            assertThat(read(l1, c, 0, 2 * BLOCK, io(1))).isEqualTo(java.util.Arrays.copyOf(data, 2 * BLOCK));
            assertThat(rule.fired()).isEqualTo(2);
            assertThat(l1.metrics().count("strata.l1.corruptions", "kind", "io")).isEqualTo(2);
            ctx.faults().disarmAll();
            Futures.join(l1.nvme().barrier());
            // a block write that fails (disk full, EIO) leaves the block uncached, never half-indexed
            ctx.faults().arm(NvmeStore.BLOCK_WRITE, new Fault.Fail(new StrataException(Status.NO_SPACE, "injected ENOSPC")));
            Futures.join(l1.dropAllAsync(), Fixture.T);
            assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
            Futures.join(l1.nvme().barrier());
            assertThat(l1.nvme().blockCount()).isZero();
            assertThat(l1.metrics().count("strata.l1.nvme.refused", "reason", "write-error")).isEqualTo(CHUNK / BLOCK);
            ctx.faults().disarmAll();
        }
        try (var files = Files.walk(dir.resolve("nvme").resolve("blocks"))) {
            assertThat(files.filter(Files::isRegularFile).count()).as("no temporary or orphan block files").isZero();
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }
}
