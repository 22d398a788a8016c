package io.strata.storage;

import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
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
import io.strata.protocol.storage.StorageMessages;
import io.strata.protocol.storage.UpdateKind;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Storage nodes with authentication on: writes still go down the chain (the nodes forward to
 * each other as {@code storage}), while a {@code ForwardUpdate} from a client-role connection,
 * which would write a replica behind its head's back, is refused before it touches anything.
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
        for (int n : f.members(1)) {
            ChunkStat s = stat(a, n);
            assertThat(s.committedVersion()).as("node %d", n).isEqualTo(1);
            assertThat(s.pendingVersion()).as("node %d", n).isZero();
            assertThat(readFrom(a, n)).as("replica on node %d", n).isEqualTo(v1);
        }
        TargetId t = StorageCluster.target(tail, 1);
        assertThat(f.context(tail).meters().find("strata.rpc.served").tag("message", "ForwardUpdate")
                .tag("status", "PERMISSION_DENIED").counter().count()).as("refused at %s", t).isEqualTo(1.0);
    }
}
