package io.strata.l2;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.StrataException;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.StageHints;
import io.strata.core.util.Futures;
import io.strata.harness.LocalCluster;
import io.strata.testing.Buffers;
import io.strata.l2.agent.AgentRouting;
import io.strata.l2.agent.L2Agent;
import io.strata.l2.agent.L2AgentConfig;
import io.strata.l2.pool.L2Tier;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.Staging;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

/**
 * A storage cluster and a meta service in this JVM (the harness's local cluster), L2 agents with
 * ids 11, 12, ... each on its own directory and failure domain, and the cluster's shared routing,
 * which lists the agents as the manager would. Kill an agent ({@link #kill}: its server closes and
 * routing marks it down), restart it on the same directory, or wipe its disk.
 */
final class L2Cluster implements AutoCloseable {
    static final Duration T = Duration.ofSeconds(60);

    final LocalCluster cluster;
    final NodeContext ctx;
    final MetaClient meta;
    final StorageClient l3;
    private final RpcClient metaRpc;
    private final Path dir;
    private final UnaryOperator<L2AgentConfig> settings;
    private final Map<Integer, L2Agent> agents = new TreeMap<>();
    private final Map<Integer, NodeContext> contexts = new TreeMap<>();
    private final List<L2Tier> tiers = new ArrayList<>();
    private int files;

    private L2Cluster(Path dir, long seed, int n, UnaryOperator<L2AgentConfig> settings) throws IOException {
        this.dir = dir;
        this.settings = settings;
        this.cluster = LocalCluster.builder(dir.resolve("cluster"), seed).storageNodes(3).chains(3).metaSync(false).metaInProcess().start();
        this.ctx = NodeContext.seeded("l2-test", seed);
        this.metaRpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        this.meta = new MetaClient(ctx, metaRpc, List.of(cluster.metaAddress()), Duration.ofSeconds(10), 4);
        this.l3 = new StorageClient(ctx, cluster.routingSource(), RpcOptions.DEFAULTS, StorageClientOptions.DEFAULTS);
        for (int i = 0; i < n; i++) {
            start(11 + i);
        }
    }

    static L2Cluster start(Path dir, long seed, int agents, UnaryOperator<L2AgentConfig> settings) throws IOException {
        return new L2Cluster(dir, seed, agents, settings);
    }

    static L2Cluster start(Path dir, long seed, int agents) throws IOException {
        return start(dir, seed, agents, c -> c);
    }

    /** Starts (or restarts, on its directory) agent {@code id} and lists it in routing as serving. */
    L2Agent start(int id) throws IOException {
        L2AgentConfig cfg = settings.apply(L2AgentConfig.of(NodeId.of(id), dir.resolve("agent-" + id)));
        NodeContext agentCtx = NodeContext.seeded("agent-" + id, id);
        L2Agent a = L2Agent.start(agentCtx, cfg, cluster.routingSource(), meta, l3, RpcOptions.DEFAULTS,
                new InetSocketAddress("127.0.0.1", 0));
        agents.put(id, a);
        contexts.put(id, agentCtx);
        cluster.storage().updateRouting(r -> AgentRouting.with(r, id, a.address(), "node-" + id, true));
        return a;
    }

    /** Stops agent {@code id} abruptly and marks it down in routing, as its lease expiring would. */
    void kill(int id) {
        L2Agent a = agents.remove(id);
        if (a != null) {
            a.close();
        }
        cluster.storage().updateRouting(r -> AgentRouting.serving(r, id, false));
    }

    /** Deletes a (killed) agent's store: its disk is lost. */
    void wipe(int id) throws IOException {
        io.strata.store.StoreDir.deleteContents(dir.resolve("agent-" + id));
    }

    /** Makes agent {@code id}'s disk fail under it: its chunk directory becomes a plain file, so every file operation errs. */
    void breakDisk(int id) throws IOException {
        Path chunks = dir.resolve("agent-" + id).resolve("chunks");
        io.strata.store.StoreDir.deleteContents(chunks);
        java.nio.file.Files.delete(chunks);
        java.nio.file.Files.writeString(chunks, "not a directory: the disk failed");
    }

    L2Agent agent(int id) {
        return agents.get(id);
    }

    /** The node context agent {@code id} was last started with: its meters. */
    NodeContext agentContext(int id) {
        return contexts.get(id);
    }

    /** A new pool client (closed with the cluster). */
    L2Tier tier() {
        L2Tier t = new L2Tier(ctx, l3, meta, cluster.routingSource(), RpcOptions.DEFAULTS);
        tiers.add(t);
        return t;
    }

    /** A new file in the root directory. */
    InodeAttrs newFile() {
        return Futures.join(meta.createAsync(Caller.ROOT, InodeId.ROOT, "f" + (++files), 0644, true, RequestId.create(1, ctx.random())), T);
    }

    static ChunkAddress chunk(InodeAttrs f, int index) {
        return f.layout().chunks(f.id()).address(index);
    }

    static IoOptions staged(boolean durableL2) {
        return staged(durableL2, 2);
    }

    /** Staged with {@code replicas} L2 copies of each chunk (policy {@code l2.replicas}). */
    static IoOptions staged(boolean durableL2, int replicas) {
        return new IoOptions(1, QosClass.CHECKPOINT, Duration.ofSeconds(20)).withStage(new StageHints(true, durableL2, replicas));
    }

    Optional<Staging> staging(InodeAttrs f) {
        return Futures.join(meta.stagingAsync(Caller.ROOT, f.id()), T);
    }

    /** What L3 holds of the chunk (empty when missing). */
    byte[] inL3(ChunkAddress a) {
        return Buffers.drain(Futures.join(l3.readAsync(a, 0, a.chunkSize(), IoOptions.DEFAULT), T));
    }

    static byte[] read(L2Tier t, ChunkAddress a, IoOptions io) {
        return Buffers.drain(Futures.join(t.readAsync(a, 0, a.chunkSize(), io), T));
    }

    /** Writes {@code n} whole chunks of random bytes (from {@code seed}) from chunk 0 on; returns them. */
    static byte[][] writeChunks(L2Tier t, InodeAttrs f, IoOptions io, int n, long seed) {
        return writeChunks(t, f, io, n, seed, f.layout().chunkSize());
    }

    /** Writes the first {@code bytes} of {@code n} chunks with random bytes (from {@code seed}) from chunk 0 on; returns them. */
    static byte[][] writeChunks(L2Tier t, InodeAttrs f, IoOptions io, int n, long seed, int bytes) {
        byte[][] data = new byte[n][];
        for (int i = 0; i < n; i++) {
            data[i] = L2StagingTest.bytes(bytes, seed + i);
            write(t, chunk(f, i), 0, data[i], io);
        }
        return data;
    }

    static void write(L2Tier t, ChunkAddress a, long offset, byte[] bytes, IoOptions io) {
        Futures.join(t.writeAsync(a, offset, Unpooled.wrappedBuffer(bytes), io), T);
    }

    static StrataException failure(Runnable r) {
        try {
            r.run();
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError("expected a failure");
    }

    @Override
    public void close() {
        tiers.forEach(L2Tier::close);
        agents.values().forEach(L2Agent::close);
        l3.close();
        metaRpc.close();
        ctx.close();
        cluster.close();
    }
}
