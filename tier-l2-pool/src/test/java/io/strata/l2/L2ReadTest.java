package io.strata.l2;

import static io.strata.l2.L2Cluster.T;
import static io.strata.l2.L2Cluster.chunk;
import static io.strata.l2.L2Cluster.read;
import static io.strata.l2.L2Cluster.staged;
import static io.strata.l2.L2Cluster.write;
import static io.strata.l2.L2PrefetchTest.cached;
import static io.strata.l2.L2PrefetchTest.fetch;
import static io.strata.l2.L2PrefetchTest.planner;
import static io.strata.l2.L2PrefetchTest.unpin;
import static io.strata.l2.L2PrefetchTest.writeL3;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Response;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Crc32c;
import io.strata.core.util.Futures;
import io.strata.l2.pool.L2Tier;
import io.strata.l2.pool.PrefetchClient;
import io.strata.protocol.l2.L2Message;
import io.strata.protocol.l2.L2Messages;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.Staging;
import io.strata.protocol.storage.ChunkRef;
import io.strata.testing.OpenFiles;
import io.strata.testing.Seeded;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reads served by real agents while the copies they read change: an agent serves a read outside
 * the chunk's queue, in parallel with other reads of the chunk and with its updates. A read
 * returns old or new bytes per region of a write in place, with a CRC32C of what it sends, and
 * sees every update acknowledged before it was sent; it never returns bytes of another copy
 * (one a Fetch replaced, or an eviction deleted), and never fails for it. Cached read channels
 * are closed when their copies go.
 */
class L2ReadTest {
    /** A Read sent to an agent as a client sends it: the answer and its bytes (null when not present; owned). */
    record Answer(L2Message.ReadDone done, ByteBuf bytes) {
    }

    static Answer readRaw(RpcClient rpc, InetSocketAddress agent, ChunkAddress a, long epoch, long offset, int length) {
        try (Response resp = Futures.join(rpc.call(agent, new L2Message.Read(ChunkRef.of(a), epoch, offset, length, QosClass.INTERACTIVE), Payload.NONE, T), T)) {
            L2Message.ReadDone d = resp.message(L2Message.ReadDone.class);
            return new Answer(d, d.present() ? resp.takePayload() : null);
        }
    }

