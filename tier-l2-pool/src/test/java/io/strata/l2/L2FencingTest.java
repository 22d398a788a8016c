package io.strata.l2;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Crc32c;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.l2.agent.L2Agent;
import io.strata.l2.agent.L2AgentConfig;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.mgmtd.MgmtdConfig;
import io.strata.mgmtd.MgmtdServer;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.l2.L2Message;
import io.strata.protocol.l2.L2Messages;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An L2 agent registered with a real cluster manager holds a lease; cut off from the manager
 * (its heartbeats dropped), it fences itself before the manager expires the lease, refusing
 * updates with FENCED, so that a writer moves the chunk to agents that still belong.
 */
class L2FencingTest {
    static final Duration LEASE = Duration.ofSeconds(2);
    static final Duration T = Duration.ofSeconds(20);

    @TempDir
    Path dir;
    final List<AutoCloseable> closers = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closers.size() - 1; i >= 0; i--) {
            closers.get(i).close();
        }
    }

    <C extends AutoCloseable> C closing(C c) {
        closers.add(c);
        return c;
    }

    @Test
    void anAgentCutOffFromTheManagerFencesItselfAndRefusesUpdates() throws Exception {
        NodeContext mctx = closing(NodeContext.builder("mgmtd").eventLoopThreads(1).build());
        MgmtdServer m = closing(MgmtdServer.start(mctx, MgmtdConfig.single(dir.resolve("mgmtd"), InetSocketAddress.createUnresolved("127.0.0.1", 0),
                InetSocketAddress.createUnresolved("127.0.0.1", 0), LEASE).withLeaseCheck(Duration.ofMillis(20))));
        Eventually.await("leader", T, m::isLeader);

        NodeContext ctx = closing(NodeContext.builder("l2-21").seed(21).faults(new FaultInjector(21)).eventLoopThreads(1).blockingThreads(1).build());
        MgmtdClient mgmtd = closing(new MgmtdClient(ctx, List.of(m.rpcAddress())));
        ManagerRoutingSource routing = closing(ManagerRoutingSource.start(ctx, mgmtd, Duration.ofSeconds(5), Duration.ofSeconds(1)));
        RpcClient metaRpc = closing(new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS));
        MetaClient meta = new MetaClient(ctx, metaRpc, List.of(new InetSocketAddress("127.0.0.1", 1))); // the drain has nothing to ask
        StorageClient l3 = closing(new StorageClient(ctx, routing, RpcOptions.DEFAULTS, StorageClientOptions.DEFAULTS));
        L2Agent agent = closing(L2Agent.start(ctx, L2AgentConfig.of(NodeId.of(21), dir.resolve("agent")), routing, meta, l3,
                RpcOptions.DEFAULTS, new InetSocketAddress("127.0.0.1", 0)));
        assertThat(agent.fenced()).as("not yet registered").isFalse();
        agent.register(mgmtd);
        Futures.join(agent.registered(), T);
        Eventually.await("the agent listed as serving in routing", T, () -> Holders.serving(routing.current(), 21));

        NodeContext cctx = closing(NodeContext.builder("client").eventLoopThreads(1).build());
        RpcClient rpc = closing(new RpcClient(cctx, L2Messages.PROTOCOL, RpcOptions.DEFAULTS));
        assertThat(write(rpc, agent, 1)).as("serving: the update is stored").isNull();

        // partition: every heartbeat the agent sends is dropped
        ctx.faults().arm(FaultPoint.RPC_SEND, new Fault.Drop()).when(s -> s.message().equals("Heartbeat"));
        Eventually.await("fenced", T, agent::fenced);
        StrataException refused = write(rpc, agent, 2);
        assertThat(refused).isNotNull();
        assertThat(refused.status()).isEqualTo(Status.FENCED);
        assertThat(Futures.join(rpc.call(agent.address(), new L2Message.GetStatus(), L2Message.Status.class), T).fenced()).isTrue();
    }

    /** One whole-chunk update of chunk 0 of inode {@code inode} with the agent as its only holder; the failure, or null. */
    private static StrataException write(RpcClient rpc, L2Agent agent, long inode) {
        byte[] bytes = new byte[1 << 20]; // the whole chunk: the agent needs no base from L3 (there is none here)
        L2Message.Write m = new L2Message.Write(new ChunkRef(inode, 0, 1, 1 << 20), 1, new RequestId(7, inode), UpdateKind.WRITE, 0,
                bytes.length, Crc32c.of(java.nio.ByteBuffer.wrap(bytes)), false, List.of(21), io.strata.core.tier.QosClass.CHECKPOINT);
        try {
            Futures.join(rpc.call(agent.address(), m, Payload.of(Unpooled.wrappedBuffer(bytes)), T), T).close();
            return null;
        } catch (StrataException e) {
            return e;
        }
    }
}
