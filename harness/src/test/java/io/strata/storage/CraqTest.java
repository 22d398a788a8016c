package io.strata.storage;

import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.core.util.Eventually;
import io.strata.protocol.storage.StorageMessages;
import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.fault.Fault;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Response;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l3.StorageClient.ChunkRead;
import io.strata.core.util.Crc32c;
import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import io.strata.protocol.storage.StorageMessage.ReadChunk;
import io.strata.protocol.storage.StorageMessage.WriteChunk;
import io.strata.protocol.storage.StorageMessage.WriteDone;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** CRAQ on three in-process storage nodes over real loopback sockets. */
class CraqTest {
    static final int SIZE = 1 << 20;
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20));

    @TempDir
    Path dir;
    StorageCluster f;
    StorageClient client;
    NodeContext rawCtx;
    RpcClient raw;

    @BeforeEach
    void start() {
        f = StorageCluster.builder(dir, 31).nodes(3).chains(2).start();
        client = f.client("client", StorageClientOptions.DEFAULTS);
        rawCtx = NodeContext.builder("raw").eventLoopThreads(1).build();
        raw = new RpcClient(rawCtx, StorageMessages.PROTOCOL, RpcOptions.DEFAULTS);
    }

    @AfterEach
    void stop() {
        raw.close();
        rawCtx.close();
        f.close();
    }

    byte[] readFrom(ChunkAddress a, int node) {
        TargetId t = StorageCluster.target(node, a.chain().value());
        ChunkRead r = Futures.join(client.readChunkAsync(a, 0, a.chunkSize(), IO, Optional.of(t)));
        return drain(r.data());
    }

    void write(ChunkAddress a, long offset, byte[] data) {
        ByteBuf b = Unpooled.wrappedBuffer(data);
        try {
            Futures.join(client.writeAsync(a, offset, b, IO));
        } finally {
            b.release();
        }
    }

    ChunkStat stat(ChunkAddress a, int node) {
        return Futures.join(client.statAsync(a, StorageCluster.target(node, a.chain().value()), Duration.ofSeconds(5)));
    }

    @Test
    void writesReachEveryReplicaAndReadFromAny() {
        Random r = new Random(1);
        ChunkAddress a = StorageCluster.chunk(10, 0, 1, SIZE);
        byte[] v1 = new byte[300_000];
        r.nextBytes(v1);
        write(a, 0, v1);
        byte[] patch = new byte[1000];
        r.nextBytes(patch);
        write(a, 100_000, patch);
        byte[] expect = v1.clone();
        System.arraycopy(patch, 0, expect, 100_000, 1000);
        for (int n : f.members(1)) {
            assertThat(readFrom(a, n)).as("replica on node %d", n).isEqualTo(expect);
            ChunkStat s = stat(a, n);
            assertThat(s.committedVersion()).isEqualTo(2);
            assertThat(s.pendingVersion()).isZero();
        }
        // truncate and remove go down the chain too
        Futures.join(client.truncateAsync(a, 1000, IO));
        for (int n : f.members(1)) {
            assertThat(readFrom(a, n)).isEqualTo(Arrays.copyOf(expect, 1000));
        }
        Futures.join(client.removeAsync(a, IO));
        for (int n : f.members(1)) {
            assertThat(readFrom(a, n)).isEmpty();
            assertThat(stat(a, n).removed()).isTrue();
        }
        assertThat(f.context(1).meters().find("strata.storage.requests").tag("op", "write").tag("status", "OK").counter().count())
                .isEqualTo(4.0);
    }

    @Test
    void eachBadInputGetsItsOwnStatusAndWritesNothing() {
        ChunkAddress a = StorageCluster.chunk(11, 0, 1, SIZE);
        long v = f.routing().current().chain(a.chain()).version();
        ByteBuf data = Unpooled.wrappedBuffer(new byte[]{1, 2, 3, 4});
        int crc = Crc32c.of(data);
        var head = f.address(1);
        // wrong checksum
        assertThat(status(head, new WriteChunk(ChunkRef.of(a), v, new RequestId(1, 1), UpdateKind.WRITE, 0, 4, crc ^ 1, QosClass.INTERACTIVE), data))
                .isEqualTo(Status.CHECKSUM_MISMATCH);
        // chunk id out of range
        assertThat(status(head, new WriteChunk(new ChunkRef(11, -5, 1, SIZE), v, new RequestId(1, 2), UpdateKind.WRITE, 0, 4, crc, QosClass.INTERACTIVE), data))
                .isEqualTo(Status.CHUNK_ID_OUT_OF_RANGE);
        assertThat(status(head, new WriteChunk(new ChunkRef(0, 1, 1, SIZE), v, new RequestId(1, 3), UpdateKind.WRITE, 0, 4, crc, QosClass.INTERACTIVE), data))
                .isEqualTo(Status.CHUNK_ID_OUT_OF_RANGE);
        // offset past the chunk size (server side, then the client's own check)
        assertThat(status(head, new WriteChunk(ChunkRef.of(a), v, new RequestId(1, 4), UpdateKind.WRITE, SIZE - 2, 4, crc, QosClass.INTERACTIVE), data))
                .isEqualTo(Status.OFFSET_OUT_OF_RANGE);
        assertThat(status(f.address(2), new ReadChunk(ChunkRef.of(a), v, SIZE + 1, 10, QosClass.INTERACTIVE), Unpooled.EMPTY_BUFFER))
                .isEqualTo(Status.OFFSET_OUT_OF_RANGE);
        assertThatThrownBy(() -> Futures.join(client.writeAsync(a, SIZE, data, IO)))
                .extracting(e -> ((StrataException) e).status()).isEqualTo(Status.OFFSET_OUT_OF_RANGE);
        // stale chain version: refused with the node's version
        StrataException stale = error(head, new WriteChunk(ChunkRef.of(a), v - 1, new RequestId(1, 5), UpdateKind.WRITE, 0, 4, crc, QosClass.INTERACTIVE), data);
        assertThat(stale).isInstanceOf(StrataException.StaleRouting.class);
        assertThat(((StrataException.StaleRouting) stale).currentVersion()).isEqualTo(v);
        // a write sent to a middle replica instead of the head
        assertThat(status(f.address(2), new WriteChunk(ChunkRef.of(a), v, new RequestId(1, 6), UpdateKind.WRITE, 0, 4, crc, QosClass.INTERACTIVE), data))
                .isEqualTo(Status.STALE_CHAIN_VERSION);
        data.release();
        for (int n : f.members(1)) {
            assertThat(stat(a, n).committedVersion()).as("nothing written on node %d", n).isZero();
            assertThat(stat(a, n).pendingVersion()).isZero();
        }
    }

    StrataException error(java.net.InetSocketAddress to, io.strata.core.rpc.Message m, ByteBuf data) {
        CompletableFuture<Response> r = raw.call(to, m, data.isReadable() ? Payload.of(data.retainedDuplicate()) : Payload.NONE,
                Duration.ofSeconds(5));
        try {
            Futures.join(r).close();
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError("expected " + m + " to fail");
    }

    Status status(java.net.InetSocketAddress to, io.strata.core.rpc.Message m, ByteBuf data) {
        return error(to, m, data).status();
    }

    @Test
    void aRetriedOrDuplicatedWriteIsAppliedOnce() {
        ChunkAddress a = StorageCluster.chunk(12, 0, 1, SIZE);
        long v = f.routing().current().chain(a.chain()).version();
        ByteBuf x = Unpooled.wrappedBuffer(new byte[]{7, 7, 7});
        RequestId idX = new RequestId(42, 1);
        WriteChunk wx = new WriteChunk(ChunkRef.of(a), v, idX, UpdateKind.WRITE, 0, 3, Crc32c.of(x), QosClass.INTERACTIVE);
        // the same request twice at once: one application, the same answer
        CompletableFuture<Response> r1 = raw.call(f.address(1), wx, Payload.of(x.retainedDuplicate()), Duration.ofSeconds(10));
        CompletableFuture<Response> r2 = raw.call(f.address(1), wx, Payload.of(x.retainedDuplicate()), Duration.ofSeconds(10));
        WriteDone d1 = message(r1);
        WriteDone d2 = message(r2);
        assertThat(d1).isEqualTo(d2);
        assertThat(d1.version()).isEqualTo(1);
        // another writer overwrites; then the first request is retried: it must not come back
        write(a, 0, new byte[]{9, 9, 9});
        WriteDone d3 = message(raw.call(f.address(1), wx, Payload.of(x.retainedDuplicate()), Duration.ofSeconds(10)));
        assertThat(d3.version()).isEqualTo(1);
        x.release();
        for (int n : f.members(1)) {
            assertThat(readFrom(a, n)).isEqualTo(new byte[]{9, 9, 9});
            assertThat(stat(a, n).committedVersion()).isEqualTo(2);
        }
    }

    static WriteDone message(CompletableFuture<Response> r) {
        try (Response resp = Futures.join(r)) {
            return resp.message(WriteDone.class);
        }
    }

    @Test
    void aDirtyReplicaServesTheVersionTheTailCommitted() {
        ChunkAddress a = StorageCluster.chunk(13, 0, 1, SIZE);
        byte[] old = new byte[5000];
        Arrays.fill(old, (byte) 1);
        write(a, 0, old);
        byte[] fresh = new byte[5000];
        Arrays.fill(fresh, (byte) 2);
        // hold the update on its way from the middle (node 2) to the tail (node 3)
        String tail = "127.0.0.1:" + f.address(3).getPort();
        var hold = f.context(2).faults().arm(io.strata.core.fault.FaultPoint.RPC_SEND, new Fault.Delay(Duration.ofMillis(1500)))
                .when(s -> s.message().equals("ForwardUpdate") && s.peer().equals(tail)).times(1);
        ByteBuf freshBuf = Unpooled.wrappedBuffer(fresh);
        CompletableFuture<Void> w = client.writeAsync(a, 0, freshBuf, IO).whenComplete((x, e) -> freshBuf.release());
        Eventually.await("stat(a, 2).pendingVersion() == 2", java.time.Duration.ofSeconds(20), () -> stat(a, 2).pendingVersion() == 2);
        assertThat(stat(a, 1).pendingVersion()).isEqualTo(2);
        // head and middle are dirty: they ask the tail, which still has v1, and serve v1
        assertThat(readFrom(a, 1)).isEqualTo(old);
        assertThat(readFrom(a, 2)).isEqualTo(old);
        assertThat(readFrom(a, 3)).isEqualTo(old);
        Futures.join(w);
        assertThat(hold.fired()).isEqualTo(1);
        for (int n : f.members(1)) {
            assertThat(readFrom(a, n)).isEqualTo(fresh);
        }
        // now hold the acknowledgement from the tail: the tail has committed v3, the others are dirty
        byte[] third = new byte[5000];
        Arrays.fill(third, (byte) 3);
        // (a server names a response after its request: the tail's answers to ForwardUpdate)
        f.context(3).faults().arm(io.strata.core.fault.FaultPoint.RPC_SEND, new Fault.Delay(Duration.ofMillis(1500)))
                .when(s -> s.message().equals("ForwardUpdate")).times(1);
        ByteBuf thirdBuf = Unpooled.wrappedBuffer(third);
        CompletableFuture<Void> w3 = client.writeAsync(a, 0, thirdBuf, IO).whenComplete((x, e) -> thirdBuf.release());
        Eventually.await("stat(a, 3).committedVersion() == 3", java.time.Duration.ofSeconds(20), () -> stat(a, 3).committedVersion() == 3);
        assertThat(stat(a, 2).pendingVersion()).isEqualTo(3);
        assertThat(readFrom(a, 2)).as("the middle serves its pending version, committed at the tail").isEqualTo(third);
        assertThat(readFrom(a, 1)).isEqualTo(third);
        Futures.join(w3);
    }

    @Test
    void aPredecessorRetriesAgainstItsNewSuccessorWhenTheChainChanges() {
        ChunkAddress a = StorageCluster.chunk(14, 0, 1, SIZE);
        write(a, 0, new byte[]{1});
        // node 3 (the tail) stops answering: forwards to it are dropped
        String tail = "127.0.0.1:" + f.address(3).getPort();
        var drop = f.context(2).faults().arm(io.strata.core.fault.FaultPoint.RPC_SEND, new Fault.Drop())
                .when(s -> s.message().equals("ForwardUpdate") && s.peer().equals(tail));
        ByteBuf twoBuf = Unpooled.wrappedBuffer(new byte[]{2});
        CompletableFuture<Void> w = client.writeAsync(a, 0, twoBuf, IO).whenComplete((x, e) -> twoBuf.release());
        Eventually.await("drop.fired() >= 1", java.time.Duration.ofSeconds(20), () -> drop.fired() >= 1);
        assertThat(w).isNotDone();
        // the manager (here: by hand) moves node 3 out: chain 1 becomes [1, 2] at version 2
        f.routing().update(f.routingInfo(2 + 1, Map.of(1, List.of(1, 2))));
        Futures.join(w);
        assertThat(readFrom(a, 1)).isEqualTo(new byte[]{2});
        assertThat(readFrom(a, 2)).isEqualTo(new byte[]{2});
        assertThat(stat(a, 2).committedVersion()).isEqualTo(2);
        f.context(2).faults().disarm(drop);
        // a request with the old chain version is refused by everyone now
        ByteBuf d = Unpooled.wrappedBuffer(new byte[]{3});
        assertThat(status(f.address(1), new WriteChunk(ChunkRef.of(a), 1, new RequestId(5, 5), UpdateKind.WRITE, 0, 1,
                Crc32c.of(d), QosClass.INTERACTIVE), d)).isEqualTo(Status.STALE_CHAIN_VERSION);
        d.release();
    }

    @Test
    void anAbandonedPendingVersionIsRolledForward() {
        ChunkAddress a = StorageCluster.chunk(15, 0, 1, SIZE);
        write(a, 0, new byte[]{1, 1});
        // the head's forwards vanish and the client gives up: the head keeps a pending v2
        String middle = "127.0.0.1:" + f.address(2).getPort();
        var drop = f.context(1).faults().arm(io.strata.core.fault.FaultPoint.RPC_SEND, new Fault.Drop())
                .when(s -> s.message().equals("ForwardUpdate") && s.peer().equals(middle));
        ByteBuf two = Unpooled.wrappedBuffer(new byte[]{2, 2});
        assertThatThrownBy(() -> Futures.join(client.writeAsync(a, 0, two, IO.withTimeout(Duration.ofMillis(800)))))
                .isInstanceOf(StrataException.class);
        two.release();
        Eventually.await("stat(a, 1).pendingVersion() == 2", java.time.Duration.ofSeconds(20), () -> stat(a, 1).pendingVersion() == 2);
        f.context(1).faults().disarm(drop);
        // the next write finds it, asks the tail (v1 there), rolls v2 forward to every replica, then writes v3
        write(a, 1, new byte[]{3});
        for (int n : f.members(1)) {
            assertThat(readFrom(a, n)).as("node %d", n).isEqualTo(new byte[]{2, 3});
            assertThat(stat(a, n).committedVersion()).isEqualTo(3);
        }
    }

    @Test
    void aClosedGateRefusesEveryRequest() {
        ChunkAddress a = StorageCluster.chunk(16, 0, 1, SIZE);
        write(a, 0, new byte[]{1});
        f.node(2).gate().close(Status.FENCED, "lost the cluster manager");
        long v = f.routing().current().chain(a.chain()).version();
        assertThat(status(f.address(2), new ReadChunk(ChunkRef.of(a), v, 0, 1, QosClass.INTERACTIVE), Unpooled.EMPTY_BUFFER)).isEqualTo(Status.FENCED);
        // reads move on to another replica; writes (which need node 2) fail once their deadline passes
        assertThat(readFrom(a, 2)).isEqualTo(new byte[]{1});
        assertThatThrownBy(() -> Futures.join(client.writeAsync(a, 0, Unpooled.wrappedBuffer(new byte[]{2}),
                IO.withTimeout(Duration.ofMillis(700))))).isInstanceOf(StrataException.class);
        f.node(2).gate().open();
        write(a, 0, new byte[]{4});
        assertThat(readFrom(a, 2)).isEqualTo(new byte[]{4});
    }

    @Test
    void dataSurvivesANodeRestart() {
        ChunkAddress a = StorageCluster.chunk(17, 3, 2, SIZE);
        byte[] data = new byte[200_000];
        new Random(3).nextBytes(data);
        write(a, 0, data);
        f.kill(3);
        f.restart(3);
        assertThat(readFrom(a, 3)).isEqualTo(data);
        write(a, 10, new byte[]{5});
        data[10] = 5;
        for (int n : f.members(2)) {
            assertThat(readFrom(a, n)).isEqualTo(data);
        }
    }
}
