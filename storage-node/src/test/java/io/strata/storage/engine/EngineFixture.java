package io.strata.storage.engine;

import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.NodeContext;
import io.strata.core.TargetId;
import io.strata.core.fault.FaultInjector;
import io.strata.core.util.Futures;
import io.strata.testing.Buffers;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/** Opens an engine on a directory with a seeded fault injector, and writes/reads through it. */
final class EngineFixture implements AutoCloseable {
    static final AtomicLong SEQ = new AtomicLong();
    final NodeContext ctx;
    final Path dir;
    final TargetId target;
    ChunkEngine engine;

    EngineFixture(Path dir, long seed) {
        this(dir, seed, EngineOptions.DEFAULTS);
    }

    EngineFixture(Path dir, long seed, EngineOptions options) {
        this.dir = dir;
        this.target = TargetId.of(7);
        this.ctx = NodeContext.builder("engine-test").seed(seed).faults(new FaultInjector(seed)).blockingThreads(4)
                .eventLoopThreads(1).build();
        this.engine = ChunkEngine.open(target, dir, ctx, options, ctx.blocking());
    }

    void reopen() {
        engine.close();
        engine = ChunkEngine.open(target, dir, ctx, engine.options(), ctx.blocking());
    }

    /** Applies and commits (as a tail would) a WRITE; returns the new meta. */
    ChunkMeta write(ChunkId id, int chunkSize, long offset, byte[] bytes) {
        return update(id, chunkSize, new Update(UpdateKind.WRITE, offset, bytes.length, req()), Unpooled.wrappedBuffer(bytes), true);
    }

    ChunkMeta update(ChunkId id, int chunkSize, Update u, ByteBuf data, boolean commit) {
        ChunkMeta base = engine.meta(id, chunkSize);
        try {
            return Futures.join(engine.applyAsync(base, u, data, base.latestVersion() + 1, 1, commit), Duration.ofSeconds(60));
        } finally {
            data.release();
        }
    }

    static RequestId req() {
        return new RequestId(99, SEQ.incrementAndGet());
    }

    /** The committed content, read through the engine (CRC-checked). */
    byte[] read(ChunkId id, int chunkSize) {
        ChunkMeta m = engine.meta(id, chunkSize);
        return read(id, m.committed(), 0, chunkSize);
    }

    byte[] read(ChunkId id, ChunkVersion v, long offset, int length) {
        try (var ch = engine.openData(id, v)) {
            return Buffers.drain(engine.read(id, v, ch, offset, length, io.netty.buffer.PooledByteBufAllocator.DEFAULT));
        } catch (java.io.IOException e) {
            throw new RuntimeException(e);
        }
    }

    static byte[] random(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    @Override
    public void close() {
        engine.close();
        ctx.close();
    }
}
