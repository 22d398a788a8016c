package io.strata.l2.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.strata.core.DataSize;
import io.strata.l2.agent.CopyStore.Found;
import io.strata.l2.agent.CopyStore.Key;
import io.strata.testing.OpenFiles;
import io.strata.testing.Seeded;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store's read path on a real store (files, LMDB): reads take no turn in a chunk's queue, so
 * the copy's lock alone keeps a read's record and bytes together while copies are replaced,
 * cut, evicted and dropped around it; cached read channels are closed when their copy goes.
 */
class CopyStoreReadTest {
    private static final int CHUNK = 256 * 1024;

    static CopyStore open(Path dir, DataSize capacity) throws IOException {
        return CopyStore.open(dir, 11, capacity, DataSize.ZERO, System::currentTimeMillis);
    }

    /** A drained copy of generation {@code g}: every byte is {@code (byte) g}, sequence {@code g}. */
    static Copy copyOf(long g, int length, boolean drained) {
        return new Copy(1, g, length, drained ? g : g - 1, 1, CHUNK, List.of(11), 0, true, false);
    }

    static void store(CopyStore s, Key k, long g, int length, boolean drained) {
        byte[] b = new byte[length];
        java.util.Arrays.fill(b, (byte) g);
        ByteBuf buf = Unpooled.wrappedBuffer(b);
        s.exclusive(k, () -> {
            s.replace(k, buf);
            s.record(k, copyOf(g, length, drained));
            return null;
        });
    }

    /**
     * Checks that a read of {@code length} bytes at {@code offset} returned what the copy it
     * recorded holds there: all bytes of the record's generation, as many as the copy has.
     * Returns the problem, or null; releases the bytes.
     */
    static String check(Found f, int offset, int length) {
        try {
            if (f.bytes() == null) {
                return null;
            }
            long g = f.copy().seq();
            long expected = Math.max(0, Math.min(length, f.copy().length() - offset));
            if (f.bytes().readableBytes() != expected) {
                return "read " + f.bytes().readableBytes() + " bytes at " + offset + " of a copy of " + f.copy().length();
            }
            byte[] b = io.netty.buffer.ByteBufUtil.getBytes(f.bytes()); // one access: leak detection records each
            for (int i = 0; i < b.length; i++) {
                if (b[i] != (byte) g) {
                    return "byte " + (offset + i) + " is of generation " + b[i] + ", the record says " + g;
                }
            }
            return null;
        } finally {
            if (f.bytes() != null) {
                f.bytes().release();
            }
        }
    }

