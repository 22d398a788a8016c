package io.strata.storage;

import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import io.strata.storage.engine.ChunkEngine;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pipelined chain writes: a replica forwards an update while it stores it. Readers never go
 * back in time; a replica whose own store fails after its successor stored the version never
 * serves the older copy nor reuses the version number; a head that dies with its successor ahead
 * loses no acknowledged write.
 */
class PipelineTest {
    static final int SIZE = 1 << 16;
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20));

    @TempDir
    Path dir;

    private static void write(StorageClient c, ChunkAddress a, long value) {
        ByteBuf b = Unpooled.buffer(8).writeLong(value);
        try {
            Futures.join(c.writeAsync(a, 0, b, IO));
        } finally {
            b.release();
        }
    }

    private static long read(StorageClient c, ChunkAddress a, int node) {
        byte[] b = drain(Futures.join(c.readChunkAsync(a, 0, 8, IO, Optional.of(StorageCluster.target(node, 1)))).data());
        return b.length < 8 ? 0 : ByteBuffer.wrap(b).getLong();
    }

    private static ChunkStat stat(StorageClient c, ChunkAddress a, int node) {
        return Futures.join(c.statAsync(a, StorageCluster.target(node, 1), Duration.ofSeconds(10)));
    }

    /** Every replica on {@code nodes} ends with the same committed version, length and CRC, and no pending version. */
    private static void assertSame(StorageClient c, ChunkAddress a, int... nodes) {
        Eventually.await("no pending version left", Duration.ofSeconds(20), () -> java.util.Arrays.stream(nodes)
                .allMatch(n -> stat(c, a, n).pendingVersion() == 0));
        ChunkStat first = stat(c, a, nodes[0]);
        for (int n : nodes) {
            ChunkStat s = stat(c, a, n);
            assertThat(s.committedVersion()).as("version on node %d", n).isEqualTo(first.committedVersion());
            assertThat(s.crc32c()).as("content on node %d", n).isEqualTo(first.crc32c());
            assertThat(s.length()).isEqualTo(first.length());
        }
    }

    @Test
    void readersNeverGoBackInTimeWhileStoresLagTheirForwards() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 81).nodes(3).chains(1).start()) {
            StorageClient w = f.client("w");
            ChunkAddress a = StorageCluster.chunk(90, 0, 1, SIZE);
            write(w, a, 1);
            // the head and the middle store slowly: the tail commits each version before they hold it
            for (int n = 1; n <= 2; n++) {
                f.context(n).faults().arm(ChunkEngine.DATA_SYNC, new Fault.Delay(Duration.ofMillis(15)));
            }
            AtomicLong acked = new AtomicLong(1);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<String> violation = new AtomicReference<>();
            List<Thread> readers = new ArrayList<>();
            for (int r = 0; r < 4; r++) {
                StorageClient c = f.client("r" + r);
                Random rnd = new Random(r);
                readers.add(Thread.ofPlatform().start(() -> {
                    long seen = 0;
                    while (!stop.get() && violation.get() == null) {
                        long floor = acked.get();
                        int node = 1 + rnd.nextInt(3);
                        long v = read(c, a, node);
                        if (v < floor || v < seen) {
                            violation.set("read " + v + " from node " + node + " after " + Math.max(floor, seen) + " was acknowledged or seen");
                        }
                        seen = Math.max(seen, v);
                    }
                }));
            }
            for (long i = 2; i <= 120; i++) {
                write(w, a, i);
                acked.set(i);
            }
            stop.set(true);
            for (Thread t : readers) {
                t.join();
            }
            assertThat(violation.get()).isNull();
            f.context(1).faults().disarmAll();
            f.context(2).faults().disarmAll();
            assertSame(w, a, 1, 2, 3);
            assertThat(read(w, a, 1)).isEqualTo(120);
        }
    }

    @Test
    void aReplicaWhoseStoreFailsAfterItsForwardCatchesUpAndNeverReusesTheVersion() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 82).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(91, 0, 1, SIZE);
            write(c, a, 1);
            for (int failing = 1; failing <= 2; failing++) { // the head, then the middle
                var fault = f.context(failing).faults().arm(ChunkEngine.DATA_SYNC,
                        new Fault.Fail(new StrataException(Status.IO_ERROR, "injected: the disk refused the write"))).times(1);
                write(c, a, 10L * failing); // the client retries the failed write (same request id)
                assertThat(fault.fired()).isEqualTo(1);
                write(c, a, 10L * failing + 1); // a new write after it
                for (int n = 1; n <= 3; n++) {
                    assertThat(read(c, a, n)).as("node %d after the failure on node %d", n, failing).isEqualTo(10L * failing + 1);
                }
                assertSame(c, a, 1, 2, 3);
            }
        }
    }

    @Test
    void aHeadDyingWithItsSuccessorAheadLosesNoAcknowledgedWrite() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 83).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(92, 0, 1, SIZE);
            write(c, a, 1);
            // the head's store stalls; the middle and the tail store the version meanwhile
            f.context(1).faults().arm(ChunkEngine.DATA_SYNC, new Fault.Delay(Duration.ofSeconds(3))).times(1);
            ByteBuf b = Unpooled.buffer(8).writeLong(2);
            CompletableFuture<Void> w = c.writeAsync(a, 0, b, IO).whenComplete((x, e) -> b.release());
            Eventually.await("the tail committed version 2", Duration.ofSeconds(10), () -> stat(c, a, 3).committedVersion() == 2);
            assertThat(w).as("not acknowledged while the head has not stored it").isNotDone();
            f.kill(1);
            ResyncTest.publish(f, 2, List.of(2, 3, 1), Map.of(1, TargetState.OFFLINE));
            Futures.join(w); // the retry reaches the new head, which holds the version
            assertThat(read(c, a, 2)).isEqualTo(2);
            assertThat(read(c, a, 3)).isEqualTo(2);
            // the old head comes back behind and is synced
            f.restart(1);
            CompletableFuture<Long> synced = ResyncTest.awaitSynced(f, 1);
            ResyncTest.publish(f, 3, List.of(2, 3, 1), Map.of(1, TargetState.SYNCING));
            synced.get(30, java.util.concurrent.TimeUnit.SECONDS);
            ResyncTest.publish(f, 4, List.of(2, 3, 1), Map.of());
            assertThat(read(c, a, 1)).isEqualTo(2);
            write(c, a, 3);
            assertSame(c, a, 1, 2, 3);
        }
    }
}
