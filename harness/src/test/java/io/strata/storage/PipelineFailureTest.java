package io.strata.storage;

import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.protocol.storage.ChunkSummary;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import io.strata.storage.engine.ChunkEngine;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The failure paths of pipelined writes that {@link PipelineTest} leaves out: a replica's own
 * store failing while its forward fails too, and the catch-up of a chunk that fell behind
 * failing itself. Either way the chunk on that replica is unserved until it is an identical
 * copy again, never wrong: every acknowledged write reads back from every replica, no reader
 * goes back in time, a write the client retried is applied once, and the replicas end with the
 * same versions and bytes.
 */
class PipelineFailureTest {
    static final int SIZE = 1 << 16;
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20));
    static final Fault DISK = new Fault.Fail(new StrataException(Status.IO_ERROR, "injected: the disk refused the write"));

    @TempDir
    Path dir;

    private static CompletableFuture<Void> write(StorageClient c, ChunkAddress a, long value) {
        ByteBuf b = Unpooled.buffer(8).writeLong(value);
        return c.writeAsync(a, 0, b, IO).whenComplete((x, e) -> b.release());
    }

    /** The value and version a read that tries {@code node} first returns (another replica answers when it refuses). */
    private static long[] read(StorageClient c, ChunkAddress a, int node) {
        StorageClient.ChunkRead r = Futures.join(c.readChunkAsync(a, 0, 8, IO, Optional.of(StorageCluster.target(node, 1))));
        byte[] b = drain(r.data());
        return new long[] {b.length < 8 ? 0 : ByteBuffer.wrap(b).getLong(), r.version()};
    }

    private static ChunkStat stat(StorageClient c, ChunkAddress a, int node) {
        return Futures.join(c.statAsync(a, StorageCluster.target(node, 1), Duration.ofSeconds(10)));
    }

    /** Reads {@code node} answered with {@code status}. */
    private static double reads(StorageCluster f, int node, String status) {
        var c = f.context(node).meters().find("strata.storage.requests").tag("op", "read").tag("status", status).counter();
        return c == null ? 0 : c.count();
    }

    /** Every replica has committed {@code version}, holds no pending version, and all hold the same bytes. */
    private static void assertIdentical(StorageClient c, ChunkAddress a, long version) {
        Eventually.await("every replica committed v" + version + " and holds nothing pending", Duration.ofSeconds(20),
                () -> java.util.stream.IntStream.rangeClosed(1, 3).mapToObj(n -> stat(c, a, n))
                        .allMatch(s -> s.pendingVersion() == 0 && s.committedVersion() == version));
        ChunkStat first = stat(c, a, 1);
        for (int n = 1; n <= 3; n++) {
            ChunkStat s = stat(c, a, n);
            assertThat(s.committedVersion()).as("version on node %d", n).isEqualTo(version);
            assertThat(s.crc32c()).as("content on node %d", n).isEqualTo(first.crc32c());
            assertThat(s.length()).as("length on node %d", n).isEqualTo(first.length());
        }
    }

    /**
     * Readers on every replica for the whole test: none may see a value older than one
     * acknowledged before its read began, or older than one it saw before.
     */
    private static final class Readers implements AutoCloseable {
        final AtomicLong acked = new AtomicLong();
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<String> violation = new AtomicReference<>();
        final List<Thread> threads = new ArrayList<>();
        /** Held by each read; {@link #quiet} takes it whole. */
        final ReentrantReadWriteLock reading = new ReentrantReadWriteLock();

        Readers(StorageCluster f, ChunkAddress a, long acked) {
            this.acked.set(acked);
            for (int r = 0; r < 3; r++) {
                StorageClient c = f.client("reader" + r);
                Random rnd = new Random(r);
                threads.add(Thread.ofPlatform().start(() -> {
                    long seen = 0;
                    while (!stop.get() && violation.get() == null) {
                        long floor = this.acked.get();
                        int node = 1 + rnd.nextInt(3);
                        long v;
                        reading.readLock().lock();
                        try {
                            v = read(c, a, node)[0];
                        } catch (RuntimeException e) {
                            violation.set("a read trying node " + node + " first failed: " + e);
                            return;
                        } finally {
                            reading.readLock().unlock();
                        }
                        if (v < floor || v < seen) {
                            violation.set("read " + v + " trying node " + node + " first after " + Math.max(floor, seen)
                                    + " was acknowledged or seen");
                        }
                        seen = Math.max(seen, v);
                    }
                }));
            }
        }

        /**
         * Runs {@code arm} with no read in flight: a rule matches everything from {@code arm()}
         * until {@code when(...)} narrows it, and must not catch a reader's message meanwhile.
         */
        <T> T quiet(java.util.function.Supplier<T> arm) {
            reading.writeLock().lock();
            try {
                return arm.get();
            } finally {
                reading.writeLock().unlock();
            }
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
            assertThat(violation.get()).as("what the readers saw").isNull();
        }
    }

    /** Where the forward of the failing replica fails. */
    private enum ForwardLoss {
        /** the successor refuses it without storing it (its disk is full) */
        REFUSED,
        /** the successor stores it (the tail commits it) but its answer is lost for good */
        ANSWER_LOST
    }

    @Test
    void aStoreFailingWhileItsForwardFailsTooLeavesNoWrongCopyAndAppliesTheWriteOnce() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 84).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(93, 0, 1, SIZE);
            Futures.join(write(c, a, 1));
            long version = 1;
            try (Readers readers = new Readers(f, a, 1)) {
                long value = 10;
                for (int failing = 1; failing <= 2; failing++) { // the head, then the middle
                    int successor = failing + 1;
                    for (ForwardLoss loss : ForwardLoss.values()) {
                        FaultInjector faults = f.context(failing).faults();
                        var disk = faults.arm(ChunkEngine.DATA_SYNC, DISK).times(1);
                        // a node's own sends name the peer it dials ("host:port"); its answers name the caller
                        String toSuccessor = ":" + f.address(successor).getPort();
                        String toTail = ":" + f.address(3).getPort();
                        FaultInjector.Rule forward = readers.quiet(() -> loss == ForwardLoss.REFUSED
                                ? faults.arm(FaultPoint.RPC_SEND, new Fault.Fail(new StrataException(Status.NO_SPACE,
                                                "injected: the successor's disk is full")))
                                        .when(s -> s.message().equals("ForwardUpdate") && s.peer().endsWith(toSuccessor)).times(1)
                                // the successor's answer to the failing replica (not its own forward to the tail)
                                : f.context(successor).faults().arm(FaultPoint.RPC_SEND, new Fault.Fail(new StrataException(
                                                Status.INTERNAL, "injected: the answer to the forward was lost")))
                                        .when(s -> s.message().equals("ForwardUpdate") && !s.peer().endsWith(toTail)).times(1));
                        Futures.join(write(c, a, value)); // the client (node 2: its predecessor) retries the failed update
                        version++;
                        readers.acked.set(value);
                        assertThat(disk.fired()).as("node %d's store failed (%s)", failing, loss).isEqualTo(1);
                        assertThat(forward.fired()).as("node %d's forward failed (%s)", failing, loss).isEqualTo(1);
                        for (int n = 1; n <= 3; n++) {
                            long[] got = read(c, a, n);
                            assertThat(got[0]).as("bytes read trying node %d first after node %d failed (%s)", n, failing, loss)
                                    .isEqualTo(value);
                            assertThat(got[1]).as("the retried write applied once (node %d, %s)", n, loss).isEqualTo(version);
                        }
                        assertIdentical(c, a, version);
                        Futures.join(write(c, a, value + 1)); // a later write builds on the same version everywhere
                        version++;
                        readers.acked.set(value + 1);
                        assertIdentical(c, a, version);
                        value += 10;
                    }
                }
            }
        }
    }

    @Test
    void aFirstVersionThatEveryReplicaFailedToStoreLeavesTheChunkWritable() {
        try (StorageCluster f = StorageCluster.builder(dir, 87).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress a = StorageCluster.chunk(97, 0, 1, SIZE);
            Fault full = new Fault.Fail(new StrataException(Status.NO_SPACE, "injected: no space left on device"));
            List<FaultInjector.Rule> rules = new ArrayList<>();
            for (int n = 1; n <= 3; n++) {
                rules.add(f.context(n).faults().arm(ChunkEngine.DATA_WRITE, full).times(1));
            }
            // every replica fails to store the chunk's first version; the replicas that forwarded
            // it catch up from a tail that has nothing either (the client's retry may then succeed)
            Futures.join(write(c, a, 1).handle((v, e) -> null));
            for (FaultInjector.Rule r : rules) {
                assertThat(r.fired()).isEqualTo(1);
            }
            Futures.join(write(c, a, 2));
            ChunkStat tail = stat(c, a, 3);
            assertIdentical(c, a, tail.committedVersion());
            for (int n = 1; n <= 3; n++) {
                assertThat(read(c, a, n)[0]).as("read trying node %d first", n).isEqualTo(2);
            }
        }
    }

    @Test
    void aReplicaWhoseStoreFailedServesNothingWhileItsForwardIsStillOnItsWay() throws Exception {
        // forwards wait for their answer as long as the write may take, without a retry that would shorten the wait
        try (StorageCluster f = StorageCluster.builder(dir, 86).nodes(3).chains(1).forwardTimeout(Duration.ofSeconds(30)).start()) {
            StorageClient c = f.client("c", StorageClientOptions.DEFAULTS.withAttemptTimeout(IO.timeout()));
            ChunkAddress a = StorageCluster.chunk(95, 0, 1, SIZE);
            Futures.join(write(c, a, 1));
            long version = 1;
            long value = 10;
            String toTail = ":" + f.address(3).getPort();
            for (int failing = 1; failing <= 2; failing++) { // the head, then the middle
                int successor = failing + 1;
                var disk = f.context(failing).faults().arm(ChunkEngine.DATA_SYNC, DISK).times(1);
                // the successor's answer to the failing replica is slow: the tail committed the version long before it arrives
                var slow = f.context(successor).faults().arm(FaultPoint.RPC_SEND, new Fault.Delay(Duration.ofSeconds(5)))
                        .when(s -> s.message().equals("ForwardUpdate") && !s.peer().endsWith(toTail)).times(1);
                CompletableFuture<Void> w = write(c, a, value);
                long next = version + 1;
                int n = failing;
                Eventually.await("node " + n + "'s store failed, the tail committed v" + next + " and the answer is on its way",
                        Duration.ofSeconds(20), () -> disk.fired() == 1 && slow.fired() == 1 && stat(c, a, 3).committedVersion() == next);
                double served = reads(f, failing, "OK");
                double refused = reads(f, failing, "CHUNK_BUSY");
                assertThat(read(c, a, failing)).as("a read trying node %d first before its forward's answer arrived", failing)
                        .containsExactly(value, next);
                assertThat(reads(f, failing, "CHUNK_BUSY")).as("node %d refused the read", failing).isGreaterThan(refused);
                assertThat(reads(f, failing, "OK")).as("reads node %d served with its store failed", failing).isEqualTo(served);
                assertThat(w).as("not acknowledged before the answer arrived").isNotDone();
                Futures.join(w);
                version = next;
                assertIdentical(c, a, version);
                assertThat(read(c, a, failing)).as("node %d after it caught up", failing).containsExactly(value, version);
                value += 10;
            }
        }
    }

    /**
     * What every replica says about one chunk: its stat, its summary in the chain's chunk listing
     * and whether it lists the chunk among its inode's chunks (what the head answers ListInodeChunks
     * with).
     */
    private record Held(ChunkStat stat, ChunkSummary summary, boolean listed) {
    }

    private static Held held(StorageCluster f, StorageClient c, ChunkAddress a, int node) {
        ChunkSummary summary = Futures.join(c.listChunksAsync(a.chain(), StorageCluster.target(node, 1), Duration.ofSeconds(10)))
                .stream().filter(s -> s.id().equals(a.id())).findFirst().orElse(null);
        boolean listed = f.node(node).engine(StorageCluster.target(node, 1)).indexesOf(a.id().inode(), 0, 100)
                .contains(a.id().index());
        return new Held(stat(c, a, node), summary, listed);
    }

    @Test
    void aRemovalWhoseStoreFailedIsCaughtUpAsARemovalNotAsAnEmptyChunk() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 87).nodes(3).chains(1).start()) {
            StorageClient c = f.client("c");
            ChunkAddress kept = StorageCluster.chunk(96, 0, 1, SIZE);
            Futures.join(write(c, kept, 7));
            for (int failing = 1; failing <= 2; failing++) { // the head, then the middle
                ChunkAddress a = StorageCluster.chunk(96, failing, 1, SIZE);
                Futures.join(write(c, a, failing));
                // a removal stores no data file: its store fails where the tombstone is recorded
                var disk = f.context(failing).faults().arm(ChunkEngine.REMOVAL, DISK).times(1);
                Futures.join(c.removeAsync(a, IO)); // acknowledged once the failing replica caught up from the tail
                assertThat(disk.fired()).as("node %d's store of the removal failed", failing).isEqualTo(1);
                Eventually.await("every replica committed the removal (v2) and holds nothing pending", Duration.ofSeconds(20),
                        () -> java.util.stream.IntStream.rangeClosed(1, 3).mapToObj(n -> stat(c, a, n))
                                .allMatch(s -> s.pendingVersion() == 0 && s.committedVersion() == 2));
                Held tail = held(f, c, a, 3);
                assertThat(tail.stat().removed()).as("the tail holds a removal").isTrue();
                for (int n = 1; n <= 3; n++) {
                    Held h = held(f, c, a, n);
                    assertThat(h.stat()).as("stat on node %d after node %d caught up", n, failing).isEqualTo(tail.stat());
                    assertThat(h.summary()).as("node %d lists chunk %s", n, a.id()).isNotNull();
                    assertThat(h.summary().removed()).as("node %d lists chunk %s as removed", n, a.id()).isTrue();
                    assertThat(h.summary().sameAs(tail.summary()))
                            .as("node %d lists %s as the tail lists %s", n, h.summary(), tail.summary()).isTrue();
                    assertThat(h.listed()).as("node %d counts the removed chunk among the inode's chunks", n).isFalse();
                    assertThat(held(f, c, kept, n).listed()).as("node %d counts the kept chunk", n).isTrue();
                    StorageClient.ChunkRead r = Futures.join(c.readChunkAsync(a, 0, 8, IO, Optional.of(StorageCluster.target(n, 1))));
                    assertThat(drain(r.data())).as("a read trying node %d first", n).isEmpty();
                    assertThat(r.version()).as("the version a read trying node %d first returns", n).isEqualTo(2);
                }
            }
        }
    }

    /** How the catch-up of the failing replica fails. */
    private enum CatchUpLoss {
        /** it cannot fetch the tail's copy (the tail does not answer) */
        FETCH,
        /** its own disk refuses to install the copy */
        INSTALL
    }

    @Test
    void aCatchUpThatFailsKeepsTheChunkBehindAndUnservedUntilItIsAnIdenticalCopy() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 85).nodes(3).chains(1).start()) {
            // one attempt lasts the write's whole time: the head retries its forward to a middle that
            // cannot catch up for as long (with shorter attempts, a retry after the head gave up would
            // be answered from the head's and the tail's copies)
            StorageClient c = f.client("c", StorageClientOptions.DEFAULTS.withAttemptTimeout(IO.timeout()));
            ChunkAddress a = StorageCluster.chunk(94, 0, 1, SIZE);
            Futures.join(write(c, a, 1));
            long version = 1;
            try (Readers readers = new Readers(f, a, 1)) {
                long value = 10;
                for (int failing = 1; failing <= 2; failing++) { // the head, then the middle
                    for (CatchUpLoss loss : CatchUpLoss.values()) {
                        FaultInjector faults = f.context(failing).faults();
                        long before = version;
                        if (loss == CatchUpLoss.INSTALL) {
                            // the pipelined store fails, then the first catch-up's install; the next one succeeds
                            var disk = faults.arm(ChunkEngine.DATA_SYNC, DISK).times(2);
                            Futures.join(write(c, a, value));
                            assertThat(disk.fired()).as("node %d's store and its catch-up's install failed", failing).isEqualTo(2);
                        } else {
                            var disk = faults.arm(ChunkEngine.DATA_SYNC, DISK).times(1);
                            var fetch = faults.arm(CraqService.CATCH_UP, new Fault.Fail(new StrataException(Status.TIMEOUT,
                                    "injected: the tail did not answer the catch-up")));
                            CompletableFuture<Void> w = write(c, a, value);
                            Eventually.await("node " + failing + " fails to catch up again and again", Duration.ofSeconds(20),
                                    () -> disk.fired() == 1 && fetch.fired() >= 2);
                            // the forward went through: the tail committed the write while the failing replica is behind
                            Eventually.await("the tail committed v" + (before + 1), Duration.ofSeconds(20),
                                    () -> stat(c, a, 3).committedVersion() == before + 1);
                            assertThat(w).as("not acknowledged while node %d cannot catch up", failing).isNotDone();
                            for (int n = 1; n <= 3; n++) {
                                double served = reads(f, failing, "OK");
                                double refused = reads(f, failing, "CHUNK_BUSY");
                                assertThat(read(c, a, n)).as("a read trying node %d first while node %d is behind", n, failing)
                                        .containsExactly(value, before + 1);
                                if (n == failing) {
                                    assertThat(reads(f, failing, "CHUNK_BUSY")).as("node %d refused the read", failing)
                                            .isGreaterThan(refused);
                                }
                                // the readers' reads count too: none of them may be served here either
                                assertThat(reads(f, failing, "OK")).as("reads node %d served while behind", failing).isEqualTo(served);
                            }
                            assertThat(w).isNotDone();
                            faults.disarm(fetch);
                            Futures.join(w); // the client's (or the head's) retry catches the replica up
                        }
                        version++;
                        readers.acked.set(value);
                        assertIdentical(c, a, version);
                        double served = reads(f, failing, "OK");
                        for (int n = 1; n <= 3; n++) {
                            assertThat(read(c, a, n)).as("trying node %d first after node %d caught up (%s)", n, failing, loss)
                                    .containsExactly(value, version);
                        }
                        assertThat(reads(f, failing, "OK")).as("node %d serves the chunk again", failing).isGreaterThan(served);
                        Futures.join(write(c, a, value + 1));
                        version++;
                        readers.acked.set(value + 1);
                        assertIdentical(c, a, version);
                        value += 10;
                    }
                }
            }
        }
    }
}