    @Seeded
    @Test
    void readsRacingReplacementsCutsEvictionsAndDropsGetTheBytesOfTheCopyTheyRecord(long seed, @TempDir Path dir) throws Exception {
        // room for 4 copies: replacing the 6 keys over and over keeps evicting
        try (CopyStore s = open(dir, DataSize.ofBytes(4L * CHUNK))) {
            List<Key> keys = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                keys.add(new Key(7, i));
            }
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong reads = new AtomicLong();
            AtomicLong served = new AtomicLong();
            ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
            ExecutorService pool = Executors.newFixedThreadPool(6);
            try {
                List<Future<?>> writers = new ArrayList<>();
                for (int w = 0; w < 2; w++) {
                    Random r = new Random(seed + w);
                    writers.add(pool.submit(() -> {
                        long g = 1;
                        // until the readers read enough, however fast this machine writes
                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                        for (int round = 0; round < 400 || (served.get() < 2000 && System.nanoTime() < until); round++) {
                            Key k = keys.get(r.nextInt(keys.size()));
                            g = (g % 120) + 1;
                            long gen = g;
                            switch (r.nextInt(4)) {
                                case 0 -> s.drop(k);
                                case 1 -> s.exclusive(k, () -> { // a cut: shorter, same generation rule
                                    Copy c = s.get(k);
                                    if (c != null && c.present()) {
                                        s.setLength(k, c.length() / 2);
                                        s.record(k, new Copy(1, c.seq(), c.length() / 2, c.drainedSeq(), 1, CHUNK, List.of(11), 0, true,
                                                false));
                                    }
                                    return null;
                                });
                                default -> {
                                    Copy c = s.get(k);
                                    if ((c == null || !c.present()) && !s.admit(CHUNK)) {
                                        continue;
                                    }
                                    store(s, k, gen, CHUNK - r.nextInt(4) * 4096, true);
                                }
                            }
                        }
                        return null;
                    }));
                }
                List<Future<?>> readers = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    Random r = new Random(seed * 31 + t);
                    readers.add(pool.submit(() -> {
                        while (!stop.get()) {
                            Key k = keys.get(r.nextInt(keys.size()));
                            int off = r.nextInt(4) * 32 * 1024;
                            int len = 128 * 1024;
                            Found f = s.readCopy(k, c -> true, off, len, PooledByteBufAllocator.DEFAULT);
                            reads.incrementAndGet();
                            if (f.bytes() != null) {
                                served.incrementAndGet();
                                String p = check(f, off, len);
                                if (p != null) {
                                    problems.add(k + ": " + p);
                                }
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> w : writers) {
                    w.get(120, TimeUnit.SECONDS);
                }
                stop.set(true);
                for (Future<?> r : readers) {
                    r.get(30, TimeUnit.SECONDS); // a read that threw fails here
                }
            } finally {
                stop.set(true);
                pool.shutdownNow();
            }
            assertThat(problems).as("reads that returned bytes of another copy").isEmpty();
            assertThat(served.get()).as("reads that found a copy (of %d)", reads.get()).isGreaterThanOrEqualTo(2000);
            assertThat(s.evictions()).as("copies evicted under the readers").isPositive();
            assertThat(s.failure()).as("no read failed on a file that vanished: the disk is not counted failed").isEmpty();
        }
    }

    @Test
    void cachedReadChannelsAreClosedWhenTheirCopyIsReplacedCutEvictedOrDroppedAndAtClose(@TempDir Path dir) throws Exception {
        Path chunks = dir.resolve("chunks");
        CopyStore s = open(dir, DataSize.ofBytes(10L * CHUNK));
        try {
            List<Key> keys = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                Key k = new Key(9, i);
                keys.add(k);
                store(s, k, i + 1, CHUNK, true);
            }
            assertThat(OpenFiles.under(chunks)).as("writes keep no file open").isZero();
            for (Key k : keys) {
                assertThat(check(s.readCopy(k, c -> true, 0, CHUNK, PooledByteBufAllocator.DEFAULT), 0, CHUNK)).isNull();
                assertThat(check(s.readCopy(k, c -> true, 4096, 8192, PooledByteBufAllocator.DEFAULT), 4096, 8192)).isNull();
            }
            assertThat(OpenFiles.under(chunks)).as("one cached read channel per copy read").isEqualTo(10);
            assertThat(s.openFiles()).isEqualTo(10);

            store(s, keys.get(0), 50, CHUNK, true); // replaced whole
            s.exclusive(keys.get(1), () -> { // cut
                s.setLength(keys.get(1), 4096);
                s.record(keys.get(1), copyOf(2, 4096, true));
                return null;
            });
            s.drop(keys.get(2));
            s.drop(keys.get(3));
            assertThat(OpenFiles.under(chunks)).as("replaced, cut and dropped copies' channels are closed").isEqualTo(6);

            // 8 copies left of room for 10: room for 4 more evicts 2, least recently used first
            Key fresh = new Key(10, 0);
            assertThat(s.admit(4L * CHUNK)).isTrue();
            assertThat(s.evictions()).isEqualTo(2);
            long stillOpen = keys.subList(4, 10).stream().filter(k -> s.all().get(k).present()).count();
            assertThat(stillOpen).isBetween(4L, 6L);
            assertThat(OpenFiles.under(chunks)).as("evicted copies' channels are closed").isEqualTo(stillOpen);
            store(s, fresh, 3, CHUNK, true);
            assertThat(check(s.readCopy(fresh, c -> true, 0, CHUNK, PooledByteBufAllocator.DEFAULT), 0, CHUNK)).isNull();
            assertThat(check(s.readCopy(keys.get(0), c -> true, 0, CHUNK, PooledByteBufAllocator.DEFAULT), 0, CHUNK))
                    .as("the replaced copy reads as its new generation").isNull();
            assertThat(OpenFiles.under(chunks)).isPositive();
        } finally {
            s.close();
        }
        assertThat(OpenFiles.under(chunks)).as("close closes every cached channel").isZero();
    }

    @Test
    void atMostOpenFilesReadChannelsStayOpen(@TempDir Path dir) throws Exception {
        int n = CopyStore.OPEN_FILES + 40;
        Path chunks = dir.resolve("chunks");
        try (CopyStore s = open(dir, DataSize.ofBytes((long) n * CHUNK))) {
            for (int i = 0; i < n; i++) {
                Key k = new Key(3, i);
                store(s, k, (i % 100) + 1, 4096, true);
                assertThat(check(s.readCopy(k, c -> true, 0, 4096, PooledByteBufAllocator.DEFAULT), 0, 4096)).isNull();
            }
            assertThat(OpenFiles.under(chunks)).isLessThanOrEqualTo(CopyStore.OPEN_FILES);
            for (int i = 0; i < n; i++) {
                s.drop(new Key(3, i));
            }
            assertThat(OpenFiles.under(chunks)).isZero();
        }
    }
}
