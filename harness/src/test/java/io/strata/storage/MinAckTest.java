package io.strata.storage;

import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
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
 * take the bytes with it.
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

    @Test
    void aHeldWriteGoesThroughWhenAReplicaReturns() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 72).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(81, 0, 1, SIZE);
            f.routing().update(f.routingInfo(2, Map.of(1, List.of(1))));
            CompletableFuture<Void> w = write(c, a, (byte) 5, IO);
            Thread.sleep(1000);
            assertThat(w).as("held while one replica can take writes").isNotDone();
            f.routing().update(f.routingInfo(3, Map.of(1, List.of(1, 2))));
            Futures.join(w);
            assertThat(first(c, a, 1)).isEqualTo((byte) 5);
            assertThat(first(c, a, 2)).isEqualTo((byte) 5);
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
}