    /**
     * Waits (5 s at most) until {@link OpenFiles#under} is {@code n} and returns it: a file the agent
     * syncs behind a write is open for a moment.
     */
    static long awaitOpenFds(Path dir, long n) throws IOException, InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        long now = OpenFiles.under(dir);
        while (now != n && System.nanoTime() < end) {
            TimeUnit.MILLISECONDS.sleep(10);
            now = OpenFiles.under(dir);
        }
        return now;
    }

    /** Region {@code r} of the chunk at version {@code v} (0: the first write): every byte is {@code r * 16 + v}. */
    static byte value(int region, int version) {
        return (byte) (region * 16 + version);
    }

    @Seeded
    @Test
    void concurrentReadsOfAChunkWhileStagedWritesLandSeeOldOrNewBytesPerRegionAndAValidCrc(long seed, @TempDir Path dir)
            throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2); RpcClient rpc = new RpcClient(c.ctx, L2Messages.PROTOCOL, RpcOptions.DEFAULTS)) {
            InodeAttrs f = c.newFile();
            ChunkAddress a = chunk(f, 0);
            int cs = f.layout().chunkSize();
            int regions = 8;
            int rs = cs / regions;
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            byte[] first = new byte[cs];
            for (int r = 0; r < regions; r++) {
                Arrays.fill(first, r * rs, (r + 1) * rs, value(r, 0));
            }
            write(t, a, 0, first, io);
            Staging s = c.staging(f).orElseThrow();
            InetSocketAddress holder = c.agent(Holders.of(s, 0).get(0)).address();

            // versions each region has been acknowledged at, and begun at
            AtomicIntegerArray acked = new AtomicIntegerArray(regions);
            AtomicIntegerArray begun = new AtomicIntegerArray(regions);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong reads = new AtomicLong();
            ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
            ExecutorService pool = Executors.newFixedThreadPool(5);
            try {
                List<Future<?>> readers = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    Random rnd = new Random(seed + i);
                    readers.add(pool.submit(() -> {
                        while (!stop.get()) {
                            // FUSE-sized reads of the chunk, as a kernel's readahead sends several at once, and whole ones
                            int len = rnd.nextInt(4) == 0 ? cs : 128 * 1024;
                            long off = len == cs ? 0 : (long) rnd.nextInt(cs / len) * len;
                            int[] floor = new int[regions];
                            for (int r = 0; r < regions; r++) {
                                floor[r] = acked.get(r);
                            }
                            Answer ans = readRaw(rpc, holder, a, s.epoch(), off, len);
                            reads.incrementAndGet();
                            if (!ans.done().present()) {
                                problems.add("the holder answered not present");
                                continue;
                            }
                            ByteBuf b = ans.bytes();
                            try {
                                if (b.readableBytes() != len) {
                                    problems.add("read " + b.readableBytes() + " of " + len + " bytes");
                                } else if (Crc32c.of(b) != ans.done().crc32c()) {
                                    problems.add("the bytes do not match their CRC32C");
                                } else {
                                    byte[] got8 = ByteBufUtil.getBytes(b); // one access: leak detection records each
                                    for (int p = 0; p < len; p++) {
                                        int at = (int) off + p;
                                        int r = at / rs;
                                        int got = got8[p] & 0xFF;
                                        int v = got - r * 16;
                                        if (v < 0 || v > 15) {
                                            problems.add("byte " + at + " is " + got + ": not of region " + r);
                                            break;
                                        }
                                        if (v < floor[r]) {
                                            problems.add("byte " + at + " is of version " + v + ", but " + floor[r]
                                                    + " was acknowledged before the read was sent");
                                            break;
                                        }
                                        if (v > begun.get(r)) {
                                            problems.add("byte " + at + " is of version " + v + ", never written");
                                            break;
                                        }
                                    }
                                }
                            } finally {
                                b.release();
                            }
                        }
                        return null;
                    }));
                }
                Random w = new Random(seed * 7);
                for (int v = 1; v <= 15; v++) {
                    List<Integer> order = new ArrayList<>();
                    for (int r = 0; r < regions; r++) {
                        order.add(r);
                    }
                    java.util.Collections.shuffle(order, w);
                    // let the readers read between versions, whatever the machine's speed
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (reads.get() < v * 12L && System.nanoTime() < until) {
                        TimeUnit.MILLISECONDS.sleep(1);
                    }
                    for (int r : order) {
                        byte[] region = new byte[rs];
                        Arrays.fill(region, value(r, v));
                        begun.set(r, v);
                        write(t, a, (long) r * rs, region, io);
                        acked.set(r, v);
                    }
                }
                stop.set(true);
                for (Future<?> r : readers) {
                    r.get(60, TimeUnit.SECONDS); // a read that failed fails here
                }
            } finally {
                stop.set(true);
                pool.shutdownNow();
            }
            assertThat(problems).isEmpty();
            assertThat(reads.get()).isGreaterThan(15 * 12);
            byte[] last = new byte[cs];
            for (int r = 0; r < regions; r++) {
                Arrays.fill(last, r * rs, (r + 1) * rs, value(r, 15));
            }
            assertThat(read(t, a, io)).isEqualTo(last);
        }
    }

    /** Chunk {@code i} as L3 holds it at version {@code v}: every byte {@code i * 50 + v}. */
    static byte[] content(int cs, int i, int v) {
        byte[] b = new byte[cs];
        Arrays.fill(b, (byte) (i * 50 + v));
        return b;
    }

    @Seeded
    @Test
    void aReadRacingFetchesThatReplaceOrEvictItsCopyNeverReturnsAnotherCopysBytes(long seed, @TempDir Path dir) throws Exception {
        // one agent with room for two chunks; four chunks fetched in turn at ever newer versions
        // keep replacing and evicting the copies the readers read
        try (L2Cluster c = L2Cluster.start(dir, seed, 1, x -> x.withCapacity(DataSize.ofMiB(2)).withPrefetchBandwidth(DataSize.ZERO));
             PrefetchClient p = planner(c);
             RpcClient rpc = new RpcClient(c.ctx, L2Messages.PROTOCOL, RpcOptions.DEFAULTS)) {
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            int chunks = 4;
            InetSocketAddress agent = c.agent(11).address();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong served = new AtomicLong();
            AtomicLong absent = new AtomicLong();
            ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
            ExecutorService pool = Executors.newFixedThreadPool(3);
            try {
                List<Future<?>> readers = new ArrayList<>();
                for (int n = 0; n < 3; n++) {
                    Random rnd = new Random(seed + n);
                    readers.add(pool.submit(() -> {
                        while (!stop.get()) {
                            int i = rnd.nextInt(chunks);
                            int len = rnd.nextBoolean() ? cs : 128 * 1024;
                            long off = len == cs ? 0 : (long) rnd.nextInt(cs / len) * len;
                            Answer ans = readRaw(rpc, agent, chunk(f, i), 0, off, len);
                            if (!ans.done().present()) {
                                absent.incrementAndGet();
                                continue;
                            }
                            ByteBuf b = ans.bytes();
                            try {
                                long v = ans.done().seq();
                                byte want = (byte) (i * 50 + v);
                                if (Crc32c.of(b) != ans.done().crc32c()) {
                                    problems.add("chunk " + i + ": the bytes do not match their CRC32C");
                                } else if (b.readableBytes() != len) {
                                    problems.add("chunk " + i + ": read " + b.readableBytes() + " of " + len);
                                } else {
                                    byte[] got = ByteBufUtil.getBytes(b);
                                    for (int q = 0; q < got.length; q++) {
                                        if (got[q] != want) {
                                            problems.add("chunk " + i + " at version " + v + ": byte " + (off + q) + " is " + got[q]
                                                    + ", not " + want);
                                            break;
                                        }
                                    }
                                }
                                served.incrementAndGet();
                            } finally {
                                b.release();
                            }
                        }
                        return null;
                    }));
                }
                Random w = new Random(seed * 13);
                for (int v = 1; v <= 45; v++) {
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (served.get() + absent.get() < v * 6L && System.nanoTime() < until) {
                        TimeUnit.MILLISECONDS.sleep(1);
                    }
                    int i = w.nextInt(chunks);
                    writeL3(c, chunk(f, i), content(cs, i, v));
                    L2Message.Fetched got = fetch(p, 11, chunk(f, i), v, v);
                    assertThat(got.fromL3()).as("version %d of chunk %d is new to the agent", v, i).isTrue();
                    assertThat(unpin(p, 11, v)).isEqualTo(1);
                }
                stop.set(true);
                for (Future<?> r : readers) {
                    r.get(60, TimeUnit.SECONDS);
                }
            } finally {
                stop.set(true);
                pool.shutdownNow();
            }
            assertThat(problems).as("reads that returned bytes of another copy").isEmpty();
            assertThat(served.get()).as("reads served from a copy").isPositive();
            L2Message.Status st = c.agent(11).status();
            assertThat(st.evictions()).as("copies evicted under the readers").isPositive();
            assertThat(st.diskFailed()).as("no read met a vanished file").isFalse();
        }
    }

    @Seeded
    @Test
    void readChannelsAreClosedWhenTheirCopiesAreEvictedOrDroppedAndWhenTheAgentStops(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1, x -> x.withCapacity(DataSize.ofMiB(6)).withPrefetchBandwidth(DataSize.ZERO));
             PrefetchClient p = planner(c)) {
            Path chunks = dir.resolve("agent-11").resolve("chunks");
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            long v = f.dataVersion();
            L2Tier t = c.tier();
            for (int i = 0; i < 6; i++) {
                writeL3(c, chunk(f, i), content(cs, i, 1));
                fetch(p, 11, chunk(f, i), v, 1);
            }
            assertThat(awaitOpenFds(chunks, 0)).as("fetches keep no file open").isZero();
            for (int i = 0; i < 6; i++) {
                assertThat(read(t, chunk(f, i), cached(v, List.of(11)))).isEqualTo(content(cs, i, 1));
            }
            assertThat(awaitOpenFds(chunks, 6)).as("a read channel per copy read").isEqualTo(6);

            // unpinned, two copies give way to two new ones: their channels close
            assertThat(unpin(p, 11, 1)).isEqualTo(6);
            InodeAttrs g = c.newFile();
            for (int i = 0; i < 2; i++) {
                writeL3(c, chunk(g, i), content(cs, i, 2));
                fetch(p, 11, chunk(g, i), g.dataVersion(), 2);
            }
            assertThat(c.agent(11).status().evictions()).isEqualTo(2);
            assertThat(awaitOpenFds(chunks, 4)).as("evicted copies' channels are closed").isEqualTo(4);
            for (int i = 0; i < 2; i++) {
                assertThat(read(t, chunk(g, i), cached(g.dataVersion(), List.of(11)))).isEqualTo(content(cs, i, 2));
            }
            assertThat(awaitOpenFds(chunks, 6)).isEqualTo(6);

            // the first file is deleted: the drain's sweep drops its copies, and their channels close
            Futures.join(c.meta.unlinkAsync(Caller.ROOT, InodeId.ROOT, "f1", RequestId.create(1, c.ctx.random())), T);
            Futures.join(c.cluster.meta().meta().collectGarbageAsync(), T);
            c.agent(11).drainNow();
            assertThat(c.agent(11).status().cachedChunks()).isEqualTo(2);
            assertThat(awaitOpenFds(chunks, 2)).as("dropped copies' channels are closed").isEqualTo(2);

            c.kill(11);
            assertThat(awaitOpenFds(chunks, 0)).as("a stopped agent keeps nothing open").isZero();
        }
    }
}
