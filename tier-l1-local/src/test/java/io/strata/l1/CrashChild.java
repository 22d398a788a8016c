package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.CacheHints;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Futures;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.protocol.routing.RoutingCodec;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.placement.StaticRoutingSource;
import io.strata.harness.StorageCluster;
import io.strata.testing.Buffers;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;

/**
 * A client process for L1's crash tests: L1 over a real L3 storage client (the storage nodes run
 * in the test's JVM; their routing comes in a file). The test kills it with SIGKILL, or it halts
 * itself where an armed fault point fires.
 *
 * <ul>
 * <li>{@code fill DIR POINT}: reads chunks 0..3 of inode 500 (they end up on NVMe), writes
 * {@code DIR/filled}, arms a crash at {@code POINT} ("none": no crash), reads chunks 4..7, writes
 * {@code DIR/done} and waits to be killed.</li>
 * <li>{@code writeback DIR SEED}: a stream of small writes with write-back to {@link #FILES}
 * files; after each completed {@code flushAsync(file)} it appends "file count c0 c1 c2 c3" to
 * {@code DIR/promised} (fsync'ed): the first {@code count} writes of that file are at L3, and
 * {@code ci} writes of file i had been issued. Runs until killed.</li>
 * </ul>
 */
public final class CrashChild {
    static final int CHUNK = 256 * 1024;
    static final int BLOCK = 16 * 1024;
    static final int FILES = 4;
    static final int WB_CHUNK = 64 * 1024;
    static final IoOptions WB_IO = new IoOptions(1, QosClass.INTERACTIVE, Duration.ofSeconds(20),
            new CacheHints(true, true, Duration.ofMillis(30), 16 * 1024, false, Optional.empty()));

    private CrashChild() {
    }

    static Path routingFile(Path dir) {
        return dir.resolve("routing.bin");
    }

    static void writeRouting(RoutingInfo r, Path dir) throws IOException {
        ByteBuf b = Unpooled.buffer();
        try {
            RoutingCodec.encode(r, b);
            byte[] bytes = new byte[b.readableBytes()];
            b.readBytes(bytes);
            Files.write(routingFile(dir), bytes);
        } finally {
            b.release();
        }
    }

    static L1Config config(Path nvme) {
        return new L1Config("crash", DataSize.ofKiB(64), DataSize.ofBytes(BLOCK), Duration.ofHours(1),
                Optional.of(L1Config.Nvme.at(nvme, DataSize.ofMiB(64)).withMinFree(DataSize.ZERO)), L1Config.WriteBack.DEFAULTS);
    }

    /** Byte {@code i} of the data of chunk {@code c} of the fill test's file. */
    static byte[] fillData(int c) {
        byte[] b = new byte[CHUNK];
        new Random(1000 + c).nextBytes(b);
        return b;
    }

    /** Write {@code n} (0-based) of file {@code f} in the write-back test: offset and bytes. */
    record Op(int offset, byte[] data) {
    }

    static Op op(long seed, int f, int n) {
        Random r = new Random(seed * 31 + f * 1_000_003L + n);
        int len = 1 + r.nextInt(2048);
        int offset = r.nextInt(WB_CHUNK - len);
        byte[] d = new byte[len];
        r.nextBytes(d);
        return new Op(offset, d);
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Path dir = Path.of(args[1]);
        ByteBuf rb = Unpooled.wrappedBuffer(Files.readAllBytes(routingFile(dir)));
        RoutingInfo routing = RoutingCodec.decode(rb);
        rb.release();
        long seed = mode.equals("writeback") ? Long.parseLong(args[2]) : 1;
        NodeContext ctx = NodeContext.builder("crash-child").seed(seed).faults(new FaultInjector(seed)).eventLoopThreads(1)
                .blockingThreads(4).build();
        StorageClient l3 = new StorageClient(ctx, new StaticRoutingSource(routing), RpcOptions.DEFAULTS, StorageClientOptions.DEFAULTS);
        L1Tier l1 = new L1Tier(ctx, config(dir.resolve("nvme")), l3);
        if (mode.equals("fill")) {
            fill(l1, ctx, dir, args[2]);
        } else {
            writeBack(l1, dir, seed);
        }
        Thread.sleep(Long.MAX_VALUE);
    }

    private static void fill(L1Tier l1, NodeContext ctx, Path dir, String point) throws IOException {
        IoOptions io = new IoOptions(1, QosClass.INTERACTIVE, Duration.ofSeconds(20));
        for (int c = 0; c < 4; c++) {
            readChunk(l1, c, io);
        }
        Futures.join(l1.nvme().barrier());
        touch(dir.resolve("filled"));
        if (!point.equals("none")) {
            ctx.faults().arm(FaultPoint.of(point), new Fault.Crash()).times(1);
        }
        for (int c = 4; c < 8; c++) {
            readChunk(l1, c, io);
        }
        Futures.join(l1.nvme().barrier());
        touch(dir.resolve("done"));
    }

    static ChunkAddress fillChunk(int c) {
        return StorageCluster.chunk(500, c, 1, CHUNK);
    }

    private static void readChunk(L1Tier l1, int c, IoOptions io) {
        if (!java.util.Arrays.equals(Buffers.drain(Futures.join(l1.readAsync(fillChunk(c), 0, CHUNK, io))), fillData(c))) {
            throw new IllegalStateException("chunk " + c + " read back wrong");
        }
    }

    private static void writeBack(L1Tier l1, Path dir, long seed) throws IOException {
        Random r = new Random(seed);
        int[] count = new int[FILES];
        try (FileChannel promised = FileChannel.open(dir.resolve("promised"), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND)) {
            for (int step = 0; ; step++) {
                int f = r.nextInt(FILES);
                Op op = op(seed, f, count[f]);
                ByteBuf data = Unpooled.wrappedBuffer(op.data());
                Futures.join(l1.writeAsync(wbChunk(f), op.offset(), data, WB_IO));
                data.release();
                count[f]++;
                if (step % 25 == 24) {
                    int g = r.nextInt(FILES);
                    int before = count[g];
                    Futures.join(l1.flushAsync(InodeId.of(600 + g), WB_IO));
                    StringBuilder line = new StringBuilder().append(g).append(' ').append(before);
                    for (int k = 0; k < FILES; k++) {
                        line.append(' ').append(count[k]);
                    }
                    promised.write(java.nio.ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.US_ASCII)));
                    promised.force(false);
                }
            }
        }
    }

    static ChunkAddress wbChunk(int f) {
        return StorageCluster.chunk(600 + f, 0, 1, WB_CHUNK);
    }

    private static void touch(Path p) throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ch.force(true);
        }
    }

}
