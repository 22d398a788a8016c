package io.strata.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.strata.core.NodeContext;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l3.ReadPolicy;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.testing.Seeded;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several clients read and write the same chunks at once, through different replicas, while
 * every node and client delays and duplicates messages; the recorded history must be
 * linearizable (each chunk is a register). Duplicated writes also exercise request-id dedupe,
 * delayed forwards leave chunks dirty so reads must ask the tail.
 */
class StorageLinearizabilityIT {
    static final int CHUNK = 64 * 1024;
    static final int VALUE = 4096;
    static final int CLIENTS = 5;
    static final int OPS = 70;

    @TempDir
    Path dir;

    static void armDelaysAndDuplicates(FaultInjector f, List<FaultInjector.Rule> rules) {
        rules.add(f.arm(FaultPoint.RPC_SEND, new Fault.Duplicate()).probability(0.05));
        rules.add(f.arm(FaultPoint.RPC_SEND, new Fault.Delay(Duration.ofMillis(25))).probability(0.12));
        rules.add(f.arm(FaultPoint.RPC_SEND, new Fault.Delay(Duration.ofMillis(180))).probability(0.03));
    }

    @Seeded
    @Test
    void concurrentReadsAndWritesThroughEveryReplicaAreLinearizable(long seed) throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir, seed).nodes(3).chains(2).forwardTimeout(Duration.ofSeconds(1)).start()) {
            List<ChunkAddress> keys = List.of(
                    StorageCluster.chunk(1, 0, 1, CHUNK), StorageCluster.chunk(1, 1, 2, CHUNK),
                    StorageCluster.chunk(2, 0, 1, CHUNK), StorageCluster.chunk(2, 1, 2, CHUNK));
            List<FaultInjector.Rule> rules = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                armDelaysAndDuplicates(cluster.context(i).faults(), rules);
            }
            ReadPolicy[] policies = {ReadPolicy.RANDOM, ReadPolicy.ROUND_ROBIN, ReadPolicy.PREFER_LOCAL, ReadPolicy.BY_CHUNK,
                    ReadPolicy.ROUND_ROBIN};
            List<StorageClient> clients = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                NodeContext ctx = cluster.clientContext("client-" + c);
                armDelaysAndDuplicates(ctx.faults(), rules);
                StorageClientOptions o = StorageClientOptions.DEFAULTS.withReadPolicy(policies[c]).withLocalHost("h" + (c % 3 + 1))
                        .withAttemptTimeout(Duration.ofSeconds(3));
                StorageClient client = new StorageClient(ctx, cluster.routing(), io.strata.core.rpc.RpcOptions.DEFAULTS, o);
                clients.add(client);
            }
            History history = new History();
            AtomicInteger failedReads = new AtomicInteger();
            AtomicInteger unknownWrites = new AtomicInteger();
            IoOptions io = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(15));
            List<Thread> threads = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                int id = c;
                StorageClient client = clients.get(c);
                Random rnd = new Random(seed + c);
                threads.add(Thread.ofPlatform().name("lin-client-" + c).start(() -> {
                    for (int i = 0; i < OPS; i++) {
                        ChunkAddress a = keys.get(rnd.nextInt(keys.size()));
                        String key = a.id().toString();
                        if (rnd.nextInt(100) < 45) {
                            long value = ((long) (id + 1) << 32) | (i + 1);
                            History.Pending p = history.write(id, key, value);
                            ByteBuf data = Registers.encode(value, VALUE);
                            try {
                                Futures.join(client.writeAsync(a, 0, data, io));
                                p.ok(0);
                            } catch (RuntimeException e) {
                                unknownWrites.incrementAndGet();
                                p.unknown();
                            } finally {
                                data.release();
                            }
                        } else {
                            History.Pending p = history.read(id, key);
                            try {
                                ByteBuf data = Futures.join(client.readAsync(a, 0, VALUE, io));
                                try {
                                    p.ok(Registers.decode(data, VALUE));
                                } finally {
                                    data.release();
                                }
                            } catch (RuntimeException e) {
                                failedReads.incrementAndGet();
                            }
                        }
                    }
                }));
            }
            for (Thread t : threads) {
                t.join(240_000);
            }
            for (int c = 0; c < CLIENTS; c++) {
                clients.get(c).close();
            }
            Linearizability.Result result = Linearizability.check(history, 0);
            String dump = history.ops().stream().map(Object::toString).reduce("", (x, y) -> x + y + "\n");
            Files.writeString(dir.resolve("history.txt"), dump);
            assertThat(result.ok()).as("history (%d ops) linearizable: %s\n%s", result.operations(), result.explanation(), dump).isTrue();
            assertThat(history.ops()).hasSizeGreaterThan(CLIENTS * OPS * 3 / 4);
            assertThat(failedReads.get()).as("reads never fail because a write is in flight").isZero();
            int duplicates = 0;
            int delays = 0;
            for (FaultInjector.Rule r : rules) {
                String s = r.toString();
                if (rules.indexOf(r) % 3 == 0) {
                    duplicates += r.fired();
                } else {
                    delays += r.fired();
                }
            }
            assertThat(duplicates).as("duplicated messages").isGreaterThan(10);
            assertThat(delays).as("delayed messages").isGreaterThan(10);
            double queries = 0;
            for (int i = 1; i <= 3; i++) {
                var reads = cluster.context(i).meters().find("strata.storage.requests").tag("op", "read").counters();
                assertThat(reads.stream().mapToDouble(x -> x.count()).sum()).as("node %d served reads", i).isPositive();
                queries += cluster.context(i).meters().find("strata.storage.requests").tag("op", "query").counters()
                        .stream().mapToDouble(x -> x.count()).sum();
            }
            assertThat(queries).as("dirty reads asked the tail").isPositive();
            System.out.printf("[strata] linearizability: %d ops, %d unknown writes, %d duplicated and %d delayed messages, %.0f tail queries%n",
                    result.operations(), unknownWrites.get(), duplicates, delays, queries);
        }
    }
}
