package io.strata.l1;

import static io.strata.l1.Fixture.bytes;
import static io.strata.l1.Fixture.chunk;
import static io.strata.l1.Fixture.io;
import static io.strata.l1.Fixture.read;
import static io.strata.l1.Fixture.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.core.util.Eventually;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Write-back: absorbed small writes, read-your-writes, flush triggers, order, retries, errors that surface. */
class WriteBackTest extends FileTierFixture {
    static final int CHUNK = 64 * 1024;
    static final IoOptions WB = io(1, Fixture.writeBack(Duration.ofHours(1), 1 << 20));

    L1Tier l1;

    WriteBackTest() {
        super("wb", 11);
    }

    @BeforeEach
    void open() {
        l1 = l1(L1Config.WriteBack.DEFAULTS.withRetries(3, Duration.ofMillis(1)));
    }

    private L1Tier l1(L1Config.WriteBack wb) {
        return new L1Tier(ctx, Fixture.config("wb", DataSize.ofMiB(4), DataSize.ofKiB(4), dir.resolve("nvme"), DataSize.ofMiB(8))
                .withWriteBack(wb), below);
    }

    @AfterEach
    void close() {
        below.failChanges = null;
        l1.close();
        below.close();
        ctx.close();
    }

    private static byte[] apply(byte[] base, long offset, byte[] w) {
        byte[] out = Arrays.copyOf(base, (int) Math.max(base.length, offset + w.length));
        System.arraycopy(w, 0, out, (int) offset, w.length);
        return out;
    }

    @Test
    void smallWritesAreAbsorbedReadBackAndFlushedInOrder() {
        ChunkAddress c = chunk(50, 0, CHUNK);
        byte[] base = bytes(1, 10_000);
        write(below, c, 0, base, io(1));
        assertThat(read(l1, c, 0, CHUNK, WB)).isEqualTo(base); // cached
        int writesBefore = below.writes.get();
        byte[] expect = base;
        byte[] a = bytes(2, 3000);
        byte[] b = bytes(3, 3000);
        byte[] tail = bytes(4, 100);
        write(l1, c, 1000, a, WB);
        expect = apply(expect, 1000, a);
        write(l1, c, 2500, b, WB);      // overlaps a: the later write wins
        expect = apply(expect, 2500, b);
        write(l1, c, 20_000, tail, WB);  // beyond the end: a hole of zeros, then the bytes
        expect = apply(expect, 20_000, tail);
        assertThat(below.writes.get()).isEqualTo(writesBefore);
        FileStats s = l1.stats(InodeId.of(50));
        assertThat(s.unflushedWrites()).isEqualTo(3);
        assertThat(s.unflushedBytes()).isEqualTo(6100);
        // read-your-writes, over cached blocks and past the cached end
        assertThat(read(l1, c, 0, CHUNK, WB)).isEqualTo(expect);
        assertThat(read(l1, c, 2000, 1000, WB)).isEqualTo(Arrays.copyOfRange(expect, 2000, 3000));
        assertThat(read(l1, c, 15_000, 10_000, WB)).isEqualTo(Arrays.copyOfRange(expect, 15_000, 20_100));
        Futures.join(l1.flushAsync(InodeId.of(50), WB), Fixture.T);
        assertThat(below.content(c.id())).isEqualTo(expect);
        // a and b were merged into one write; the tail is a second one
        assertThat(below.writes.get() - writesBefore).isEqualTo(2);
        assertThat(l1.stats().unflushedBytes()).isZero();
        assertThat(read(l1, c, 0, CHUNK, WB)).isEqualTo(expect);
    }

    @Test
    void filesFlushWhenTheyReachMaxBytesOrMaxAge() {
        IoOptions bySize = io(1, Fixture.writeBack(Duration.ofHours(1), 8192));
        ChunkAddress c = chunk(51, 0, CHUNK);
        write(l1, c, 0, bytes(5, 4096), bySize);
        assertThat(below.writes.get()).isZero();
        write(l1, c, 4096, bytes(6, 4096), bySize);
        Eventually.await("flush by size", Fixture.T, () -> below.content(c.id()).length == 8192);
        IoOptions byAge = io(1, Fixture.writeBack(Duration.ofMillis(200), 1 << 20));
        ChunkAddress d = chunk(52, 0, CHUNK);
        long t0 = System.nanoTime();
        write(l1, d, 0, bytes(7, 100), byAge);
        assertThat(l1.stats().oldestUnflushed()).isLessThan(Duration.ofMillis(200));
        Eventually.await("flush by age", Fixture.T, () -> below.content(d.id()).length == 100);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThanOrEqualTo(Duration.ofMillis(190));
        Eventually.await("queue empty", Fixture.T, () -> l1.stats().unflushedWrites() == 0);
        assertThat(ctx.meters().get("strata.l1.writeback.queue.bytes").gauge().value()).isZero();
    }

