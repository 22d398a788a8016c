package io.strata.l2;

import static io.strata.l2.L2Cluster.T;
import static io.strata.l2.L2Cluster.chunk;
import static io.strata.l2.L2Cluster.staged;
import static io.strata.l2.L2Cluster.write;
import static io.strata.l2.L2StagingTest.bytes;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Timer;
import io.strata.core.DataSize;
import io.strata.core.qos.QosShares;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.StageHints;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.l2.agent.L2AgentConfig;
import io.strata.l2.pool.L2Tier;
import io.strata.l2.pool.PrefetchClient;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.testing.Buffers;
import io.strata.testing.Seeded;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An L2 agent's disk is shared between QoS classes like a storage target's: the class a client
 * gives a read or a staged write, the drain's background class and a hint's class reach the
 * agent's scheduler, and a class's limit there holds it back while other classes pass. A
 * cluster-wide drain budget is shared by the agents that serve.
 */
class L2QosTest {
    /** How many operations of {@code c} agent {@code id}'s disk scheduler has let through. */
    static long scheduled(L2Cluster c, int id, QosClass q) {
        Timer t = c.agentContext(id).meters().find("strata.qos.queued").tag("class", q.policyName()).tag("device", "l2-" + id).timer();
        return t == null ? 0 : t.count();
    }

