package io.strata.l2;

import static io.strata.l2.L2Cluster.T;
import static io.strata.l2.L2Cluster.chunk;
import static io.strata.l2.L2Cluster.failure;
import static io.strata.l2.L2Cluster.read;
import static io.strata.l2.L2Cluster.staged;
import static io.strata.l2.L2Cluster.write;
import static io.strata.l2.L2StagingTest.bytes;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.CachedCopies;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.StageHints;
import io.strata.core.util.Futures;
import io.strata.l2.pool.L2Tier;
import io.strata.l2.pool.PrefetchClient;
import io.strata.protocol.l2.L2Message;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.Staging;
import io.strata.testing.Buffers;
import io.strata.testing.Seeded;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prefetched copies through real L2 agents over a real storage cluster and meta service: a
 * planner fetches chunks of ordinary (never staged) files into agents and pins them for a hint's
 * owner; readers given the file's {@link CachedCopies} read them from L2, and L3 whenever L2 has
 * no copy at the file's data version.
 */
class L2PrefetchTest {
    static final List<Integer> AGENTS = List.of(11, 12);

    /** Writes {@code data} to the chunk in L3 directly, as a file that is not staged is written. */
    static void writeL3(L2Cluster c, ChunkAddress a, byte[] data) {
        Futures.join(c.l3.writeAsync(a, 0, Unpooled.wrappedBuffer(data), IoOptions.DEFAULT), T);
    }

    static L2Message.Fetched fetch(PrefetchClient p, int agent, ChunkAddress a, long version, long owner) {
        return Futures.join(p.fetchAsync(agent, a, 0, version, List.of(agent), owner, QosClass.PREFETCH, T), T);
    }

    static long unpin(PrefetchClient p, int agent, long owner) {
        return Futures.join(p.unpinAsync(agent, owner, T), T);
    }

    /** A read of a file that is not staged, whose chunks a prefetch copied into {@code agents} at {@code version}. */
    static IoOptions cached(long version, List<Integer> agents) {
        return new IoOptions(version, QosClass.TRAINING_READ, Duration.ofSeconds(20))
                .withStage(StageHints.NONE.withCached(new CachedCopies(version, agents)));
    }

    static PrefetchClient planner(L2Cluster c) {
        return new PrefetchClient(c.ctx, c.cluster.routingSource(), RpcOptions.DEFAULTS);
    }

    static double count(L2Cluster c, String counter) {
        return c.ctx.meters().counter(counter).count();
    }