    @Test
    void failedFlushesAreRetried() {
        AtomicInteger left = new AtomicInteger(2);
        below.failChanges = () -> left.getAndDecrement() > 0 ? new StrataException(Status.TIMEOUT, "injected timeout") : null;
        ChunkAddress c = chunk(53, 0, CHUNK);
        write(l1, c, 0, bytes(8, 500), WB);
        Futures.join(l1.flushAsync(InodeId.of(53), WB), Fixture.T);
        assertThat(below.content(c.id())).isEqualTo(bytes(8, 500));
        assertThat(ctx.meters().get("strata.l1.writeback.failures").counter().count()).isEqualTo(2);
    }

    @Test
    void aFlushThatKeepsFailingSurfacesOnTheNextFlushAndLosesNothing() {
        below.failChanges = () -> new StrataException(Status.NO_SPACE, "injected ENOSPC");
        ChunkAddress c = chunk(54, 0, CHUNK);
        write(l1, c, 0, bytes(9, 700), WB);
        assertThatThrownBy(() -> Futures.join(l1.flushAsync(InodeId.of(54), WB), Fixture.T))
                .isInstanceOf(StrataException.class).hasMessageContaining("ENOSPC")
                .extracting(e -> ((StrataException) e).status()).isEqualTo(Status.NO_SPACE);
        // nothing dropped: still readable here, still queued, and a later flush delivers it
        assertThat(read(l1, c, 0, 700, WB)).isEqualTo(bytes(9, 700));
        assertThat(l1.stats(InodeId.of(54)).unflushedBytes()).isEqualTo(700);
        assertThatThrownBy(() -> Futures.join(l1.flushAsync(InodeId.of(54), WB), Fixture.T)).isInstanceOf(StrataException.class);
        below.failChanges = null;
        Futures.join(l1.flushAsync(InodeId.of(54), WB), Fixture.T);
        assertThat(below.content(c.id())).isEqualTo(bytes(9, 700));
    }

    @Test
    void closeFlushesAndFailsLoudlyWhenItCannot() {
        ChunkAddress c = chunk(55, 0, CHUNK);
        write(l1, c, 0, bytes(10, 300), WB);
        l1.close();
        assertThat(below.content(c.id())).isEqualTo(bytes(10, 300));
        l1 = l1(L1Config.WriteBack.DEFAULTS.withRetries(2, Duration.ofMillis(1)));
        ChunkAddress d = chunk(56, 0, CHUNK);
        write(l1, d, 0, bytes(11, 300), WB);
        below.failChanges = () -> new StrataException(Status.IO_ERROR, "injected EIO");
        assertThatThrownBy(l1::close).isInstanceOf(StrataException.class).hasMessageContaining("inode 56");
    }

    @Test
    void truncatesRemovesAndLargeWritesKeepTheOrder() {
        ChunkAddress c = chunk(57, 0, CHUNK);
        write(l1, c, 0, bytes(12, 5000), WB);
        Futures.join(l1.truncateAsync(c, 2000, WB), Fixture.T); // flushes the absorbed write first
        assertThat(below.content(c.id())).isEqualTo(Arrays.copyOf(bytes(12, 5000), 2000));
        byte[] big = bytes(14, CHUNK);
        L1Config.WriteBack small = L1Config.WriteBack.DEFAULTS.withBuffer(DataSize.ofMiB(1), DataSize.ofKiB(16));
        l1.close();
        l1 = l1(small);
        write(l1, c, 100, bytes(13, 50), WB);
        write(l1, c, 0, big, WB);            // larger than small-write-max: goes through, after the absorbed write
        assertThat(below.content(c.id())).isEqualTo(big);
        write(l1, c, 10, bytes(15, 10), WB);
        Futures.join(l1.removeAsync(c, WB), Fixture.T);
        assertThat(below.content(c.id())).isEmpty();
        assertThat(read(l1, c, 0, CHUNK, WB)).isEmpty();
    }

    @Test
    void aFullBufferMakesWritesSynchronous() {
        l1.close();
        l1 = l1(L1Config.WriteBack.DEFAULTS.withBuffer(DataSize.ofKiB(64), DataSize.ofKiB(16)));
        for (int i = 0; i < 8; i++) {
            write(l1, chunk(60 + i, 0, CHUNK), 0, bytes(i, 16 * 1024), WB);
            assertThat(l1.stats().unflushedBytes()).isLessThanOrEqualTo(64 * 1024);
        }
        for (int i = 0; i < 8; i++) {
            assertThat(read(l1, chunk(60 + i, 0, CHUNK), 0, CHUNK, WB)).isEqualTo(bytes(i, 16 * 1024));
        }
        Futures.join(l1.dropAllAsync(), Fixture.T); // flushes first: nothing is lost
        for (int i = 0; i < 8; i++) {
            assertThat(below.content(chunk(60 + i, 0, CHUNK).id())).isEqualTo(bytes(i, 16 * 1024));
        }
    }
}