    @Seeded
    @Test
    void aClassOverItsLimitOnTheAgentsDiskWaitsWhileAnotherClassIsServed(long seed, @TempDir Path dir) throws Exception {
        // training reads may move one chunk a second on the agent's disk; interactive reads are not limited
        int chunkSize;
        try (L2Cluster c = L2Cluster.start(dir, seed, 1, cfg -> cfg.withQos(L2AgentConfig.DEFAULT_QOS.withShare(QosClass.TRAINING_READ,
                new QosShares.Share(0, 8, 1 << 20))))) {
            L2Tier t = c.tier();
            InodeAttrs f = c.newFile();
            chunkSize = f.layout().chunkSize();
            IoOptions save = staged(true).withStage(new StageHints(true, true, 1)); // one copy, on agent 11
            List<byte[]> data = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                data.add(bytes(chunkSize, seed + i));
                write(t, chunk(f, i), 0, data.get(i), save);
            }

            long start = System.nanoTime();
            List<CompletableFuture<byte[]>> training = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                ChunkAddress a = chunk(f, i);
                training.add(t.readAsync(a, 0, chunkSize, save.withQos(QosClass.TRAINING_READ)).thenApply(Buffers::drain));
            }
            for (int i = 0; i < 4; i++) {
                assertThat(L2Cluster.read(t, chunk(f, i), save.withQos(QosClass.INTERACTIVE))).isEqualTo(data.get(i));
            }
            assertThat(training.stream().filter(CompletableFuture::isDone).count())
                    .as("interactive reads sent after the training reads were served while training reads still waited for their limit")
                    .isLessThan(4);
            for (int i = 0; i < 4; i++) {
                assertThat(Futures.join(training.get(i), T)).isEqualTo(data.get(i));
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            // the first read goes at once, each next one when the limit allows (1 MiB + the op cost per read)
            double least = 3.0 * (chunkSize + QosShares.DEFAULTS.opCost()) / (1 << 20);
            assertThat(seconds).as("4 training reads of %d bytes at 1 MiB/s", chunkSize).isGreaterThanOrEqualTo(least * 0.95);
            assertThat(scheduled(c, 11, QosClass.TRAINING_READ)).isEqualTo(4);
            assertThat(scheduled(c, 11, QosClass.INTERACTIVE)).isEqualTo(4);
            Timer interactive = c.agentContext(11).meters().find("strata.qos.queued").tag("class", "interactive").timer();
            assertThat(interactive.max(TimeUnit.MILLISECONDS)).as("interactive reads never waited for the device").isLessThan(500);
        }
    }

    @Seeded
    @Test
    void aStagedWriteIsScheduledInItsClassOnEveryHolderAndItsDrainInTheBackground(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 2)) {
            L2Tier t = c.tier();
            InodeAttrs f = c.newFile();
            byte[] data = bytes(f.layout().chunkSize(), seed);
            write(t, chunk(f, 0), 0, data, staged(true)); // two copies, in the checkpoint class

            for (int id : List.of(11, 12)) {
                assertThat(scheduled(c, id, QosClass.CHECKPOINT)).as("agent %d stored its copy in the writer's class", id).isEqualTo(1);
                assertThat(scheduled(c, id, QosClass.BACKGROUND)).isZero();
            }
            Futures.join(t.flushAsync(f.id(), staged(true)), T);
            c.agent(11).drainNow();
            c.agent(12).drainNow();
            assertThat(c.inL3(chunk(f, 0))).isEqualTo(data);
            assertThat(scheduled(c, 11, QosClass.BACKGROUND) + scheduled(c, 12, QosClass.BACKGROUND))
                    .as("the drain read the copy it sent to L3 in the background class").isGreaterThanOrEqualTo(1);
        }
    }

    @Seeded
    @Test
    void aFetchWritesItsCopyInTheHintsClass(long seed, @TempDir Path dir) throws Exception {
        try (L2Cluster c = L2Cluster.start(dir, seed, 1); PrefetchClient p = L2PrefetchTest.planner(c)) {
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            L2PrefetchTest.writeL3(c, chunk(f, 0), bytes(cs, seed));
            L2PrefetchTest.writeL3(c, chunk(f, 1), bytes(cs, seed + 1));
            long v = f.dataVersion();

            Futures.join(p.fetchAsync(11, chunk(f, 0), 0, v, List.of(11), 1, QosClass.TRAINING_READ, T), T);
            assertThat(scheduled(c, 11, QosClass.TRAINING_READ)).isEqualTo(1);
            assertThat(scheduled(c, 11, QosClass.PREFETCH)).isZero();
            Futures.join(p.fetchAsync(11, chunk(f, 1), 0, v, List.of(11), 1, QosClass.PREFETCH, T), T);
            assertThat(scheduled(c, 11, QosClass.PREFETCH)).isEqualTo(1);
        }
    }

    static double drainLimit(L2Cluster c, int id) {
        return c.agentContext(id).meters().get("strata.l2.drain.limit").gauge().value();
    }

    private static double drainBacklog(L2Cluster c, int id) {
        return c.agentContext(id).meters().get("strata.l2.drain.backlog").gauge().value();
    }

    @Seeded
    @Test
    void aClusterWideDrainBudgetIsSharedByTheServingAgents(long seed, @TempDir Path dir) throws Exception {
        long budget = 1 << 20; // 1 MiB/s for the whole cluster's drains
        // these agents have no cluster manager to count the ones with a backlog (NodeAgentTest):
        // they split the budget among the agents serving in routing
        try (L2Cluster c = L2Cluster.start(dir, seed, 2, cfg -> cfg.withDrainBudget(DataSize.ofBytes(budget)))) {
            for (int id : List.of(11, 12)) {
                Eventually.await("agent " + id + " drains at half the budget", T, () -> drainLimit(c, id) == budget / 2.0);
            }
            L2Tier t = c.tier();
            InodeAttrs f = c.newFile();
            int cs = f.layout().chunkSize();
            IoOptions io = staged(true);
            byte[][] data = L2Cluster.writeChunks(t, f, io, 4, seed);
            java.util.concurrent.atomic.AtomicLong maxBacklog = new java.util.concurrent.atomic.AtomicLong();
            Thread watch = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    maxBacklog.accumulateAndGet((long) (drainBacklog(c, 11) + drainBacklog(c, 12)), Math::max);
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            watch.setDaemon(true);
            watch.start();
            long start = System.nanoTime();
            Futures.join(t.flushAsync(f.id(), io), T);
            for (int i = 0; i < 4; i++) {
                int index = i;
                Eventually.await("chunk " + i + " in L3", T, () -> java.util.Arrays.equals(c.inL3(chunk(f, index)), data[index]));
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            assertThat(maxBacklog.get()).as("the agents reported what they were draining").isGreaterThanOrEqualTo(cs);
            watch.interrupt();
            for (int id : List.of(11, 12)) {
                Eventually.await("agent " + id + " has nothing left to drain", T, () -> drainBacklog(c, id) == 0);
            }
            // each agent may drain its first chunk at once (the limiter's burst), then one chunk
            // per cs / (budget / 2) seconds; 4 chunks over 2 agents take at least one such wait
            assertThat(seconds).as("4 chunks of %d bytes drained under a budget of %d bytes/s", cs, budget)
                    .isGreaterThanOrEqualTo(0.9 * cs / (budget / 2.0));

            c.kill(12);
            Eventually.await("the agent left serving takes the whole budget", T, () -> drainLimit(c, 11) == budget);
        }
    }
}
