package io.strata.bench.jmh;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.NodeContext;
import io.strata.core.TargetId;
import io.strata.core.util.Futures;
import io.strata.storage.engine.ChunkEngine;
import io.strata.storage.engine.ChunkMeta;
import io.strata.storage.engine.EngineOptions;
import io.strata.protocol.storage.RequestId;
import io.strata.storage.engine.Update;
import io.strata.protocol.storage.UpdateKind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.Txn;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Chunk index lookup in the L3 chunk engine ({@link ChunkEngine#find}: an LMDB read transaction
 * and the metadata decode) over 10,000 chunks, against the raw baseline of an lmdbjava get of
 * the same keys (values of about the same size, not decoded) in a plain LMDB database, in the
 * same run.
 *
 * <p>Run: {@code bin/strata bench jmh ChunkIndex}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ChunkIndexBenchmark {
    static final int CHUNKS = 10_000;
    static final int VALUE_BYTES = 88;

    private Path dir;
    private NodeContext ctx;
    private ChunkEngine engine;
    private Env<ByteBuffer> rawEnv;
    private Dbi<ByteBuffer> rawDbi;
    private final List<ChunkId> ids = new ArrayList<>();

    @State(Scope.Thread)
    public static class Cursor {
        int next;
        final ByteBuffer key = ByteBuffer.allocateDirect(64);
    }

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Files.createTempDirectory("strata-jmh-index");
        ctx = NodeContext.builder("jmh").eventLoopThreads(1).build();
        engine = ChunkEngine.open(TargetId.of(1), dir.resolve("target"), ctx, EngineOptions.DEFAULTS, ctx.blocking());
        ByteBuf data = Unpooled.directBuffer(4096).writeZero(4096);
        List<CompletableFuture<ChunkMeta>> writes = new ArrayList<>();
        for (int i = 0; i < CHUNKS; i++) {
            ChunkId id = ChunkId.of(1 + i / 64, i % 64);
            ids.add(id);
            writes.add(engine.applyAsync(ChunkMeta.absent(id, 64 * 1024), new Update(UpdateKind.WRITE, 0, 4096,
                    new RequestId(1, i + 1)), data, 1, 1, true));
            if (writes.size() == 256) {
                writes.forEach(Futures::join);
                writes.clear();
            }
        }
        writes.forEach(Futures::join);
        data.release();

        Files.createDirectories(dir.resolve("raw"));
        rawEnv = Env.create().setMapSize(256L << 20).setMaxDbs(1).open(dir.resolve("raw").toFile());
        rawDbi = rawEnv.openDbi("raw", DbiFlags.MDB_CREATE);
        // the engine's encoding of a 4 KiB chunk written once (ChunkMeta.encodedSize: one version, one block CRC, one request id)
        ByteBuffer value = ByteBuffer.allocateDirect(VALUE_BYTES);
        try (Txn<ByteBuffer> w = rawEnv.txnWrite()) {
            ByteBuffer key = ByteBuffer.allocateDirect(64);
            for (ChunkId id : ids) {
                key.clear();
                ChunkMeta.key(id, key);
                value.clear();
                rawDbi.put(w, key, value);
            }
            w.commit();
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        engine.close();
        rawEnv.close();
        ctx.close();
        try (var paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Benchmark
    public ChunkMeta engineFind(Cursor c) {
        return engine.find(ids.get(c.next++ % CHUNKS)).orElseThrow();
    }

    @Benchmark
    public int rawLmdbGet(Cursor c) {
        ChunkId id = ids.get(c.next++ % CHUNKS);
        c.key.clear();
        ChunkMeta.key(id, c.key);
        try (Txn<ByteBuffer> txn = rawEnv.txnRead()) {
            return rawDbi.get(txn, c.key).remaining();
        }
    }
}
