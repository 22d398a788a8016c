package io.strata.l1;

import static io.strata.l1.Fixture.bytes;
import static io.strata.l1.Fixture.chunk;
import static io.strata.l1.Fixture.io;
import static io.strata.l1.Fixture.read;
import static io.strata.l1.Fixture.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.CacheHints;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.Tier;
import io.strata.core.tier.WrittenContent;
import io.strata.core.util.Futures;
import io.strata.testing.Buffers;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The read and write-through paths over memory and NVMe: hits, chunk ends, data versions, invalidation, strict bypass. */
class L1TierTest extends FileTierFixture {
    static final int CHUNK = 64 * 1024;
    static final DataSize BLOCK = DataSize.ofKiB(4);

    L1Tier l1;

    L1TierTest() {
        super("l1", 1);
    }

    @BeforeEach
    void open() {
        l1 = new L1Tier(ctx, Fixture.config("t", DataSize.ofMiB(4), BLOCK, dir.resolve("nvme"), DataSize.ofMiB(8)), below);
    }

    @AfterEach
    void close() {
        l1.close();
        below.close();
        ctx.close();
    }

    @Test
    void secondReadIsServedByL1() {
        ChunkAddress c = chunk(7, 0, CHUNK);
        byte[] data = bytes(1, 20_000);
        write(below, c, 0, data, io(1));
        assertThat(read(l1, c, 100, 10_000, io(1))).isEqualTo(Arrays.copyOfRange(data, 100, 10_100));
        int fetched = below.reads.get();
        assertThat(fetched).isEqualTo(3); // blocks 0..2
        assertThat(read(l1, c, 0, 20_000, io(1))).isEqualTo(data);
        // blocks 0..2 hit memory; 3 and 4 were fetched (4 is short: the chunk ends there)
        assertThat(below.reads.get()).isEqualTo(fetched + 2);
        assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
        assertThat(below.reads.get()).isEqualTo(fetched + 2);
        L1Stats s = l1.stats();
        assertThat(s.memoryHits()).isEqualTo(8);
        assertThat(s.belowReads()).isEqualTo(5);
        // the same figures as meters, by tier
        var m = ctx.meters();
        assertThat(m.get("strata.l1.hits").tags("tier", "memory", "cache", "t").counter().count()).isEqualTo(8);
        assertThat(m.get("strata.l1.hits").tags("tier", "below").counter().count()).isEqualTo(5);
        assertThat(m.get("strata.l1.misses").tags("tier", "memory").counter().count()).isEqualTo(5);
        assertThat(m.get("strata.l1.misses").tags("tier", "nvme").counter().count()).isEqualTo(5);
        assertThat(m.get("strata.l1.read.bytes").tags("tier", "below").counter().count()).isEqualTo(20_000);
        assertThat(m.get("strata.l1.cached.blocks").tags("tier", "memory").gauge().value()).isEqualTo(5);
        Futures.join(l1.drainAsync(), Fixture.T);
        assertThat(m.get("strata.l1.cached.blocks").tags("tier", "nvme").gauge().value()).isEqualTo(5);
        assertThat(m.get("strata.l1.writeback.oldest.age").gauge().value()).isZero();
    }

    @Test
    void readsStopAtTheChunksEndAndMissingChunksReadEmpty() {
        ChunkAddress c = chunk(7, 1, CHUNK);
        byte[] data = bytes(2, 8192); // exactly two blocks: the third is empty
        write(below, c, 0, data, io(1));
        assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
        assertThat(read(l1, c, 8192, 100, io(1))).isEmpty();
        assertThat(read(l1, c, 9000, 100, io(1))).isEmpty();
        assertThat(read(l1, c, 8000, 1000, io(1))).isEqualTo(Arrays.copyOfRange(data, 8000, 8192));
        assertThat(read(l1, chunk(8, 0, CHUNK), 0, 4096, io(1))).isEmpty();
        assertThat(read(l1, c, 0, 0, io(1))).isEmpty();
    }

