package io.strata.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.strata.core.ChainId;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultScope;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.storage.engine.ChunkEngine;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.core.util.Eventually;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Storage nodes that register with a real cluster manager and route by its chain tables: a
 * stopped node's targets go offline and the chains keep taking writes, a restarted node is
 * resynced and serves again with exactly its peers' chunks, and a target whose disk fails (it
 * cannot be opened, or keeps failing with I/O errors) is reported offline while its chain goes on.
 */
class ManagedStorageIT {
    static final int CHUNK = 256 * 1024;
    static final int VALUE = 64 * 1024;
    static final Duration LEASE = Duration.ofSeconds(2);
    static final Duration T = Duration.ofSeconds(60);
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(30));

    @TempDir
    Path dir;

    /** Writes value {@code v} to chunk {@code i} of inode 10 on chain {@code chain}. */
    static void put(StorageClient c, int chain, int i, long v) {
        ByteBuf b = Registers.encode(v, VALUE);
        try {
            Futures.join(c.writeAsync(StorageCluster.chunk(10, i, chain, CHUNK), 0, b, IO), T);
        } finally {
            b.release();
        }
    }

    static long get(StorageClient c, ChunkAddress a, Optional<TargetId> replica) {
        StorageClient.ChunkRead r = Futures.join(c.readChunkAsync(a, 0, CHUNK, IO, replica), T);
        try {
            return Registers.decode(r.data(), VALUE);
        } finally {
            r.data().release();
        }
    }

    /** Every chunk reads back as its expected value from every target of its chain. */
    static void verify(StorageCluster cluster, StorageClient c, Map<ChunkAddress, Long> expect) {
        RoutingInfo r = cluster.awaitServing(T);
        for (Map.Entry<ChunkAddress, Long> e : expect.entrySet()) {
            for (TargetId t : r.chain(e.getKey().chain()).targets()) {
                assertThat(get(c, e.getKey(), Optional.of(t))).as("%s via %s", e.getKey().id(), t).isEqualTo(e.getValue());
            }
        }
        assertThat(Replicas.assertIdentical(c, r)).isEqualTo(expect.size());
    }

    @Test
    void nodesRegisterRouteByTheManagerAndAReturningNodeIsResynced() throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir, 7).nodes(3).chains(2).managed(LEASE).start()) {
            RoutingInfo r = cluster.awaitServing(T);
            assertThat(r.chains()).hasSize(2);
            for (ChainInfo ch : r.chains().values()) {
                assertThat(ch.targets().stream().map(StorageCluster::nodeOf).distinct()).as("%s spans 3 nodes", ch.id()).hasSize(3);
            }
            for (int i = 1; i <= 3; i++) {
                assertThat(r.node(NodeId.of(i)).port()).isEqualTo(cluster.address(i).getPort());
                assertThat(cluster.node(i).gate().isOpen()).isTrue();
            }
            StorageClient c = cluster.client("writer", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(3)));
            Map<ChunkAddress, Long> expect = new HashMap<>();
            for (int i = 0; i < 12; i++) {
                int chain = 1 + i % 2;
                put(c, chain, i, 100 + i);
                expect.put(StorageCluster.chunk(10, i, chain, CHUNK), 100L + i);
            }
            long before = r.version();
            cluster.kill(3);
            RoutingInfo down = Eventually.value("node 3's targets offline", T, () -> {
                RoutingInfo x = cluster.managerRouting();
                return x.targets().values().stream().filter(t -> t.node().value() == 3)
                        .allMatch(t -> t.state() == TargetState.OFFLINE) ? x : null;
            });
            assertThat(down.version()).isGreaterThan(before);
            // the chains go on with two replicas: new chunks, overwrites, a removal
            for (int i = 0; i < 16; i++) {
                int chain = 1 + i % 2;
                put(c, chain, i, 1000 + i);
                expect.put(StorageCluster.chunk(10, i, chain, CHUNK), 1000L + i);
            }
            ChunkAddress removed = StorageCluster.chunk(10, 3, 2, CHUNK);
            Futures.join(c.removeAsync(removed, IO), T);
            expect.remove(removed);
            cluster.restart(3);
            cluster.awaitServing(T);
            expect.put(removed, 0L); // a removed chunk reads as empty (and its tombstone is on every replica)
            verify(cluster, c, expect);
            // the restarted node was resynced: its predecessors copied what it missed
            assertThat(cluster.node(3).agent().orElseThrow().incarnation()).isNotZero();
        }
    }

    @Test
    void aTargetThatCannotBeOpenedIsReportedOfflineAndItsChainGoesOn() throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir, 8).nodes(3).chains(2).managed(LEASE).start()) {
            StorageClient c = cluster.client("writer", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(3)));
            Map<ChunkAddress, Long> expect = new HashMap<>();
            for (int i = 0; i < 6; i++) {
                put(c, 1 + i % 2, i, 10 + i);
                expect.put(StorageCluster.chunk(10, i, 1 + i % 2, CHUNK), 10L + i);
            }
            cluster.kill(2);
            // its first target's directory is gone and a file stands in its place: the disk "failed"
            Path broken = cluster.nodeDir(2).resolve("t2001");
            try (Stream<Path> walk = Files.walk(broken)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
            Files.writeString(broken, "not a directory");
            cluster.restart(2);
            assertThat(cluster.node(2).failedTargets()).containsKey(TargetId.of(2001));
            RoutingInfo r = Eventually.value("t2001 offline, t2002 serving again", T, () -> {
                RoutingInfo x = cluster.managerRouting();
                return x.target(TargetId.of(2001)).state() == TargetState.OFFLINE
                        && x.target(TargetId.of(2002)).state() == TargetState.SERVING ? x : null;
            });
            ChainId broken1 = r.chains().values().stream().filter(ch -> ch.targets().contains(TargetId.of(2001))).findFirst()
                    .orElseThrow().id();
            assertThat(r.writePath(broken1)).hasSize(2).doesNotContain(TargetId.of(2001));
            for (int i = 0; i < 6; i++) {
                put(c, 1 + i % 2, i, 20 + i);
                expect.put(StorageCluster.chunk(10, i, 1 + i % 2, CHUNK), 20L + i);
            }
            for (Map.Entry<ChunkAddress, Long> e : expect.entrySet()) {
                for (TargetId t : r.readable(e.getKey().chain())) {
                    assertThat(get(c, e.getKey(), Optional.of(t))).isEqualTo(e.getValue());
                }
            }
        }
    }

    @Test
    void aTargetThatKeepsFailingWithIoErrorsIsTakenOutOfServiceWithoutFailingWrites() throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir, 9).nodes(3).chains(1).managed(LEASE).start()) {
            RoutingInfo r = cluster.awaitServing(T);
            ChainInfo chain = r.chain(ChainId.of(1));
            TargetId victim = chain.targets().get(1); // the middle replica
            int node = StorageCluster.nodeOf(victim);
            StorageClient c = cluster.client("writer", StorageClientOptions.DEFAULTS.withAttemptTimeout(Duration.ofSeconds(3)));
            put(c, 1, 0, 1);
            // from now on every data fdatasync on the victim's disk fails with EIO
            cluster.context(node).faults().arm(ChunkEngine.DATA_SYNC,
                            new Fault.Fail(new StrataException(Status.IO_ERROR, "Input/output error (injected)")))
                    .when(s -> s.equals(FaultScope.detail(victim.toString())));
            Map<ChunkAddress, Long> expect = new HashMap<>();
            for (int i = 0; i < 8; i++) {
                put(c, 1, i, 50 + i); // every write succeeds: the chain routes around the failing disk
                expect.put(StorageCluster.chunk(10, i, 1, CHUNK), 50L + i);
            }
            assertThat(cluster.node(node).failedTargets()).containsKey(victim);
            RoutingInfo after = Eventually.value("the failing target offline", T, () -> {
                RoutingInfo x = cluster.managerRouting();
                return x.target(victim).state() == TargetState.OFFLINE ? x : null;
            });
            assertThat(after.writePath(ChainId.of(1))).doesNotContain(victim).hasSize(2);
            for (Map.Entry<ChunkAddress, Long> e : expect.entrySet()) {
                for (TargetId t : after.readable(ChainId.of(1))) {
                    assertThat(get(c, e.getKey(), Optional.of(t))).isEqualTo(e.getValue());
                }
            }
            List<TargetId> serving = after.readable(ChainId.of(1));
            assertThat(serving).hasSize(2);
        }
    }
}
