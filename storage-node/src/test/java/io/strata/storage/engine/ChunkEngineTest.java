package io.strata.storage.engine;

import io.strata.protocol.storage.Applied;
import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Counter;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.util.Futures;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChunkEngineTest {
    static final int KIB = 1024;
    static final int MIB = 1024 * 1024;

    @TempDir
    Path dir;

    static int crc(byte[] b) {
        CRC32C c = new CRC32C();
        c.update(b);
        return (int) c.getValue();
    }

    @Test
    void writesAtAnyOffsetMatchAModelThroughReopens() throws IOException {
        long seed = new Random().nextLong();
        Random r = new Random(seed);
        try (EngineFixture f = new EngineFixture(dir, seed)) {
            int size = 256 * KIB;
            ChunkId id = ChunkId.of(5, 3);
            byte[] model = new byte[0];
            for (int step = 0; step < 60; step++) {
                int op = r.nextInt(10);
                if (op < 7) {
                    int off = r.nextInt(size);
                    int len = 1 + r.nextInt(Math.min(size - off, r.nextBoolean() ? 200 * KIB : 5000));
                    byte[] data = EngineFixture.random(r, len);
                    f.write(id, size, off, data);
                    byte[] next = Arrays.copyOf(model, Math.max(model.length, off + len));
                    System.arraycopy(data, 0, next, off, len);
                    model = next;
                } else if (op < 9) {
                    int len = r.nextInt(size + 1);
                    f.update(id, size, new Update(UpdateKind.TRUNCATE, 0, len, EngineFixture.req()), Unpooled.EMPTY_BUFFER, true);
                    model = Arrays.copyOf(model, len);
                } else {
                    f.reopen();
                }
                ChunkMeta m = f.engine.meta(id, size);
                assertThat(f.read(id, size)).as("seed %d step %d", seed, step).isEqualTo(model);
                // a chunk only ever truncated to 0 has no version at all: absent reads as empty
                assertThat(m.committedLength()).as("length, seed %d step %d", seed, step).isEqualTo(model.length);
                assertThat(m.committed() == null ? 0 : m.committed().crc()).as("chunk CRC32C, seed %d step %d", seed, step)
                        .isEqualTo(model.length == 0 ? 0 : crc(model));
                assertThat(m.dirty()).as("seed %d step %d", seed, step).isFalse();
            }
            // every superseded version's file is gone (deleted once the change was flushed)
            f.reopen();
            try (var files = Files.list(dir.resolve("chunks"))) {
                long nonEmpty = files.filter(p -> p.toFile().length() > 0).count();
                assertThat(nonEmpty).isLessThanOrEqualTo(1);
            }
        }
    }

    @Test
    void smallestAndLargestChunkSizes() {
        Random r = new Random(1);
        try (EngineFixture f = new EngineFixture(dir, 1)) {
            byte[] small = EngineFixture.random(r, 64 * KIB);
            f.write(ChunkId.of(1, 0), 64 * KIB, 0, small);
            assertThat(f.read(ChunkId.of(1, 0), 64 * KIB)).isEqualTo(small);
            byte[] big = EngineFixture.random(r, 64 * MIB);
            f.write(ChunkId.of(1, 1), 64 * MIB, 0, big);
            byte[] tail = EngineFixture.random(r, 3000);
            f.write(ChunkId.of(1, 1), 64 * MIB, 64 * MIB - 3000, tail);
            System.arraycopy(tail, 0, big, big.length - 3000, 3000);
            ChunkMeta m = f.engine.meta(ChunkId.of(1, 1), 64 * MIB);
            assertThat(m.committed().crc()).isEqualTo(crc(big));
            assertThat(f.read(ChunkId.of(1, 1), m.committed(), 64 * MIB - 5000, 5000))
                    .isEqualTo(Arrays.copyOfRange(big, big.length - 5000, big.length));
            assertThatThrownBy(() -> f.write(ChunkId.of(1, 1), 64 * MIB, 64 * MIB - 10, new byte[11]))
                    .isInstanceOf(StrataException.class).extracting(e -> ((StrataException) e).status()).isEqualTo(Status.OFFSET_OUT_OF_RANGE);
        }
    }

    @Test
    void pendingVersionStaysInvisibleUntilCommitted() {
        Random r = new Random(2);
        try (EngineFixture f = new EngineFixture(dir, 2)) {
            ChunkId id = ChunkId.of(9, 0);
            byte[] v1 = EngineFixture.random(r, 100 * KIB);
            f.write(id, MIB, 0, v1);
            byte[] patch = EngineFixture.random(r, 10);
            ChunkMeta m = f.update(id, MIB, new Update(UpdateKind.WRITE, 50, 10, EngineFixture.req()), Unpooled.wrappedBuffer(patch), false);
            assertThat(m.dirty()).isTrue();
            assertThat(m.pending().version()).isEqualTo(2);
            assertThat(f.read(id, MIB)).isEqualTo(v1);
            byte[] v2 = v1.clone();
            System.arraycopy(patch, 0, v2, 50, 10);
            assertThat(f.read(id, m.pending(), 0, MIB)).isEqualTo(v2);
            f.reopen(); // a pending version survives a restart
            ChunkMeta again = f.engine.meta(id, MIB);
            assertThat(again.pending()).isEqualTo(m.pending());
            ChunkMeta c = Futures.join(f.engine.commitAsync(again, 2, false));
            assertThat(c.dirty()).isFalse();
            assertThat(f.read(id, MIB)).isEqualTo(v2);
            assertThat(f.engine.meta(id, MIB).versionOf(m.pending().request())).contains(2L);
        }
    }

    @Test
    void removeLeavesATombstoneAndVersionsKeepCounting() {
        try (EngineFixture f = new EngineFixture(dir, 3)) {
            ChunkId id = ChunkId.of(3, 3);
            f.write(id, MIB, 0, new byte[]{1, 2, 3});
            ChunkMeta m = f.update(id, MIB, new Update(UpdateKind.REMOVE, 0, 0, EngineFixture.req()), Unpooled.EMPTY_BUFFER, true);
            assertThat(m.committed().removed()).isTrue();
            assertThat(f.read(id, MIB)).isEmpty();
            ChunkMeta again = f.write(id, MIB, 10, new byte[]{4});
            assertThat(again.committedVersion()).isEqualTo(3);
            assertThat(f.read(id, MIB)).isEqualTo(new byte[]{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4});
        }
    }

    @Test
    void flippedByteIsReportedAsCorruptionAndCounted() throws IOException {
        try (EngineFixture f = new EngineFixture(dir, 4)) {
            ChunkId id = ChunkId.of(4, 0);
            byte[] data = EngineFixture.random(new Random(4), 300 * KIB);
            ChunkMeta m = f.write(id, MIB, 0, data);
            try (RandomAccessFile raf = new RandomAccessFile(f.engine.dataPath(m.committed()).toFile(), "rw")) {
                raf.seek(200 * KIB + 17);
                int b = raf.read();
                raf.seek(200 * KIB + 17);
                raf.write(b ^ 0x40);
            }
            // a read of other blocks still works; one touching the bad block fails
            assertThat(f.read(id, m.committed(), 0, 64 * KIB)).isEqualTo(Arrays.copyOf(data, 64 * KIB));
            assertThatThrownBy(() -> f.read(id, m.committed(), 190 * KIB, 20 * KIB))
                    .isInstanceOf(StrataException.class).extracting(e -> ((StrataException) e).status()).isEqualTo(Status.CHUNK_CORRUPT);
            Counter c = f.ctx.meters().find("strata.storage.corruptions").counter();
            assertThat(c.count()).isEqualTo(1.0);
        }
    }

    @Test
    void ioErrorFailsTheWriteAndKeepsTheOldVersion() {
        try (EngineFixture f = new EngineFixture(dir, 5)) {
            ChunkId id = ChunkId.of(6, 1);
            byte[] v1 = EngineFixture.random(new Random(5), 70 * KIB);
            f.write(id, MIB, 0, v1);
            var rule = f.ctx.faults().arm(ChunkEngine.DATA_SYNC, new Fault.Fail(new StrataException(Status.IO_ERROR, "injected EIO")));
            assertThatThrownBy(() -> f.write(id, MIB, 10, new byte[5000]))
                    .isInstanceOf(StrataException.class).extracting(e -> ((StrataException) e).status()).isEqualTo(Status.IO_ERROR);
            f.ctx.faults().disarm(rule);
            rule = f.ctx.faults().arm(GroupCommitter.META_COMMIT, new Fault.Fail(new StrataException(Status.IO_ERROR, "injected LMDB failure")));
            assertThatThrownBy(() -> f.write(id, MIB, 10, new byte[5000]))
                    .isInstanceOf(StrataException.class).extracting(e -> ((StrataException) e).status()).isEqualTo(Status.IO_ERROR);
            f.ctx.faults().disarm(rule);
            assertThat(f.read(id, MIB)).isEqualTo(v1);
            assertThat(f.engine.meta(id, MIB).committedVersion()).isEqualTo(1);
            f.reopen();
            assertThat(f.read(id, MIB)).isEqualTo(v1);
            // and the engine still works
            f.write(id, MIB, 0, new byte[]{9});
            assertThat(f.read(id, MIB)[0]).isEqualTo((byte) 9);
        }
    }

    @Test
    void concurrentWritesShareMetadataFlushes() {
        try (EngineFixture f = new EngineFixture(dir, 6)) {
            Random r = new Random(6);
            List<CompletableFuture<ChunkMeta>> all = new ArrayList<>();
            List<io.netty.buffer.ByteBuf> bufs = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                ChunkId id = ChunkId.of(100, i);
                io.netty.buffer.ByteBuf b = Unpooled.wrappedBuffer(EngineFixture.random(r, 4 * KIB));
                bufs.add(b);
                all.add(f.engine.applyAsync(ChunkMeta.absent(id, MIB), new Update(UpdateKind.WRITE, 0, 4 * KIB, EngineFixture.req()),
                        b, 1, 1, true));
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
            bufs.forEach(io.netty.buffer.ByteBuf::release);
            double batches = f.ctx.meters().find("strata.storage.fsync.batches").counter().count();
            assertThat(batches).as("64 concurrent writes committed in fewer metadata flushes").isLessThan(64);
            assertThat(f.engine.scan()).hasSize(64);
        }
    }

    @Test
    void aSecondProcessCannotOpenTheSameTarget() {
        try (EngineFixture f = new EngineFixture(dir, 8)) {
            assertThatThrownBy(() -> ChunkEngine.open(f.target, dir, f.ctx, EngineOptions.DEFAULTS, f.ctx.blocking()))
                    .hasMessageContaining("in use");
            assertThatThrownBy(() -> ChunkEngine.open(io.strata.core.TargetId.of(8), dir, f.ctx, EngineOptions.DEFAULTS, f.ctx.blocking()))
                    .hasMessageContaining("holds target 7");
        }
    }

    @Test
    void metaRoundTripsThroughItsStoredForm() {
        ChunkId id = ChunkId.of(-5L, 77);
        ChunkVersion c = new ChunkVersion(4, 17, 70_000, 123, new int[]{1, 2}, false, new RequestId(1, 2));
        ChunkVersion p = new ChunkVersion(5, 18, 0, 0, new int[0], true, new RequestId(3, 4));
        ChunkMeta m = new ChunkMeta(id, MIB, 9, c, p, List.of(new Applied(new RequestId(3, 4), 5)));
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(m.encodedSize());
        m.encode(b);
        assertThat(b.hasRemaining()).isFalse();
        b.flip();
        assertThat(ChunkMeta.decode(id, b)).isEqualTo(m);
        java.nio.ByteBuffer cut = java.nio.ByteBuffer.wrap(Arrays.copyOf(b.array(), b.capacity() - 3));
        assertThatThrownBy(() -> ChunkMeta.decode(id, cut)).isInstanceOf(StrataException.class);
    }
}
