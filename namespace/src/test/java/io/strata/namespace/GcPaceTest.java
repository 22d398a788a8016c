package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The collector's pace: slow while clients change the namespace, full once they stop, full for a
 * file due longer than the busy wait, and reads never slow it. Real LMDB, a directory of chunk
 * files counted before and after.
 */
class GcPaceTest extends MetaFixture {
    private static final int CHUNKS = 100;
    private ChunkDir chunks;

    @Override
    ChunkReclaimer reclaimer() {
        chunks = chunkDir();
        return chunks;
    }

    /** Restarts the store on the same keys with the collector at {@code idle} chunks/s, {@code busy} while clients change things. */
    private void pace(long idle, long busy, Duration busyMaxWait) {
        meta.close();
        meta = new MetaStore(ctx, kv, StaticChainTables.uniform(8), chunks, options().withGcPace(idle, busy, busyMaxWait));
    }

    /** A file of {@link #CHUNKS} chunks, unlinked: queued for the collector. */
    private InodeAttrs deleted(String name) throws IOException {
        InodeAttrs f = create(ROOT, name);
        OpenResult w = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 1, req()));
        chunks.writeLength(f, (long) CHUNKS << 20);
        join(meta.closeAsync(Caller.ROOT, f.id(), w.sessionId(), (long) CHUNKS << 20, true, req()));
        join(meta.unlinkAsync(Caller.ROOT, ROOT, name, req()));
        assertThat(chunks.count(f.id())).isEqualTo(CHUNKS);
        return f;
    }

    /** A client that keeps changing the namespace (a mkdir and an rmdir every 20 ms) until closed. */
    private final class Changer implements AutoCloseable {
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicLong changes = new AtomicLong();
        final Thread thread = Thread.ofPlatform().daemon().start(() -> {
            while (!stop.get()) {
                join(meta.mkdirAsync(Caller.ROOT, ROOT, "busy", 0755, req()));
                join(meta.rmdirAsync(Caller.ROOT, ROOT, "busy", req()));
                changes.addAndGet(2);
                sleep(20);
            }
        });

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            thread.join(10_000);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private double busyChunks() {
        return ctx.meters().counter("strata.meta.gc.busy.chunks").count();
    }

    @Test
    void whileClientsChangeTheNamespaceTheCollectorKeepsTheBusyPaceAndCatchesUpWhenTheyStop() throws Exception {
        pace(1000, 10, Duration.ofMinutes(10));
        InodeAttrs f = deleted("old-checkpoint");
        CompletableFuture<Integer> pass;
        long removedWhileBusy;
        try (Changer c = new Changer()) {
            sleep(100);
            pass = meta.collectGarbageAsync();
            sleep(2000);
            removedWhileBusy = CHUNKS - chunks.count(f.id());
            assertThat(c.changes.get()).as("the client kept changing things").isGreaterThan(10);
        }
        // 10/s for 2 s, a tenth of a second of burst and the removals in flight when the limit was read
        assertThat(removedWhileBusy).as("chunks removed in 2 s while a client changed the namespace")
                .isBetween(1L, 30L);
        long t0 = System.nanoTime();
        assertThat(Futures.join(pass, Duration.ofSeconds(30))).isEqualTo(1);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(chunks.count(f.id())).isZero();
        // at 10/s the rest would take 7 s or more; at the full pace it takes the busy window (1 s) and a tenth
        assertThat(ms).as("the rest once the client stopped").isLessThan(5000);
        assertThat(busyChunks()).isGreaterThanOrEqualTo(removedWhileBusy);
    }

    /**
     * Removals in flight while clients were busy do not hold slots of the busy pace far ahead:
     * two files of 100 chunks, 32 removals in flight at 1 chunk/s, would otherwise wait half a
     * minute after the clients stopped.
     */
    @Test
    void whatWaitedAtTheBusyPaceGoesAtTheFullOneOnceClientsStop() throws Exception {
        pace(1000, 1, Duration.ofMinutes(10));
        InodeAttrs a = deleted("gen-1");
        InodeAttrs b = deleted("gen-2");
        CompletableFuture<Integer> pass;
        try (Changer c = new Changer()) {
            sleep(100);
            pass = meta.collectGarbageAsync();
            sleep(2000);
        }
        long t0 = System.nanoTime();
        assertThat(Futures.join(pass, Duration.ofSeconds(60))).isEqualTo(2);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(chunks.count(a.id()) + chunks.count(b.id())).isZero();
        // the busy window (1 s), a recheck (1 s) and 200 removals at 1000/s
        assertThat(ms).as("the rest once the client stopped").isLessThan(6000);
    }

    @Test
    void aFileDueLongerThanTheBusyWaitIsFreedAtTheFullPaceHoweverBusy() throws Exception {
        pace(1000, 1, Duration.ofSeconds(1));
        try (Changer c = new Changer()) {
            InodeAttrs f = deleted("old-checkpoint");
            sleep(1200);
            long t0 = System.nanoTime();
            assertThat(join(meta.collectGarbageAsync())).isEqualTo(1);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(c.thread.isAlive()).as("the client was still changing things").isTrue();
            assertThat(chunks.count(f.id())).isZero();
            // at the busy pace (1/s) the 100 chunks would take 99 s
            assertThat(ms).isLessThan(10_000);
            assertThat(busyChunks()).isZero();
        }
    }

    @Test
    void readsDoNotSlowTheCollector() throws Exception {
        pace(1000, 1, Duration.ofMinutes(10));
        InodeAttrs f = deleted("old-checkpoint");
        create(ROOT, "sample");
        sleep(1100); // the deletion's own changes are more than the busy window ago
        AtomicBoolean stop = new AtomicBoolean();
        Thread reader = Thread.ofPlatform().daemon().start(() -> {
            while (!stop.get()) {
                join(meta.lookupAsync(Caller.ROOT, ROOT, "sample"));
            }
        });
        try {
            long t0 = System.nanoTime();
            assertThat(join(meta.collectGarbageAsync())).isEqualTo(1);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(chunks.count(f.id())).isZero();
            assertThat(ms).as("100 removals at 1000/s while a client only reads").isLessThan(10_000);
            assertThat(busyChunks()).isZero();
        } finally {
            stop.set(true);
            reader.join(10_000);
        }
    }
}
