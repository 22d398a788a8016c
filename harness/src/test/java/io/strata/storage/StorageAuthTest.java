package io.strata.storage;

import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Role;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Crc32c;
import io.strata.core.util.Futures;
import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import io.strata.protocol.storage.StorageMessage.ForwardUpdate;
import io.strata.protocol.storage.StorageMessage.SyncChunk;
import io.strata.protocol.storage.StorageMessage.SyncDone;
import io.strata.protocol.storage.StorageMessages;
import io.strata.protocol.storage.UpdateKind;
import io.strata.protocol.routing.TargetState;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Storage nodes with authentication on: writes still go down the chain (the nodes forward to
 * each other as {@code storage}), while a {@code ForwardUpdate} from a client-role connection,
 * which would write a replica behind its head's back, is refused before it touches anything; so
 * are a forward and a resync's copy or sync-done from a storage node other than the target's
 * predecessor on the chain's write path. A resync from the predecessor still brings a returning
 * replica up to date.
 */
class StorageAuthTest {
    private static final int SIZE = 1 << 20;
    private static final IoOptions IO = IoOptions.DEFAULT;
    private static final Duration T = Duration.ofSeconds(10);

    @TempDir
    Path dir;
    StorageCluster f;
    StorageClient client;

    @BeforeEach
    void start() {
        f = StorageCluster.builder(dir, 41).nodes(3).chains(1).auth(ClusterKey.generate()).start();
        client = f.client("client");
    }

    @AfterEach
    void stop() {
        f.close();
    }

    private byte[] readFrom(ChunkAddress a, int node) {
        return drain(Futures.join(client.readChunkAsync(a, 0, a.chunkSize(), IO, Optional.of(StorageCluster.target(node, a.chain().value())))).data());
    }

    private ChunkStat stat(ChunkAddress a, int node) {
        return Futures.join(client.statAsync(a, StorageCluster.target(node, a.chain().value()), T));
    }