    @Test
    void aNewDataVersionNeverSeesOldBlocks() {
        ChunkAddress c = chunk(9, 0, CHUNK);
        byte[] v1 = bytes(3, 5000);
        byte[] v2 = bytes(4, 7000);
        write(below, c, 0, v1, io(1));
        assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(v1);
        write(below, c, 0, v2, io(2)); // another client rewrote the file: its data version is now 2
        assertThat(read(l1, c, 0, CHUNK, io(2))).isEqualTo(v2);
        // a handle still open at version 1 may keep its cached view (close-to-open), never a mix
        byte[] old = read(l1, c, 0, 4096, io(1));
        assertThat(old).isEqualTo(Arrays.copyOf(v1, 4096));
    }

    @Test
    void writesGoThroughAndInvalidateTheChunk() {
        ChunkAddress c = chunk(10, 0, CHUNK);
        byte[] data = bytes(5, 6000);
        write(below, c, 0, data, io(1));
        assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
        Futures.join(l1.nvme().barrier());
        assertThat(l1.nvme().blockCount()).isEqualTo(2);
        // extend the chunk beyond its cached end block: the short block 1 must not survive
        byte[] tail = bytes(6, 100);
        write(l1, c, 9000, tail, io(1));
        byte[] expect = Arrays.copyOf(data, 9100);
        System.arraycopy(tail, 0, expect, 9000, 100);
        assertThat(below.content(c.id())).isEqualTo(expect);
        assertThat(l1.nvme().blockCount()).isZero(); // dropped durably before the write went below
        assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(expect);
        Futures.join(l1.truncateAsync(c, 50, io(1)), Fixture.T);
        assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(Arrays.copyOf(data, 50));
        Futures.join(l1.removeAsync(c, io(1)), Fixture.T);
        assertThat(read(l1, c, 0, CHUNK, io(1))).isEmpty();
    }

    @Test
    void strictFilesBypassTheCache() {
        ChunkAddress c = chunk(11, 0, CHUNK);
        IoOptions strict = io(1, CacheHints.BYPASS);
        write(l1, c, 0, bytes(7, 9000), strict);
        int before = below.reads.get();
        for (int i = 0; i < 3; i++) {
            assertThat(read(l1, c, 0, 9000, strict)).isEqualTo(bytes(7, 9000));
        }
        assertThat(below.reads.get()).isEqualTo(before + 3);
        assertThat(l1.stats(io.strata.core.InodeId.of(11)).memoryBlocks()).isZero();
        assertThat(ctx.meters().get("strata.l1.bypass").counter().count()).isEqualTo(4);
    }

