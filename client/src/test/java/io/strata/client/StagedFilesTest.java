package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.l2.agent.AgentRouting;
import io.strata.l2.agent.L2Agent;
import io.strata.l2.agent.L2AgentConfig;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.meta.Staging;
import io.strata.testing.Seeded;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files under {@code tiers.l2 = stage} through the whole client: the policy picks the L2 layer
 * of the tier stack, close waits for the durability the policy names, and every client reads
 * the newest bytes.
 */
class StagedFilesTest {
    /** Two L2 agents in this JVM, listed in the cluster's routing. */
    static List<AutoCloseable> agents(TestCluster c, Path dir, long seed) throws Exception {
        return agents(c, dir, seed, L2AgentConfig.DEFAULT_CAPACITY);
    }

    /** As above, each agent holding at most {@code capacity} of copies. */
    static List<AutoCloseable> agents(TestCluster c, Path dir, long seed, io.strata.core.DataSize capacity) throws Exception {
        List<AutoCloseable> out = new ArrayList<>();
        NodeContext ctx = NodeContext.seeded("agents", seed);
        RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        MetaClient meta = new MetaClient(ctx, rpc, List.of(c.cluster.metaAddress()));
        StorageClient l3 = new StorageClient(ctx, c.cluster.routingSource(), RpcOptions.DEFAULTS, StorageClientOptions.DEFAULTS);
        for (int id : new int[] {11, 12}) {
            L2Agent a = L2Agent.start(NodeContext.seeded("agent-" + id, seed + id), L2AgentConfig.of(NodeId.of(id), dir.resolve("agent-" + id)).withCapacity(capacity),
                    c.cluster.routingSource(), meta, l3, RpcOptions.DEFAULTS, new InetSocketAddress("127.0.0.1", 0));
            c.cluster.storage().updateRouting(r -> AgentRouting.with(r, id, a.address(), "node-" + id, true));
            out.add(0, a);
        }
        out.add(l3);
        out.add(rpc);
        out.add(ctx);
        return out;
    }

    static void closeAll(List<AutoCloseable> all) throws Exception {
        for (AutoCloseable a : all) {
            a.close();
        }
    }

    interface Body {
        void run(TestCluster c) throws Exception;
    }

    /** Runs {@code body} on a cluster with two agents, closed after it. */
    static void withAgents(Path dir, long seed, Body body) throws Exception {
        withAgents(dir, seed, L2AgentConfig.DEFAULT_CAPACITY, body);
    }

    /** As above, each agent holding at most {@code capacity} of copies. */
    static void withAgents(Path dir, long seed, io.strata.core.DataSize capacity, Body body) throws Exception {
        try (TestCluster c = TestCluster.start(dir.resolve("c"), seed)) {
            List<AutoCloseable> agents = agents(c, dir, seed, capacity);
            try {
                body.run(c);
            } finally {
                closeAll(agents);
            }
        }
    }

    private static byte[] write(StrataFileSystem fs, String path, int n, long seed) {
        byte[] data = new byte[n];
        new Random(seed).nextBytes(data);
        try (StrataFile f = fs.create(path)) {
            f.write(0, ByteBuffer.wrap(data));
        }
        return data;
    }

    static byte[] read(StrataFileSystem fs, String path) {
        try (StrataFile f = fs.openRead(path)) {
            ByteBuffer b = ByteBuffer.allocate((int) f.size());
            f.read(0, b);
            return b.array();
        }
    }

    @Seeded
    @Test
    void closeInAStagedDirectoryReturnsOnceTheFileIsDurableInL3(long seed, @TempDir Path dir) throws Exception {
        withAgents(dir, seed, c -> {
            StrataFileSystem writer = c.client("writer");
            writer.mkdir("/ckpt", 0755);
            writer.setPolicy("/ckpt", "tiers.l2=stage");
            byte[] data = write(writer, "/ckpt/shard-0", 3 * (1 << 20) + 12345, seed);

            FileStatus st = writer.stat("/ckpt/shard-0");
            Staging s = Futures.join(writer.meta().stagingAsync(Caller.ROOT, st.inode()), Duration.ofSeconds(10)).orElseThrow();
            assertThat(s.state()).as("close waited for the drain (durability = l3)").isEqualTo(Staging.State.DURABLE);
            assertThat(read(c.client("reader"), "/ckpt/shard-0")).isEqualTo(data);
        });
    }

    @Seeded
    @Test
    void withDurabilityL2AnotherClientReadsTheStagedBytesAtOnce(long seed, @TempDir Path dir) throws Exception {
        withAgents(dir, seed, c -> {
            StrataFileSystem writer = c.client("writer");
            writer.mkdir("/ckpt", 0755);
            writer.setPolicy("/ckpt", "tiers.l2=stage", "durability=l2");
            byte[] data = write(writer, "/ckpt/shard-1", 2 * (1 << 20) + 7, seed);
            byte[] again = write(writer, "/ckpt/shard-2", 70_000, seed + 1);

            StrataFileSystem reader = c.client("reader");
            assertThat(read(reader, "/ckpt/shard-1")).isEqualTo(data);
            assertThat(read(reader, "/ckpt/shard-2")).isEqualTo(again);
            FileStatus st = writer.stat("/ckpt/shard-1");
            assertThat(Futures.join(writer.meta().stagingAsync(Caller.ROOT, st.inode()), Duration.ofSeconds(10))).isPresent();
        });
    }

    @Seeded
    @Test
    void filesOutsideAStagedDirectoryNeverTouchL2(long seed, @TempDir Path dir) throws Exception {
        withAgents(dir, seed, c -> {
            StrataFileSystem fs = c.client("plain");
            byte[] data = write(fs, "/plain", 1 << 20, seed);
            FileStatus st = fs.stat("/plain");
            assertThat(Futures.join(fs.meta().stagingAsync(Caller.ROOT, st.inode()), Duration.ofSeconds(10))).isEmpty();
            assertThat(read(c.client("reader"), "/plain")).isEqualTo(data);
        });
    }

    @Seeded
    @Test
    void withNoAgentServingAStagedFileIsWrittenStraightToL3(long seed, @TempDir Path dir) throws Exception {
        try (TestCluster c = TestCluster.start(dir.resolve("c"), seed)) {
            StrataFileSystem writer = c.client("writer");
            writer.mkdir("/ckpt", 0755);
            writer.setPolicy("/ckpt", "tiers.l2=stage", "durability=l2");
            byte[] data = write(writer, "/ckpt/alone", (1 << 20) + 99, seed);
            FileStatus st = writer.stat("/ckpt/alone");
            assertThat(Futures.join(writer.meta().stagingAsync(Caller.ROOT, st.inode()), Duration.ofSeconds(10)))
                    .as("no staging epoch without agents").isEmpty();
            assertThat(read(c.client("reader"), "/ckpt/alone")).isEqualTo(data);
        }
    }
}