    @Seeded
    @Test
    void twoOwnersFetchingOneChunkReadItFromL3Once(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            byte[] data = bytes(f.layout().chunkSize(), seed);
            writeL3(c, chunk(f, 0), data);
            long v = f.dataVersion();

            CompletableFuture<L2Message.Fetched> a = p.fetchAsync(11, chunk(f, 0), 0, v, List.of(11), 1, QosClass.PREFETCH, T);
            CompletableFuture<L2Message.Fetched> b = p.fetchAsync(11, chunk(f, 0), 0, v, List.of(11), 2, QosClass.PREFETCH, T);
            List<L2Message.Fetched> both = List.of(Futures.join(a, T), Futures.join(b, T));

            assertThat(both).filteredOn(L2Message.Fetched::fromL3).as("one fetch read L3, the other found its copy")
                    .containsExactly(new L2Message.Fetched(true, data.length));
            assertThat(both).contains(new L2Message.Fetched(false, 0));
            L2Message.Status st = c.agent(11).status();
            assertThat(st.prefetchFetches()).isEqualTo(1);
            assertThat(st.prefetchBytes()).isEqualTo(data.length);
            assertThat(st.pinnedChunks()).isEqualTo(1);
            assertThat(st.pinnedBytes()).isEqualTo(data.length);
            assertThat(read(c.tier(), chunk(f, 0), cached(v, List.of(11)))).isEqualTo(data);
        }
    }

    @Seeded
    @Test
    void unpinningOneOwnerKeepsAnotherOwnersPinAndTheCopies(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            writeL3(c, chunk(f, 0), bytes(cs, seed));
            writeL3(c, chunk(f, 1), bytes(cs, seed + 1));
            long v = f.dataVersion();
            fetch(p, 11, chunk(f, 0), v, 1);
            fetch(p, 11, chunk(f, 0), v, 2);
            fetch(p, 11, chunk(f, 1), v, 1);
            assertThat(c.agent(11).status().pinnedChunks()).isEqualTo(2);

            assertThat(unpin(p, 11, 1)).as("owner 1 pinned chunks 0 and 1").isEqualTo(2);
            assertThat(c.agent(11).status().pinnedChunks()).as("owner 2 still pins chunk 0").isEqualTo(1);
            assertThat(unpin(p, 11, 1)).isZero();
            assertThat(unpin(p, 11, 2)).isEqualTo(1);
            L2Message.Status st = c.agent(11).status();
            assertThat(st.pinnedChunks()).isZero();
            assertThat(st.cachedChunks()).as("unpinned copies stay until the room is needed").isEqualTo(2);
            assertThat(st.prefetchFetches()).isEqualTo(2);
        }
    }

    @Seeded
    @Test
    void aPinnedCopyIsNeverEvictedAndAnUnpinnedOneIs(long seed, @TempDir Path dir) throws Exception {
        // one agent with room for one chunk
        try (L2Cluster c = L2Cluster.start(dir, seed, 1, a -> a.withCapacity(DataSize.ofMiB(1))); PrefetchClient p = planner(c)) {
            InodeAttrs data = c.newFile();
            int cs = data.layout().chunkSize();
            assertThat(cs).isEqualTo(1 << 20);
            byte[] inL3 = bytes(cs, seed);
            writeL3(c, chunk(data, 0), inL3);
            long v = data.dataVersion();
            fetch(p, 11, chunk(data, 0), v, 7);

            // a staged write finds the store full of a pinned copy: it goes through to L3, and its
            // fsync (durability l3) returns although no agent holds anything of the file to report
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            InodeAttrs ckpt = c.newFile();
            byte[] first = bytes(cs, seed + 1);
            write(t, chunk(ckpt, 0), 0, first, io);
            Futures.join(t.flushAsync(ckpt.id(), io), T);
            Staging s = c.staging(ckpt).orElseThrow();
            assertThat(s.overrides()).as("written through to L3").containsEntry(0, List.of());
            assertThat(s.state()).isEqualTo(Staging.State.DURABLE);
            assertThat(c.inL3(chunk(ckpt, 0))).isEqualTo(first);
            L2Message.Status st = c.agent(11).status();
            assertThat(st.refusedFull()).isPositive();
            assertThat(st.evictions()).isZero();
            assertThat(st.pinnedChunks()).isEqualTo(1);
            double hits = count(c, "strata.l2.client.cached.hit");
            assertThat(read(c.tier(), chunk(data, 0), cached(v, List.of(11)))).isEqualTo(inL3);
            assertThat(count(c, "strata.l2.client.cached.hit")).as("the pinned copy served the read").isEqualTo(hits + 1);

            // unpinned, the copy gives way to the next staged write
            assertThat(unpin(p, 11, 7)).isEqualTo(1);
            InodeAttrs ckpt2 = c.newFile();
            byte[] second = bytes(cs, seed + 2);
            write(t, chunk(ckpt2, 0), 0, second, io);
            Futures.join(t.flushAsync(ckpt2.id(), io), T);
            assertThat(c.staging(ckpt2).orElseThrow().overrides()).as("staged in L2 where it was placed").doesNotContainKey(0);
            assertThat(c.agent(11).status().evictions()).isEqualTo(1);
            double misses = count(c, "strata.l2.client.cached.miss");
            assertThat(read(c.tier(), chunk(data, 0), cached(v, List.of(11)))).as("evicted: read from L3").isEqualTo(inL3);
            assertThat(count(c, "strata.l2.client.cached.miss")).isEqualTo(misses + 1);
        }
    }

    @Seeded
    @Test
    void pinsSurviveAnAgentRestart(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            byte[][] data = {bytes(cs, seed), bytes(cs / 2, seed + 1)};
            writeL3(c, chunk(f, 0), data[0]);
            writeL3(c, chunk(f, 1), data[1]);
            long v = f.dataVersion();
            fetch(p, 11, chunk(f, 0), v, 1);
            fetch(p, 11, chunk(f, 1), v, 1);
            fetch(p, 11, chunk(f, 1), v, 2);

            c.kill(11);
            c.start(11);

            L2Message.Status st = c.agent(11).status();
            assertThat(st.pinnedChunks()).isEqualTo(2);
            assertThat(st.pinnedBytes()).isEqualTo(cs + cs / 2);
            double hits = count(c, "strata.l2.client.cached.hit");
            for (int i = 0; i < 2; i++) {
                assertThat(read(c.tier(), chunk(f, i), cached(v, List.of(11)))).isEqualTo(data[i]);
            }
            assertThat(count(c, "strata.l2.client.cached.hit")).isEqualTo(hits + 2);
            assertThat(fetch(p, 11, chunk(f, 0), v, 2)).as("still present after the restart").isEqualTo(new L2Message.Fetched(false, 0));
            assertThat(unpin(p, 11, 1)).as("owner 1's pins came back from the index").isEqualTo(2);
            assertThat(unpin(p, 11, 2)).isEqualTo(2);
            assertThat(c.agent(11).status().prefetchFetches()).as("restarted: nothing fetched since").isZero();
        }
    }

    @Seeded
    @Test
    void aReadWithCachedCopiesIsServedByTheAgentAndFallsBackToL3(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            long v = f.dataVersion();
            int n = 4;
            byte[][] fetched = new byte[n][];
            int[] placed = new int[n];
            for (int i = 0; i < n; i++) {
                fetched[i] = bytes(cs, seed + i);
                writeL3(c, chunk(f, i), fetched[i]);
                placed[i] = Holders.cachedRanking(f.id().value(), i, AGENTS).get(0);
                if (i < n - 1) { // the last chunk is never fetched
                    assertThat(fetch(p, placed[i], chunk(f, i), v, 1).fromL3()).isTrue();
                }
            }
            // L3 changes under the copies without a new data version (only the meta service makes
            // one): what a read returns then tells which tier served it
            byte[][] later = new byte[n][];
            for (int i = 0; i < n; i++) {
                later[i] = bytes(cs, seed + 100 + i);
                writeL3(c, chunk(f, i), later[i]);
            }
            L2Tier t = c.tier();
            double hits = count(c, "strata.l2.client.cached.hit");
            double misses = count(c, "strata.l2.client.cached.miss");
            for (int i = 0; i < n - 1; i++) {
                assertThat(read(t, chunk(f, i), cached(v, AGENTS))).as("chunk %d from agent %d", i, placed[i]).isEqualTo(fetched[i]);
            }
            byte[] part = Buffers.drain(Futures.join(t.readAsync(chunk(f, 1), 1000, 5000, cached(v, AGENTS)), T));
            assertThat(part).isEqualTo(Arrays.copyOfRange(fetched[1], 1000, 6000));
            assertThat(count(c, "strata.l2.client.cached.hit")).isEqualTo(hits + n);
            assertThat(read(t, chunk(f, n - 1), cached(v, AGENTS))).as("never fetched: L3").isEqualTo(later[n - 1]);
            assertThat(read(t, chunk(f, 0), cached(v + 1, AGENTS))).as("copies of another data version: L3").isEqualTo(later[0]);
            assertThat(read(t, chunk(f, 0), new IoOptions(v, QosClass.TRAINING_READ, T))).as("no cached copies: L3").isEqualTo(later[0]);
            assertThat(count(c, "strata.l2.client.cached.miss")).isEqualTo(misses + 2);

            // the agent holding chunk 0 goes down: the reader tries the other, then L3
            c.kill(placed[0]);
            assertThat(read(t, chunk(f, 0), cached(v, AGENTS))).isEqualTo(later[0]);
            assertThat(count(c, "strata.l2.client.cached.miss")).isEqualTo(misses + 3);
            StrataException down = failure(() -> fetch(p, placed[0], chunk(f, 0), v, 1));
            assertThat(down.status()).as("the planner's call fails at once").isEqualTo(Status.NOT_SERVING);
        }
    }

    @Seeded
    @Test
    void aFetchOfAChunkNeverWrittenOrShortKeepsWhatL3Has(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            byte[] shortChunk = bytes(1000, seed);
            writeL3(c, chunk(f, 0), shortChunk);
            long v = f.dataVersion();
            assertThat(fetch(p, 11, chunk(f, 0), v, 1)).isEqualTo(new L2Message.Fetched(true, 1000));
            assertThat(fetch(p, 11, chunk(f, 3), v, 1)).as("never written: L3 has nothing").isEqualTo(new L2Message.Fetched(true, 0));

            L2Tier t = c.tier();
            double hits = count(c, "strata.l2.client.cached.hit");
            assertThat(read(t, chunk(f, 0), cached(v, List.of(11)))).isEqualTo(shortChunk).isEqualTo(c.inL3(chunk(f, 0)));
            byte[] past = Buffers.drain(Futures.join(t.readAsync(chunk(f, 0), 500, 4096, cached(v, List.of(11))), T));
            assertThat(past).isEqualTo(Arrays.copyOfRange(shortChunk, 500, 1000));
            assertThat(read(t, chunk(f, 3), cached(v, List.of(11)))).isEmpty();
            assertThat(c.inL3(chunk(f, 3))).isEmpty();
            assertThat(count(c, "strata.l2.client.cached.hit")).as("all three from the agent").isEqualTo(hits + 3);
        }
    }

    @Seeded
    @Test
    void aStagedChunkIsFetchedWithItsEpochNeverZero(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            L2Tier t = c.tier();
            IoOptions io = staged(false);
            byte[] data = bytes(f.layout().chunkSize(), seed);
            write(t, chunk(f, 0), 0, data, io);
            Futures.join(t.flushAsync(f.id(), io), T);
            Staging s = c.staging(f).orElseThrow();
            assertThat(s.state()).isEqualTo(Staging.State.DURABLE);
            List<Integer> holders = Holders.of(s, 0);

            StrataException e = failure(() -> fetch(p, holders.get(0), chunk(f, 0), f.dataVersion(), 1));
            assertThat(e.status()).isEqualTo(Status.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains("staged in epoch " + s.epoch());

            for (int h : holders) {
                L2Message.Fetched warm = Futures.join(p.fetchAsync(h, chunk(f, 0), s.epoch(), 0, holders, 1, QosClass.PREFETCH, T), T);
                assertThat(warm).as("agent %d holds the staged copy", h).isEqualTo(new L2Message.Fetched(false, 0));
                assertThat(c.agent(h).status().pinnedChunks()).isEqualTo(1);
            }
            assertThat(read(c.tier(), chunk(f, 0), io)).isEqualTo(data);
        }
    }

    @Seeded
    @Test
    void aStagedWriteReplacesAPrefetchedCopyAndItsPins(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            writeL3(c, chunk(f, 0), bytes(cs, seed));
            fetch(p, 11, chunk(f, 0), f.dataVersion(), 1);
            // L3 moves on under the copy: a staged write must build on L3, never on the prefetched copy
            byte[] l3 = bytes(cs, seed + 1);
            writeL3(c, chunk(f, 0), l3);

            L2Tier t = c.tier();
            IoOptions io = staged(false);
            byte[] patch = bytes(4096, seed + 2);
            write(t, chunk(f, 0), 8192, patch, io);
            assertThat(c.agent(11).status().pinnedChunks()).as("the staged copy replaced the pinned one").isZero();
            assertThat(c.agent(11).status().stagedChunks()).isEqualTo(1);
            Futures.join(t.flushAsync(f.id(), io), T);
            byte[] expected = l3.clone();
            System.arraycopy(patch, 0, expected, 8192, patch.length);
            assertThat(c.inL3(chunk(f, 0))).isEqualTo(expected);
            assertThat(unpin(p, 11, 1)).as("no pin left").isZero();
        }
    }

    @Seeded
    @Test
    void theSweepKeepsPrefetchedCopiesOfALiveFileAndDropsThoseOfADeletedOne(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            byte[] data = bytes(f.layout().chunkSize(), seed);
            writeL3(c, chunk(f, 0), data);
            fetch(p, 11, chunk(f, 0), f.dataVersion(), 1);
            fetch(p, 11, chunk(f, 1), f.dataVersion(), 1);

            c.agent(11).drainNow(); // a full sweep: the file has no staging record, but it exists
            assertThat(c.agent(11).status().cachedChunks()).isEqualTo(2);
            assertThat(c.agent(11).status().pinnedChunks()).isEqualTo(2);

            Futures.join(c.meta.unlinkAsync(Caller.ROOT, InodeId.ROOT, "f1", RequestId.create(1, c.ctx.random())), T);
            Futures.join(c.cluster.meta().meta().collectGarbageAsync(), T);
            c.agent(11).drainNow();
            L2Message.Status st = c.agent(11).status();
            assertThat(st.cachedChunks()).as("copies of a deleted file").isZero();
            assertThat(st.pinnedChunks()).isZero();
            assertThat(unpin(p, 11, 1)).as("their pins went with them").isZero();
        }
    }

    @Seeded
    @Test
    void fetchesFromL3KeepToThePrefetchByteRate(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1, a -> a.withPrefetchBandwidth(DataSize.ofMiB(4))); PrefetchClient p = planner(c)) {
            InodeAttrs f = c.newFile();
            int n = 5;
            long start = System.nanoTime();
            List<CompletableFuture<L2Message.Fetched>> all = new java.util.ArrayList<>();
            for (int i = 0; i < n; i++) {
                all.add(p.fetchAsync(11, chunk(f, i), 0, f.dataVersion(), List.of(11), 1, QosClass.PREFETCH, T));
            }
            all.forEach(x -> Futures.join(x, T));
            long ms = (System.nanoTime() - start) / 1_000_000;
            // 5 chunks of 1 MiB at 4 MiB/s, the first at once: the last starts 0.9 s in
            assertThat(ms).isGreaterThanOrEqualTo(800);
            assertThat(c.agent(11).status().prefetchFetches()).isEqualTo(n);
        }
    }
}
