package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.Status;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Batch reads for dataloaders: out-of-order completion, memory bounded by the budget, per-request errors. */
class BatchReadTest {
    @TempDir
    static Path dir;
    static TestCluster cluster;
    static CountingTier[] l3 = new CountingTier[1];
    static StrataFileSystem fs;
    static final int FILES = 24;
    static final int SIZE = 300_000;

    @BeforeAll
    static void start() {
        cluster = TestCluster.start(dir, 41);
        fs = cluster.client("batch", cluster.config(), t -> l3[0] = new CountingTier(t, cluster.cluster.storage().clientContext("timer").scheduler()));
        fs.mkdirs("/samples");
        for (int i = 0; i < FILES; i++) {
            FileSystemTest.writeFile(fs, "/samples/s" + i, FileSystemTest.random(SIZE, 1000 + i));
        }
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    @Test
    void manyReadsCompleteOutOfOrderWithinTheBudget() {
        Random r = new Random(3);
        List<ReadRequest> reqs = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            int f = r.nextInt(FILES);
            int len = 1 + r.nextInt(64 << 10);
            long off = r.nextInt(SIZE + 10_000); // some past the end
            reqs.add(new ReadRequest("/samples/s" + f, off, len, i));
        }
        // the first request's file is slow: its result must arrive after later ones
        long slowInode = fs.stat(reqs.get(0).path()).inode().value();
        l3[0].delayMsByInode.put(slowInode, 300L);
        long budget = 256 << 10;
        List<Long> order = new ArrayList<>();
        long maxReserved = 0;
        try (BatchRead batch = fs.readBatch(reqs, budget)) {
            for (BatchRead.Result next; (next = batch.take()) != null; ) {
                try (BatchRead.Result res = next) {
                    maxReserved = Math.max(maxReserved, batch.reservedBytes());
                    ReadRequest q = res.request();
                    order.add(q.tag());
                    byte[] file = FileSystemTest.random(SIZE, 1000 + Integer.parseInt(q.path().substring("/samples/s".length())));
                    int from = (int) Math.min(q.offset(), SIZE);
                    int to = (int) Math.min(q.offset() + q.length(), SIZE);
                    byte[] got = new byte[res.data().readableBytes()];
                    res.data().getBytes(res.data().readerIndex(), got);
                    assertThat(got).as("request " + q.tag()).isEqualTo(Arrays.copyOfRange(file, from, to));
                }
            }
        } finally {
            l3[0].delayMsByInode.clear();
        }
        assertThat(order).hasSize(reqs.size());
        assertThat(order.indexOf(0L)).as("the slow first request completed after others").isGreaterThan(0);
        assertThat(maxReserved).as("bytes held at once").isLessThanOrEqualTo(budget);
    }

    @Test
    void aSlowConsumerHoldsNoMoreThanTheBudget() throws Exception {
        List<ReadRequest> reqs = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            reqs.add(new ReadRequest("/samples/s" + (i % FILES), 0, 100_000, i));
        }
        long budget = 350_000; // three reads at a time
        try (BatchRead batch = fs.readBatch(reqs, budget)) {
            List<BatchRead.Result> held = new ArrayList<>();
            // hold results without closing them: issuing stops at the budget
            for (int i = 0; i < 3; i++) {
                held.add(batch.take());
            }
            Thread.sleep(200);
            assertThat(batch.reservedBytes()).isEqualTo(300_000);
            long readsBefore = l3[0].reads.get();
            Thread.sleep(200);
            assertThat(l3[0].reads.get()).as("no read is issued while the budget is held").isEqualTo(readsBefore);
            held.forEach(BatchRead.Result::close);
            int n = 3;
            for (BatchRead.Result res; (res = batch.take()) != null; n++) {
                assertThat(batch.reservedBytes()).isLessThanOrEqualTo(budget);
                res.close();
            }
            assertThat(n).isEqualTo(100);
        }
    }

    @Test
    void aFailedReadIsItsOwnResultAndTheBatchGoesOn() {
        List<ReadRequest> reqs = List.of(
                new ReadRequest("/samples/s1", 0, 10, 0),
                new ReadRequest("/samples/missing", 0, 10, 1),
                new ReadRequest("/samples/s2", 0, 1 << 20, 2), // larger than the budget
                new ReadRequest("/samples", 0, 10, 3),
                new ReadRequest("/samples/s3", SIZE - 5, 10, 4));
        try (BatchRead batch = fs.readBatch(reqs, 512 << 10)) {
            java.util.Map<Long, BatchRead.Result> byTag = new java.util.HashMap<>();
            for (BatchRead.Result res; (res = batch.take()) != null; ) {
                byTag.put(res.request().tag(), res);
            }
            assertThat(byTag.get(0L).data().readableBytes()).isEqualTo(10);
            assertThat(byTag.get(1L).error().status()).isEqualTo(Status.NOT_FOUND);
            assertThat(byTag.get(2L).error().status()).isEqualTo(Status.INVALID_ARGUMENT);
            assertThat(byTag.get(3L).error().status()).isEqualTo(Status.IS_A_DIRECTORY);
            assertThat(byTag.get(4L).data().readableBytes()).isEqualTo(5);
            byTag.values().forEach(BatchRead.Result::close);
        }
    }
}
