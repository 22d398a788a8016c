package io.strata.storage;

import io.strata.harness.StorageCluster;
import io.strata.l3.ReadPolicy;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.TierKind;
import io.strata.core.util.Futures;
import io.strata.storage.engine.EngineOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The L3 Tier client: routing, retries, read policies, parallel chains. */
class StorageClientTest {
    static final int SIZE = 256 * 1024;
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20));

    @TempDir
    Path dir;
    StorageCluster f;

    @BeforeEach
    void start() {
        f = StorageCluster.builder(dir, 41).nodes(3).chains(3).engine(EngineOptions.DEFAULTS).start();
    }

    @AfterEach
    void stop() {
        f.close();
    }

    @Test
    void writesToDifferentChainsRunInParallelAndReadBack() {
        StorageClient c = f.client("c", StorageClientOptions.DEFAULTS);
        assertThat(c.kind()).isEqualTo(TierKind.L3);
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        List<ByteBuf> bufs = new ArrayList<>();
        for (int chain = 1; chain <= 3; chain++) {
            for (int i = 0; i < 4; i++) {
                ByteBuf b = Unpooled.wrappedBuffer(new byte[]{(byte) chain, (byte) i});
                bufs.add(b);
                writes.add(c.writeAsync(StorageCluster.chunk(50, chain * 10 + i, chain, SIZE), 0, b, IO));
            }
        }
        CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).join();
        bufs.forEach(ByteBuf::release);
        for (int chain = 1; chain <= 3; chain++) {
            for (int i = 0; i < 4; i++) {
                assertThat(drain(Futures.join(c.readAsync(StorageCluster.chunk(50, chain * 10 + i, chain, SIZE), 0, SIZE, IO))))
                        .isEqualTo(new byte[]{(byte) chain, (byte) i});
            }
        }
        // every chain's head took its writes: heads differ per chain
        for (int n = 1; n <= 3; n++) {
            assertThat(f.context(n).meters().find("strata.storage.requests").tag("op", "write").counter().count()).isEqualTo(4.0);
        }
    }

    @Test
    void readPoliciesSpreadOrPin() {
        ChunkAddress a = StorageCluster.chunk(51, 0, 1, SIZE);
        StorageClient w = f.client("w", StorageClientOptions.DEFAULTS);
        ByteBuf b = Unpooled.wrappedBuffer(new byte[]{1});
        Futures.join(w.writeAsync(a, 0, b, IO));
        b.release();
        Set<Long> versionsSeen = new HashSet<>();
        StorageClient rr = f.client("rr", StorageClientOptions.DEFAULTS.withReadPolicy(ReadPolicy.ROUND_ROBIN));
        double[] before = reads();
        for (int i = 0; i < 9; i++) {
            StorageClient.ChunkRead r = Futures.join(rr.readChunkAsync(a, 0, 1, IO, Optional.empty()));
            versionsSeen.add(r.version());
            r.data().release();
        }
        double[] after = reads();
        for (int n = 1; n <= 3; n++) {
            assertThat(after[n] - before[n]).as("round robin: node %d served 3 of 9", n).isEqualTo(3.0);
        }
        StorageClient local = f.client("local", StorageClientOptions.DEFAULTS.withReadPolicy(ReadPolicy.PREFER_LOCAL).withLocalHost("h2"));
        before = reads();
        for (int i = 0; i < 5; i++) {
            Futures.join(local.readAsync(a, 0, 1, IO)).release();
        }
        after = reads();
        assertThat(after[2] - before[2]).as("prefer-local reads stay on host h2").isEqualTo(5.0);
        assertThat(versionsSeen).containsExactly(1L);
    }

    @Test
    void byChunkReadsEachChunkFromOneReplicaAndSpreadsTheChunks() {
        StorageClient w = f.client("w2", StorageClientOptions.DEFAULTS);
        List<ChunkAddress> chunks = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            ChunkAddress a = StorageCluster.chunk(52, i, 1, SIZE);
            ByteBuf b = Unpooled.wrappedBuffer(new byte[]{(byte) i});
            Futures.join(w.writeAsync(a, 0, b, IO));
            b.release();
            chunks.add(a);
        }
        StorageClient c1 = f.client("bc1", StorageClientOptions.DEFAULTS.withReadPolicy(ReadPolicy.BY_CHUNK));
        StorageClient c2 = f.client("bc2", StorageClientOptions.DEFAULTS.withReadPolicy(ReadPolicy.BY_CHUNK));
        int[] servedBy = new int[4];
        for (ChunkAddress a : chunks) {
            double[] before = reads();
            for (int i = 0; i < 3; i++) {
                Futures.join(c1.readAsync(a, 0, 1, IO)).release();
                Futures.join(c2.readAsync(a, 0, 1, IO)).release();
            }
            double[] after = reads();
            int node = 0;
            for (int n = 1; n <= 3; n++) {
                if (after[n] - before[n] > 0) {
                    assertThat(after[n] - before[n]).as("chunk %s: both clients read it from node %d only", a.id(), n).isEqualTo(6.0);
                    node = n;
                }
            }
            servedBy[node]++;
        }
        for (int n = 1; n <= 3; n++) {
            assertThat(servedBy[n]).as("node %d serves some of the 30 chunks", n).isBetween(3, 20);
        }
    }

    double[] reads() {
        double[] out = new double[4];
        for (int n = 1; n <= 3; n++) {
            var c = f.context(n).meters().find("strata.storage.requests").tag("op", "read").counters();
            out[n] = c.stream().mapToDouble(x -> x.count()).sum();
        }
        return out;
    }

    @Test
    void aReadMovesOnWhenAReplicaIsDown() {
        ChunkAddress a = StorageCluster.chunk(52, 0, 1, SIZE);
        StorageClient c = f.client("c", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofMillis(500)));
        ByteBuf b = Unpooled.wrappedBuffer(new byte[]{4, 2});
        Futures.join(c.writeAsync(a, 0, b, IO));
        b.release();
        f.kill(2);
        for (int i = 0; i < 3; i++) {
            ByteBuf r = Futures.join(c.readChunkAsync(a, 0, 2, IO, Optional.of(TargetId.of(201)))).data();
            assertThat(drain(r)).isEqualTo(new byte[]{4, 2});
        }
    }

    @Test
    void aWriteWhoseAnswerIsLostIsRetriedWithTheSameRequestId() {
        ChunkAddress a = StorageCluster.chunk(53, 0, 1, SIZE);
        StorageClient c = f.client("c", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofMillis(600)));
        // the head applies the write, then its answer to the client is lost once
        var lose = f.context(1).faults().arm(FaultPoint.RPC_SEND, new Fault.Drop()).when(s -> s.message().equals("WriteChunk")).times(1);
        ByteBuf b = Unpooled.wrappedBuffer(new byte[]{7});
        Futures.join(c.writeAsync(a, 1000, b, IO));
        b.release();
        assertThat(lose.fired()).isEqualTo(1);
        for (int n : f.members(1)) {
            assertThat(Futures.join(c.statAsync(a, StorageCluster.target(n, 1), Duration.ofSeconds(5))).committedVersion())
                    .as("applied once on node %d", n).isEqualTo(1);
        }
        assertThat(f.context(1).meters().find("strata.storage.requests").tag("op", "write").tag("status", "OK").counter().count())
                .as("the head answered the retry too").isEqualTo(2.0);
    }

    @Test
    void aWriteThatRunsOutOfTimeReportsTheLastAnswerAServerGave() {
        ChunkAddress a = StorageCluster.chunk(54, 0, 1, SIZE);
        StorageClient c = f.client("c", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofMillis(400)));
        IoOptions shortly = IO.withTimeout(Duration.ofSeconds(2));
        // the head answers once that the chunk is busy, then every answer is lost until the write's time is up
        var busy = f.context(1).faults().arm(FaultPoint.RPC_SEND, new Fault.Fail(new StrataException(Status.CHUNK_BUSY,
                "injected: the chunk is busy"))).when(s -> s.message().equals("WriteChunk")).times(1);
        var lost = f.context(1).faults().arm(FaultPoint.RPC_SEND, new Fault.Drop()).when(s -> s.message().equals("WriteChunk"));
        ByteBuf b = Unpooled.wrappedBuffer(new byte[]{1});
        try {
            assertThatThrownBy(() -> Futures.join(c.writeAsync(a, 0, b, shortly)))
                    .as("the server's answer, not the timeout of the last attempt")
                    .satisfies(e -> assertThat(StrataException.wrap(StrataException.unwrapCompletion(e)).status())
                            .isEqualTo(Status.CHUNK_BUSY))
                    .hasMessageContaining("injected: the chunk is busy");
            assertThat(busy.fired()).isEqualTo(1);
            assertThat(lost.fired()).as("attempts whose answers were lost after it").isGreaterThanOrEqualTo(1);
            // no server ever answered: the timeout is all there is to report
            assertThatThrownBy(() -> Futures.join(c.writeAsync(a, 0, b, shortly)))
                    .satisfies(e -> assertThat(StrataException.wrap(StrataException.unwrapCompletion(e)).status())
                            .isEqualTo(Status.TIMEOUT));
        } finally {
            b.release();
            f.context(1).faults().disarmAll();
        }
    }
}