    @Test
    void badRangesAreRefusedAndWriteNothing() {
        ChunkAddress c = chunk(12, 0, CHUNK);
        ByteBuf b = Unpooled.wrappedBuffer(new byte[100]);
        try {
            assertThatThrownBy(() -> Futures.join(l1.writeAsync(c, CHUNK - 50, b, io(1)), Fixture.T))
                    .isInstanceOf(StrataException.class).extracting(e -> ((StrataException) e).status()).isEqualTo(Status.OFFSET_OUT_OF_RANGE);
            assertThatThrownBy(() -> Futures.join(l1.writeAsync(c, CHUNK - 50, b, io(1, Fixture.writeBack(java.time.Duration.ofSeconds(5), 1 << 20))), Fixture.T))
                    .isInstanceOf(StrataException.class);
        } finally {
            b.release();
        }
        assertThatThrownBy(() -> Futures.join(l1.readAsync(c, -1, 10, io(1)), Fixture.T)).isInstanceOf(StrataException.class);
        assertThat(below.writes.get()).isZero();
        assertThat(l1.stats().unflushedBytes()).isZero();
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "small miss: {0}")
    @org.junit.jupiter.params.provider.EnumSource(L1Config.SmallMiss.class)
    void concurrentMissesOfOneBlockShareOneFetch(L1Config.SmallMiss smallMiss) throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        Gated gated = new Gated(below, gate, ctx.blocking());
        try (L1Tier l = new L1Tier(ctx, Fixture.config("g", DataSize.ofMiB(4), BLOCK, null, null).withSmallMiss(smallMiss), gated)) {
            ChunkAddress c = chunk(13, 0, CHUNK);
            byte[] data = bytes(8, 4096);
            write(below, c, 0, data, io(1));
            List<CompletableFuture<ByteBuf>> reads = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                reads.add(l.readAsync(c, i * 100, 100, io(1)));
            }
            gate.countDown();
            for (int i = 0; i < 16; i++) {
                byte[] got = Buffers.drain(Futures.join(reads.get(i), Fixture.T));
                assertThat(got).isEqualTo(Arrays.copyOfRange(data, i * 100, i * 100 + 100));
            }
            // the first read starts at the block: it loads the block (under either rule), the other 15 share it
            assertThat(gated.reads.get()).isEqualTo(1);
        }
    }

    @Test
    void aSmallMissFetchesOnlyItsBytesAndTheWholeBlockWhenThatBlockMissesAgain() {
        DataSize block = DataSize.ofKiB(64);
        ChunkAddress c = chunk(15, 0, CHUNK);
        byte[] data = bytes(10, CHUNK);
        write(below, c, 0, data, io(1));
        CountingTier counting = new CountingTier(below);
        try (L1Tier l = new L1Tier(ctx, Fixture.config("r", DataSize.ofMiB(4), block, dir.resolve("nvme-r"), DataSize.ofMiB(8)), counting)) {
            assertThat(read(l, c, 5000, 1000, io(1))).isEqualTo(Arrays.copyOfRange(data, 5000, 6000));
            assertThat(counting.readLength.get()).as("the first miss moves its own bytes").isEqualTo(1000);
            assertThat(read(l, c, 30_000, 4096, io(1))).isEqualTo(Arrays.copyOfRange(data, 30_000, 34_096));
            assertThat(counting.readLength.get()).as("its first range cost a block (64 KiB at least): the next miss loads it whole").isEqualTo(1000 + CHUNK);
            assertThat(read(l, c, 60_000, 500, io(1))).isEqualTo(Arrays.copyOfRange(data, 60_000, 60_500));
            assertThat(counting.reads.get()).as("then it is cached").isEqualTo(2);
            assertThat(ctx.meters().get("strata.l1.range.reads").tag("cache", "r").counter().count()).isEqualTo(1);

            // a write elsewhere gives the file a new data version: its blocks, and its first misses, start afresh
            assertThat(read(l, c, 100, 100, io(2))).isEqualTo(Arrays.copyOfRange(data, 100, 200));
            assertThat(counting.readLength.get()).isEqualTo(1000 + CHUNK + 100);
            // a small miss at a block's start (a small file read whole, a file read in order) loads the block at once
            assertThat(read(l, c, 0, 4096, io(3))).isEqualTo(Arrays.copyOfRange(data, 0, 4096));
            assertThat(counting.readLength.get()).isEqualTo(1000 + CHUNK + 100 + CHUNK);
            assertThat(read(l, c, 9000, 100, io(3))).isEqualTo(Arrays.copyOfRange(data, 9000, 9100));
            assertThat(counting.readLength.get()).as("then cached").isEqualTo(1000 + CHUNK + 100 + CHUNK);
        }
        CountingTier blocks = new CountingTier(below);
        try (L1Tier l = new L1Tier(ctx, Fixture.config("b", DataSize.ofMiB(4), block, null, null).withSmallMiss(L1Config.SmallMiss.BLOCK),
                blocks)) {
            assertThat(read(l, c, 5000, 1000, io(1))).isEqualTo(Arrays.copyOfRange(data, 5000, 6000));
            assertThat(blocks.readLength.get()).as("block: the whole block at the first miss").isEqualTo(CHUNK);
            assertThat(read(l, c, 30_000, 4096, io(1))).isEqualTo(Arrays.copyOfRange(data, 30_000, 34_096));
            assertThat(blocks.reads.get()).isEqualTo(1);
        }
    }

    @Test
    void readsAreReadOnlyViewsThatSurviveEviction() {
        ChunkAddress c = chunk(14, 0, CHUNK);
        write(below, c, 0, bytes(9, 4096), io(1));
        ByteBuf held = Futures.join(l1.readAsync(c, 0, 4096, io(1)), Fixture.T);
        try {
            assertThat(held.isReadOnly()).isTrue();
            Futures.join(l1.dropAllAsync(), Fixture.T);
            byte[] got = new byte[4096];
            held.getBytes(held.readerIndex(), got);
            assertThat(got).isEqualTo(bytes(9, 4096));
        } finally {
            held.release();
        }
        assertThat(l1.stats().memoryBlocks()).isZero();
    }

    @Test
    void aMemoryTierLargerThanDirectMemoryIsRefusedAtOpen() {
        long direct = io.netty.util.internal.PlatformDependent.maxDirectMemory();
        L1Config huge = Fixture.config("huge", DataSize.ofBytes(direct), BLOCK, null, null);
        assertThatThrownBy(() -> new L1Tier(ctx, huge, below)).isInstanceOf(io.strata.config.ConfigException.class)
                .hasMessageContaining("MaxDirectMemorySize");
    }

    @Test
    void closedTierRefusesWork() {
        l1.close();
        assertThatThrownBy(() -> Futures.join(l1.readAsync(chunk(1, 0, CHUNK), 0, 1, io(1)), Fixture.T))
                .isInstanceOf(StrataException.class).extracting(e -> ((StrataException) e).status()).isEqualTo(Status.SHUTTING_DOWN);
    }

    @Test
    void aFileItsClientPublishedIsKeptBlockByBlockAsItsNewVersion() {
        WrittenContent w = l1.facet(WrittenContent.class).orElseThrow();
        assertThat(w.maxBytes()).as("a sixteenth of its 4 MiB of memory").isEqualTo(256 * 1024);
        InodeId inode = new InodeId(31);
        byte[] data = bytes(31, CHUNK + 5000); // chunk 0 whole, then 4096 + 904 bytes of chunk 1
        ChunkAddress c0 = chunk(31, 0, CHUNK);
        ChunkAddress c1 = chunk(31, 1, CHUNK);
        write(below, c0, 0, Arrays.copyOf(data, CHUNK), io(1));
        write(below, c1, 0, Arrays.copyOfRange(data, CHUNK, data.length), io(1));
        w.published(inode, CHUNK, Unpooled.wrappedBuffer(data), io(2));
        assertThat(ctx.meters().get("strata.l1.written.kept.bytes").counter().count()).isEqualTo(data.length);
        assertThat(read(l1, c0, 0, CHUNK, io(2))).isEqualTo(Arrays.copyOf(data, CHUNK));
        assertThat(read(l1, c1, 0, CHUNK, io(2))).isEqualTo(Arrays.copyOfRange(data, CHUNK, data.length));
        assertThat(read(l1, c1, 4000, 200, io(2))).isEqualTo(Arrays.copyOfRange(data, CHUNK + 4000, CHUNK + 4200));
        assertThat(below.reads.get()).as("every block of version 2 was in memory").isZero();
        assertThat(read(l1, c0, 0, 4096, io(1))).as("version 1 was not touched: fetched").isEqualTo(Arrays.copyOf(data, 4096));
        assertThat(below.reads.get()).isEqualTo(1);

        // strict files are never cached, nor is a file larger than the tier takes
        w.published(new InodeId(32), CHUNK, Unpooled.wrappedBuffer(bytes(32, 100)), io(1, CacheHints.BYPASS));
        w.published(new InodeId(33), CHUNK, Unpooled.wrappedBuffer(new byte[w.maxBytes() + 1]), io(1));
        assertThat(ctx.meters().get("strata.l1.written.kept.bytes").counter().count()).isEqualTo(data.length);
    }

    /** A tier whose reads wait for a gate (to line up concurrent misses); {@code reads} counts those that passed it. */
    static final class Gated extends CountingTier {
        private final CountDownLatch gate;
        private final java.util.concurrent.Executor executor;

        Gated(Tier inner, CountDownLatch gate, java.util.concurrent.Executor executor) {
            super(inner);
            this.gate = gate;
            this.executor = executor;
        }

        @Override
        public CompletableFuture<ByteBuf> readAsync(ChunkAddress chunk, long offset, int length, IoOptions options) {
            return CompletableFuture.runAsync(() -> {
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, executor).thenCompose(v -> super.readAsync(chunk, offset, length, options));
        }
    }
}