    private static StrataException refused(RpcClient rpc, InetSocketAddress to, Message m, ByteBuf data) {
        try {
            Futures.join(rpc.call(to, m, Payload.of(data.retainedDuplicate()), T), T).close();
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError(m + " was accepted");
    }

    private void assertUnchanged(ChunkAddress a, byte[] v1) {
        for (int n : f.members(1)) {
            ChunkStat s = stat(a, n);
            assertThat(s.committedVersion()).as("node %d", n).isEqualTo(1);
            assertThat(s.pendingVersion()).as("node %d", n).isZero();
            assertThat(readFrom(a, n)).as("replica on node %d", n).isEqualTo(v1);
        }
    }

    private ChunkAddress written(byte[] v1) {
        ChunkAddress a = StorageCluster.chunk(20, 0, 1, SIZE);
        ByteBuf b = Unpooled.wrappedBuffer(v1);
        Futures.join(client.writeAsync(a, 0, b, IO));
        b.release();
        return a;
    }

    /** What {@code m} meets at node {@code to} when sent with {@code node}'s storage token. */
    private StrataException refusedAsStorageNode(String node, int to, Message m, ByteBuf data) {
        try (NodeContext ctx = NodeContext.builder("as-" + node).eventLoopThreads(1).credentials(f.token(Role.STORAGE, node)).build();
             RpcClient rpc = new RpcClient(ctx, StorageMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            return refused(rpc, f.address(to), m, data);
        }
    }

    @Test
    void aForwardFromAStorageNodeThatIsNotThePredecessorIsRefusedAndTheReplicaUnchanged() {
        byte[] v1 = {1, 2, 3, 4, 5, 6, 7, 8};
        ChunkAddress a = written(v1);
        List<Integer> chain = f.members(1);
        assertThat(chain).hasSize(3);
        int head = chain.get(0);
        int tail = chain.get(2);
        long chainVersion = f.routing().current().chain(a.chain()).version();
        ByteBuf evil = Unpooled.wrappedBuffer(new byte[]{9, 9, 9, 9});
        ForwardUpdate m = new ForwardUpdate(ChunkRef.of(a), chainVersion, new RequestId(66, 1), 2, UpdateKind.WRITE, 0, 4,
                Crc32c.of(evil), QosClass.INTERACTIVE);
        try {
            // the head skipping the middle, the tail to itself, a node outside the chain
            for (String sender : List.of(NodeId.of(head).toString(), NodeId.of(tail).toString(), "node-99")) {
                StrataException denied = refusedAsStorageNode(sender, tail, m, evil);
                assertThat(denied.status()).as("from %s", sender).isEqualTo(Status.PERMISSION_DENIED);
                assertThat(denied.getMessage()).contains("role storage (subject " + sender + ") may not send ForwardUpdate",
                        "only its predecessor on the write path may", "on " + NodeId.of(chain.get(1)));
            }
            StrataException atHead = refusedAsStorageNode(NodeId.of(chain.get(1)).toString(), head, m, evil);
            assertThat(atHead.status()).as("a forward to the head is stale routing, whoever sends it").isEqualTo(Status.STALE_CHAIN_VERSION);
        } finally {
            evil.release();
        }
        assertUnchanged(a, v1);
    }

    @Test
    void aResyncFromThePredecessorRepairsAReplicaWhileASyncDoneFromAnyOtherNodeIsRefused() {
        byte[] v1 = {1, 2, 3, 4, 5, 6, 7, 8};
        ChunkAddress a = written(v1);
        List<Integer> chain = f.members(1);
        int tail = chain.get(2);
        long chainVersion = f.routing().current().chain(a.chain()).version();
        SyncDone done = new SyncDone(1, chainVersion, 0, 0, 0);
        StrataException denied = refusedAsStorageNode(NodeId.of(chain.get(0)).toString(), tail, done, Unpooled.EMPTY_BUFFER);
        assertThat(denied.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(denied.getMessage()).contains("may not send SyncDone", "only its predecessor on the write path may");
        SyncChunk copy = new SyncChunk(ChunkRef.of(a), chainVersion, false, 5, new RequestId(66, 2), 0, 0, true, List.of());
        StrataException copyDenied = refusedAsStorageNode("node-99", tail, copy, Unpooled.EMPTY_BUFFER);
        assertThat(copyDenied.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(copyDenied.getMessage()).contains("may not send SyncChunk");
        StrataException notSyncing = refusedAsStorageNode(NodeId.of(chain.get(1)).toString(), tail, done, Unpooled.EMPTY_BUFFER);
        assertThat(notSyncing.status()).as("the predecessor is let through, to the target's own state check").isEqualTo(Status.NOT_SERVING);
        assertUnchanged(a, v1);

        // the real thing: the tail misses a write, comes back and is resynced by its predecessor
        f.kill(tail);
        ResyncTest.publish(f, chainVersion + 1, chain, Map.of(tail, TargetState.OFFLINE));
        byte[] v2 = {7, 7, 7, 7};
        ByteBuf b = Unpooled.wrappedBuffer(v2);
        Futures.join(client.writeAsync(a, 0, b, IO));
        b.release();
        f.restart(tail);
        CompletableFuture<Long> synced = ResyncTest.awaitSynced(f, tail);
        ResyncTest.publish(f, chainVersion + 2, chain, Map.of(tail, TargetState.SYNCING));
        assertThat(Futures.join(synced, Duration.ofSeconds(60))).isEqualTo(chainVersion + 2);
        ResyncTest.publish(f, chainVersion + 3, chain, Map.of());
        byte[] expect = {7, 7, 7, 7, 5, 6, 7, 8};
        for (int n : chain) {
            assertThat(readFrom(a, n)).as("replica on node %d after the resync", n).isEqualTo(expect);
        }
    }

    @Test
    void authenticatedGarbageForEveryStorageMessageIsRefusedAndTheChainStaysWhole() {
        byte[] v1 = {1, 2, 3, 4, 5, 6, 7, 8};
        ChunkAddress a = written(v1);
        int head = f.members(1).get(0);
        java.util.Random rnd = new java.util.Random(4242);
        for (Role role : List.of(Role.CLIENT, Role.STORAGE)) {
            String subject = role == Role.STORAGE ? NodeId.of(f.members(1).get(1)).toString() : "fuzzer";
            try (NodeContext ctx = NodeContext.builder("fuzz-" + role).eventLoopThreads(1).credentials(f.token(role, subject)).build()) {
                Map<String, Integer> outcomes = io.strata.testing.Garbage.send(ctx, f.address(head), StorageMessages.TYPES, rnd, 12);
                assertThat(outcomes).as("as %s: the decoders saw the garbage (malformed: connection closed)", role)
                        .containsKey("CONNECTION_LOST");
            }
        }
        assertUnchanged(a, v1);
        byte[] v2 = {9, 8, 7};
        ByteBuf b = Unpooled.wrappedBuffer(v2);
        Futures.join(client.writeAsync(a, 0, b, IO));
        b.release();
        for (int n : f.members(1)) {
            assertThat(readFrom(a, n)).as("node %d after the fuzzing", n).startsWith(v2);
        }
    }

    @Test
    void rogueForwardUpdateFromClientRoleIsRefusedAndTheReplicaUnchanged() {
        ChunkAddress a = StorageCluster.chunk(20, 0, 1, SIZE);
        byte[] v1 = {1, 2, 3, 4, 5, 6, 7, 8};
        ByteBuf b = Unpooled.wrappedBuffer(v1);
        Futures.join(client.writeAsync(a, 0, b, IO));
        b.release();
        for (int n : f.members(1)) {
            assertThat(readFrom(a, n)).as("replica on node %d, written through the authenticated chain", n).isEqualTo(v1);
        }
        int tail = f.members(1).get(f.members(1).size() - 1);
        long chainVersion = f.routing().current().chain(a.chain()).version();
        ByteBuf evil = Unpooled.wrappedBuffer(new byte[]{9, 9, 9, 9});
        ForwardUpdate m = new ForwardUpdate(ChunkRef.of(a), chainVersion, new RequestId(66, 1), 2, UpdateKind.WRITE, 0, 4,
                Crc32c.of(evil), QosClass.INTERACTIVE);
        try (NodeContext rogueCtx = NodeContext.builder("rogue").eventLoopThreads(1).credentials(f.token(Role.CLIENT, "mallory")).build();
             RpcClient rogue = new RpcClient(rogueCtx, StorageMessages.PROTOCOL, RpcOptions.DEFAULTS);
             NodeContext anonCtx = NodeContext.builder("anon").eventLoopThreads(1).build();
             RpcClient anon = new RpcClient(anonCtx, StorageMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            StrataException denied = refused(rogue, f.address(tail), m, evil);
            assertThat(denied.status()).isEqualTo(Status.PERMISSION_DENIED);
            assertThat(denied.getMessage()).contains("role client (subject mallory) may not send ForwardUpdate to storage-" + tail,
                    "allowed: storage");
            StrataException anonymous = refused(anon, f.address(tail), m, evil);
            assertThat(anonymous.status()).isEqualTo(Status.UNAUTHENTICATED);
        } finally {
            evil.release();
        }
        assertUnchanged(a, v1);
        TargetId t = StorageCluster.target(tail, 1);
        assertThat(f.context(tail).meters().find("strata.rpc.served").tag("message", "ForwardUpdate")
                .tag("status", "PERMISSION_DENIED").counter().count()).as("refused at %s", t).isEqualTo(1.0);
    }
}
