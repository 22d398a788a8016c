package io.strata.storage;

import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.storage.engine.ChunkEngine;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code replicas.min-ack}: a chain with fewer writable replicas than a write's minimum holds the
 * write and then refuses it, so nothing is acknowledged from a single replica whose loss would
 * take the bytes with it; and a retry of a write the chain already applied is acknowledged only
 * once the minimum of replicas hold it, not merely once that many replicas serve.
 */
class MinAckTest {
    static final int SIZE = 1 << 16;
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20));

    @TempDir
    Path dir;

    private static CompletableFuture<Void> write(StorageClient c, ChunkAddress a, byte value, IoOptions io) {
        ByteBuf b = Unpooled.wrappedBuffer(new byte[] {value, value, value});
        return c.writeAsync(a, 0, b, io).whenComplete((x, e) -> b.release());
    }

    private static byte first(StorageClient c, ChunkAddress a, int node) {
        byte[] b = drain(Futures.join(c.readChunkAsync(a, 0, 3, IO, Optional.of(StorageCluster.target(node, 1)))).data());
        return b.length == 0 ? 0 : b[0];
    }

    private static long committed(StorageClient c, ChunkAddress a, int node) {
        return Futures.join(c.statAsync(a, StorageCluster.target(node, 1), Duration.ofSeconds(10))).committedVersion();
    }

    /** The writes {@code node} answered with {@code status}. */
    private static double writes(StorageCluster f, int node, Status status) {
        return writes(f.context(node).meters(), status);
    }

    /** The writes a node whose meters are {@code meters} answered with {@code status} (its meters outlive it). */
    private static double writes(io.micrometer.core.instrument.MeterRegistry meters, Status status) {
        var c = meters.find("strata.storage.requests").tag("op", "write").tag("status", status.name()).counter();
        return c == null ? 0 : c.count();
    }

    private static Status status(Throwable t) {
        return StrataException.wrap(StrataException.unwrapCompletion(t)).status();
    }

    @Test
    void aChainShrunkToOneReplicaAcknowledgesNothingThatReplicaCouldTakeWithIt() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 71).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(80, 0, 1, SIZE);
            ChunkAddress b = StorageCluster.chunk(80, 1, 1, SIZE);
            Futures.join(write(c, a, (byte) 1, IO));
            // node 3 goes: two replicas left, writes go on
            f.kill(3);
            f.routing().update(f.routingInfo(2, Map.of(1, List.of(1, 2))));
            Futures.join(write(c, a, (byte) 2, IO));
            // node 2 goes too: one replica left, a write is held and then refused
            f.kill(2);
            f.routing().update(f.routingInfo(3, Map.of(1, List.of(1))));
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> Futures.join(write(c, a, (byte) 3, IO.withTimeout(Duration.ofSeconds(3)))))
                    .satisfies(e -> assertThat(status(e)).isEqualTo(Status.TOO_FEW_REPLICAS))
                    .hasMessageContaining("replicas.min-ack");
            assertThat((System.nanoTime() - t0) / 1e9).as("held before it was refused").isGreaterThan(1.0);
            // with replicas.min-ack = 1 the same write is acknowledged by the last replica alone
            Futures.join(write(c, b, (byte) 9, IO.withMinAck(1)));
            // that replica's disk dies; the other two come back
            f.kill(1);
            f.restart(2);
            f.restart(3);
            f.routing().update(f.routingInfo(4, Map.of(1, List.of(2, 3))));
            assertThat(first(c, a, 2)).as("every write acknowledged with min-ack 2 survives").isEqualTo((byte) 2);
            assertThat(first(c, b, 2)).as("the one acknowledged by a single replica is gone").isEqualTo((byte) 0);
        }
    }

    /** The chain shrunk to node 1 alone (routing v2), and a write of 5s to {@code a}, held there a second. */
    private static CompletableFuture<Void> heldWrite(StorageCluster f, StorageClient c, ChunkAddress a) throws InterruptedException {
        f.routing().update(f.routingInfo(2, Map.of(1, List.of(1))));
        CompletableFuture<Void> w = write(c, a, (byte) 5, IO);
        Thread.sleep(1000);
        assertThat(w).as("held while one replica can take writes").isNotDone();
        return w;
    }

    @Test
    void aHeldWriteGoesThroughWhenAReplicaReturns() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 72).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(81, 0, 1, SIZE);
            CompletableFuture<Void> w = heldWrite(f, c, a);
            f.routing().update(f.routingInfo(3, Map.of(1, List.of(1, 2))));
            Futures.join(w);
            assertThat(first(c, a, 1)).isEqualTo((byte) 5);
            assertThat(first(c, a, 2)).isEqualTo((byte) 5);
        }
    }

    /**
     * A head that stops while it holds a write answers it SHUTTING_DOWN as it stops (and frees
     * the write's bytes), instead of leaving it to timers its stopping context drops.
     */
    @Test
    void aHeldWriteIsAnsweredWhenItsHeadStops() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 75).nodes(3).chains(1).start()) {
            var head = f.context(1).meters();
            heldWrite(f, f.client("c"), StorageCluster.chunk(84, 0, 1, SIZE));
            f.kill(1);
            assertThat(writes(head, Status.SHUTTING_DOWN)).as("the held write answered as the head stopped").isEqualTo(1);
        }
    }

    @Test
    void aWriteWhoseSuccessorLeavesMidWayIsNotAcknowledged() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 73).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(82, 0, 1, SIZE);
            f.routing().update(f.routingInfo(2, Map.of(1, List.of(1, 2))));
            Futures.join(write(c, a, (byte) 1, IO));
            var drop = f.context(1).faults().arm(FaultPoint.RPC_SEND, new Fault.Drop())
                    .when(s -> s.message().equals("ForwardUpdate"));
            CompletableFuture<Void> w = write(c, a, (byte) 2, IO.withTimeout(Duration.ofSeconds(4)));
            Eventually.await("the forward was dropped", Duration.ofSeconds(10), () -> drop.fired() >= 1);
            // the successor leaves while the update is on its way: the head ends up the only replica holding it
            f.routing().update(f.routingInfo(3, Map.of(1, List.of(1))));
            assertThatThrownBy(() -> Futures.join(w)).satisfies(e -> assertThat(status(e)).isEqualTo(Status.TOO_FEW_REPLICAS));
            f.context(1).faults().disarm(drop);
        }
    }

    @Test
    void aRetriedWriteIsAcknowledgedOnlyOnceTheMinimumOfReplicasHoldIt() throws Exception {
        IoOptions io = IO.withTimeout(Duration.ofSeconds(60));
        try (StorageCluster f = StorageCluster.builder(dir, 74).nodes(3).chains(1).start()) {
            // attempts much shorter than the write: the head's forward to a middle that cannot catch up
            // gives up with the attempt, and the client's retry finds the version pending at the head
            // and committed at the tail
            StorageClient c = f.client("c", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(2)));
            ChunkAddress a = StorageCluster.chunk(83, 0, 1, SIZE);
            Futures.join(write(c, a, (byte) 1, io));
            long version = 1;
            FaultInjector middle = f.context(2).faults();
            byte value = 10;
            for (int minAck : new int[] {3, 2}) {
                long next = version + 1;
                var disk = middle.arm(ChunkEngine.DATA_SYNC, new Fault.Fail(new StrataException(Status.IO_ERROR,
                        "injected: the disk refused the write"))).times(1);
                var fetch = middle.arm(CraqService.CATCH_UP, new Fault.Fail(new StrataException(Status.TIMEOUT,
                        "injected: the tail did not answer the catch-up")));
                CompletableFuture<Void> w = write(c, a, value, io.withMinAck(minAck));
                Eventually.await("the middle's store failed, it cannot catch up, and the tail committed v" + next,
                        Duration.ofSeconds(30), () -> disk.fired() == 1 && fetch.fired() >= 2 && committed(c, a, 3) == next);
                if (minAck == 3) {
                    // a retry resolved the head's pending version with the tail: the head holds it committed too
                    Eventually.await("the head committed v" + next + " on a retry", Duration.ofSeconds(30),
                            () -> committed(c, a, 1) == next);
                    double refused = writes(f, 1, Status.TOO_FEW_REPLICAS);
                    Eventually.await("the retry that found the write applied was answered", Duration.ofSeconds(30),
                            () -> w.isDone() || writes(f, 1, Status.TOO_FEW_REPLICAS) > refused);
                    assertThat(w).as("a write only the head and the tail hold, with min-ack 3").isNotDone();
                    assertThat(committed(c, a, 2)).as("the middle still lacks v%d", next).isEqualTo(version);
                    middle.disarm(fetch);
                    Futures.join(w); // a later retry finds the middle caught up
                } else {
                    // with min-ack 2 the head's and the tail's copies are enough: acknowledged as before
                    Futures.join(w);
                    assertThat(committed(c, a, 2)).as("acknowledged while the middle still lacks v%d", next).isEqualTo(version);
                    middle.disarm(fetch);
                    assertThat(first(c, a, 2)).as("a read trying the middle first").isEqualTo(value); // and catches it up
                }
                version = next;
                long v = version;
                Eventually.await("every replica committed v" + v, Duration.ofSeconds(30),
                        () -> java.util.stream.IntStream.rangeClosed(1, 3).allMatch(n -> committed(c, a, n) == v));
                for (int n = 1; n <= 3; n++) {
                    assertThat(first(c, a, n)).as("a read trying node %d first (min-ack %d)", n, minAck).isEqualTo(value);
                }
                value += 10;
            }
        }
    }
}
