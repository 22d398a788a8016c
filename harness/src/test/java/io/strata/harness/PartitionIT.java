package io.strata.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.storage.StorageNode;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.placement.StaticRoutingSource;
import io.strata.protocol.routing.TargetState;
import io.strata.core.util.Eventually;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A storage node cut off from the cluster manager (every message it sends there is dropped) while
 * clients write on both sides of the partition: one client keeps the routing from before the
 * partition, so it only ever writes through the cut-off node (the chain's head); another follows
 * the manager. The cut-off node fences itself (stops acknowledging writes) before the manager
 * expires its lease and lets the chain go on without it, so no write is acknowledged by both
 * sides: every write the old configuration acknowledged precedes the fence, every write the new
 * one acknowledged follows it, and after the partition heals every acknowledged write is on
 * every replica.
 */
class PartitionIT {
    static final int CHUNK = 64 * 1024;
    static final int VALUE = 16 * 1024;
    static final Duration LEASE = Duration.ofSeconds(3);
    static final Duration T = Duration.ofSeconds(60);
    /** Longest a sent acknowledgement may take to reach its client here (the window to the lease expiry is ~1.5 s). */
    static final Duration DELIVERY = Duration.ofMillis(250);
    static final java.util.Set<String> TO_MANAGER = java.util.Set.of("Heartbeat", "RegisterNode", "GetRouting");

    @TempDir
    Path dir;

    /** One acknowledged write: its chunk, value, when the acknowledgement arrived, and which client. */
    record Ack(ChunkAddress chunk, long value, long ackNanos, String client) {
    }

    /** Writes a new chunk per write (inode {@code inode}, index = sequence) until stopped; records acknowledgements and failures. */
    static Thread writer(String name, StorageClient c, long inode, Duration timeout, List<Ack> acks, List<Long> failures,
                         AtomicBoolean stop) {
        IoOptions io = IoOptions.DEFAULT.withTimeout(timeout);
        return Thread.ofPlatform().name("partition-" + name).start(() -> {
            int seq = 0;
            while (!stop.get()) {
                ChunkAddress a = StorageCluster.chunk(inode, seq, 1, CHUNK);
                long value = inode << 32 | seq;
                seq++;
                ByteBuf b = Registers.encode(value, VALUE);
                try {
                    Futures.join(c.writeAsync(a, 0, b, io), Duration.ofSeconds(10));
                    acks.add(new Ack(a, value, System.nanoTime(), name));
                } catch (RuntimeException e) {
                    failures.add(System.nanoTime());
                    sleep(50);
                } finally {
                    b.release();
                }
            }
        });
    }

    /** Writes the node has acknowledged to clients (its request counter). */
    static double acknowledgedBy(StorageNode n) {
        var c = n.context().meters().find("strata.storage.requests").tag("op", "write").tag("status", "OK").counter();
        return c == null ? 0 : c.count();
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void aPartitionedNodeFencesBeforeItsLeaseExpiresAndNoWriteIsAcknowledgedByBothSides() throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir, 21).nodes(3).chains(1).managed(LEASE).start()) {
            RoutingInfo before = cluster.awaitServing(T);
            TargetId headT = before.writePath(ChainId.of(1)).get(0);
            int head = StorageCluster.nodeOf(headT);
            StorageNode n = cluster.node(head);
            // client "old": routing frozen as it was before the partition (always the cut-off head, old chain version)
            StorageClient old = new StorageClient(cluster.clientContext("old"), new StaticRoutingSource(before), RpcOptions.DEFAULTS,
                    StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(1)));
            // client "new": follows the manager
            StorageClient fresh = cluster.client("new", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(1)));
            List<Ack> acks = java.util.Collections.synchronizedList(new ArrayList<>());
            List<Long> oldFailed = java.util.Collections.synchronizedList(new ArrayList<>());
            List<Long> newFailed = java.util.Collections.synchronizedList(new ArrayList<>());
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong fencedAt = new AtomicLong();
            AtomicLong managerLiveAtFence = new AtomicLong(-1);
            java.util.concurrent.atomic.AtomicReference<Double> acksByCutNodeAtFence = new java.util.concurrent.atomic.AtomicReference<>();
            n.agent().orElseThrow().onFenceChange(f -> {
                if (f && fencedAt.get() == 0) {
                    fencedAt.set(System.nanoTime());
                    // the node's own listener closed its gate before this one runs; an acknowledgement that
                    // passed the gate just before may still be counting itself: give it a moment
                    sleep(20);
                    acksByCutNodeAtFence.set(acknowledgedBy(n));
                    managerLiveAtFence.set(cluster.manager().leader(T).view().nodes().get(NodeId.of(head)).live() ? 1 : 0);
                }
            });
            // when routing that moves the cut-off head out of the chain reaches the client that follows the
            // manager (it can only write to the new head after that)
            AtomicLong expiredSeen = new AtomicLong();
            fresh.routing().onChange(r -> {
                if (r.target(headT).state() != TargetState.SERVING) {
                    expiredSeen.compareAndSet(0, System.nanoTime());
                }
            });
            Thread w1 = writer("old", old, 1000, Duration.ofMillis(800), acks, oldFailed, stop);
            Thread w2 = writer("new", fresh, 2000, Duration.ofSeconds(10), acks, newFailed, stop);
            try {
                Eventually.await("writes on both clients", T, () -> List.copyOf(acks).stream().map(Ack::client).distinct().count() == 2);
                // the partition: every message from the head to the manager is dropped (heartbeats,
                // registrations, routing requests); its traffic with the other storage nodes goes on
                FaultInjector.Rule cut = cluster.context(head).faults().arm(FaultPoint.RPC_SEND, new Fault.Drop())
                        .when(s -> TO_MANAGER.contains(s.message()));
                long partitionedAt = System.nanoTime();
                long expiredAt = Eventually.value("the manager moves the cut-off node out of its chain", T, () -> expiredSeen.get() == 0
                        ? null : expiredSeen.get());
                Eventually.await("the new configuration acknowledges writes", T, () -> {
                    synchronized (acks) {
                        return List.copyOf(acks).stream().anyMatch(a -> a.client().equals("new") && a.ackNanos() > expiredAt);
                    }
                });
                sleep(1000);
                double acksByCutNodeAtEnd = acknowledgedBy(n);
                stop.set(true);
                w1.join(20_000);
                w2.join(20_000);
                assertThat(fencedAt.get()).as("the cut-off node fenced itself").isPositive();
                assertThat(managerLiveAtFence.get()).as("the manager still held its lease when it fenced").isEqualTo(1);
                assertThat(fencedAt.get()).isLessThan(expiredAt);
                assertThat(n.gate().isOpen()).isFalse();
                List<Ack> all = List.copyOf(acks);
                // a client learns of an acknowledgement a moment after the node sent it: one sent just before the
                // fence may arrive just after it
                long settled = fencedAt.get() + DELIVERY.toNanos();
                long lastBeforeFence = all.stream().mapToLong(Ack::ackNanos).filter(t -> t < settled).max().orElseThrow();
                long firstAfterFence = all.stream().mapToLong(Ack::ackNanos).filter(t -> t > settled).min().orElseThrow();
                System.out.printf("[strata] partition: fenced %.2f s after the cut, moved out of its chain %.2f s after (lease %s);"
                                + " acknowledgements received up to fence%+.2f s, then none until fence+%.2f s (chain change%+.2f s);"
                                + " %d writes acknowledged, %d + %d refused or timed out%n", (fencedAt.get() - partitionedAt) / 1e9,
                        (expiredAt - partitionedAt) / 1e9, LEASE, (lastBeforeFence - fencedAt.get()) / 1e9,
                        (firstAfterFence - fencedAt.get()) / 1e9, (firstAfterFence - expiredAt) / 1e9, all.size(), oldFailed.size(),
                        newFailed.size());
                // 1. the cut-off node acknowledged nothing once fenced
                assertThat(acksByCutNodeAtEnd).as("writes the cut-off node acknowledged after its fence")
                        .isEqualTo(acksByCutNodeAtFence.get());
                assertThat(all.stream().filter(a -> a.client().equals("old")).mapToLong(Ack::ackNanos).max().orElseThrow())
                        .as("the client stuck on the old routing got its last acknowledgement by the fence")
                        .isLessThan(settled);
                assertThat(List.copyOf(oldFailed).stream().filter(t -> t > fencedAt.get())).as("and kept trying in vain").isNotEmpty();
                // 2. nobody acknowledged anything between the fence and the chain change: never both sides at once
                assertThat(firstAfterFence).as("the first acknowledgement after the fence comes from the new configuration")
                        .isGreaterThanOrEqualTo(expiredAt);
                // the partition heals: the node registers again, is resynced and serves; nothing acknowledged is lost
                cluster.context(head).faults().disarm(cut);
                RoutingInfo healed = cluster.awaitServing(T);
                assertThat(healed.target(headT).state()).isEqualTo(TargetState.SERVING);
                StorageClient check = cluster.client("check");
                for (Ack a : List.copyOf(acks)) {
                    for (TargetId t : healed.chain(ChainId.of(1)).targets()) {
                        StorageClient.ChunkRead r = Futures.join(check.readChunkAsync(a.chunk(), 0, CHUNK,
                                IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20)), Optional.of(t)), T);
                        try {
                            assertThat(Registers.decode(r.data(), VALUE)).as("%s on %s", a.chunk().id(), t).isEqualTo(a.value());
                        } finally {
                            r.data().release();
                        }
                    }
                }
                Replicas.assertIdentical(check, healed);
            } finally {
                stop.set(true);
                w1.join(20_000);
                w2.join(20_000);
                old.close();
            }
        }
    }
}
