package io.strata.bench;

import static io.strata.bench.L1Bench.INODE;
import static io.strata.bench.L1Bench.IO;
import static io.strata.bench.L1Bench.chunk;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChainId;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.l3.ReadPolicy;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.l3.StorageConfig;
import io.strata.l3.StorageNode;
import io.strata.l3.engine.EngineOptions;
import io.strata.placement.ChainInfo;
import io.strata.placement.ChainTable;
import io.strata.placement.NodeInfo;
import io.strata.placement.RoutingInfo;
import io.strata.placement.StaticRoutingSource;
import io.strata.placement.TargetInfo;
import io.strata.placement.TargetState;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

/** What {@link L1Bench} runs against: three storage nodes in this JVM, and the working set as plain files (the baselines). */
final class L1BenchSupport {
    private L1BenchSupport() {
    }

    /** The bytes of chunk {@code c} of the working set (and of the baseline files). */
    static byte[] content(int c, int size) {
        byte[] b = new byte[size];
        new Random(c).nextBytes(b);
        return b;
    }

    // ---- baselines: the same bytes as plain files ----

    /** The working set as one file per chunk, read with positional FileChannel reads. */
    static final class FileSet implements AutoCloseable {
        private final FileChannel[] files;
        private final int chunk;

        private FileSet(FileChannel[] files, int chunk) {
            this.files = files;
            this.chunk = chunk;
        }

        static FileSet create(Path dir, int chunks, int chunk, boolean fsync) throws IOException {
            Files.createDirectories(dir);
            FileChannel[] fs = new FileChannel[chunks];
            for (int c = 0; c < chunks; c++) {
                Path p = dir.resolve("chunk-" + c);
                try (FileChannel w = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                    ByteBuffer b = ByteBuffer.wrap(content(c, chunk));
                    while (b.hasRemaining()) {
                        w.write(b);
                    }
                    if (fsync) {
                        w.force(false);
                    }
                }
                fs[c] = FileChannel.open(p, StandardOpenOption.READ);
            }
            return new FileSet(fs, chunk);
        }

        void read(long pos, int len, ByteBuffer dst) throws IOException {
            FileChannel ch = files[(int) (pos / chunk)];
            long off = pos % chunk;
            dst.clear().limit(len);
            while (dst.hasRemaining()) {
                int n = ch.read(dst, off + dst.position());
                if (n < 0) {
                    throw new IOException("short file");
                }
            }
        }

        @Override
        public void close() throws IOException {
            for (FileChannel f : files) {
                f.close();
            }
        }
    }

    // ---- L3: three storage nodes in this JVM ----

    static final class MiniL3 implements AutoCloseable {
        static final long SAMPLE_INODE = 100_000;
        final NodeContext[] ctx = new NodeContext[4];
        final StorageNode[] nodes = new StorageNode[4];
        final NodeContext clientCtx;
        final StorageClient client;
        final StaticRoutingSource routing = new StaticRoutingSource(RoutingInfo.EMPTY);

        MiniL3(Path dir) {
            ChainId chain = ChainId.of(1);
            for (int i = 1; i <= 3; i++) {
                ctx[i] = NodeContext.builder("bench-storage-" + i).eventLoopThreads(1).build();
                StorageConfig cfg = new StorageConfig(NodeId.of(i), List.of(new StorageConfig.Target(TargetId.of(i * 100L + 1),
                        dir.resolve("node-" + i))), EngineOptions.DEFAULTS, Duration.ofSeconds(10));
                nodes[i] = StorageNode.start(ctx[i], cfg, routing, RpcOptions.DEFAULTS, new InetSocketAddress("127.0.0.1", 0));
            }
            Map<NodeId, NodeInfo> ns = new LinkedHashMap<>();
            Map<TargetId, TargetInfo> ts = new LinkedHashMap<>();
            List<TargetId> members = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                ns.put(NodeId.of(i), new NodeInfo(NodeId.of(i), "127.0.0.1", nodes[i].address().getPort(), Map.of()));
                TargetId tid = TargetId.of(i * 100L + 1);
                ts.put(tid, new TargetInfo(tid, NodeId.of(i), TargetState.SERVING));
                members.add(tid);
            }
            routing.update(new RoutingInfo(1, ns, ts, Map.of(chain, new ChainInfo(chain, 1, members)),
                    List.of(new ChainTable(1, 1, 3, List.of(chain)))));
            clientCtx = NodeContext.builder("bench-l1-client").eventLoopThreads(1).build();
            client = new StorageClient(clientCtx, routing, RpcOptions.DEFAULTS,
                    StorageClientOptions.DEFAULTS.withReadPolicy(ReadPolicy.ROUND_ROBIN).withAttemptTimeout(Duration.ofSeconds(30)));
        }

        void load(int chunks, int chunk) {
            Semaphore inFlight = new Semaphore(8);
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (int c = 0; c < chunks; c++) {
                inFlight.acquireUninterruptibly();
                ByteBuf b = Unpooled.wrappedBuffer(content(c, chunk));
                all.add(client.writeAsync(chunk(INODE, c, chunk), 0, b, IO).whenComplete((v, e) -> {
                    b.release();
                    inFlight.release();
                }));
            }
            Futures.join(CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)));
        }

        void loadSamples(int n, int size, int chunkSize) {
            Semaphore inFlight = new Semaphore(16);
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (int s = 0; s < n; s++) {
                inFlight.acquireUninterruptibly();
                ByteBuf b = Unpooled.wrappedBuffer(content(1_000_000 + s, size));
                all.add(client.writeAsync(chunk(SAMPLE_INODE + s, 0, chunkSize), 0, b, IO).whenComplete((v, e) -> {
                    b.release();
                    inFlight.release();
                }));
            }
            Futures.join(CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)));
        }

        @Override
        public void close() {
            client.close();
            clientCtx.close();
            for (int i = 1; i <= 3; i++) {
                nodes[i].close();
                ctx[i].close();
            }
        }
    }
}
