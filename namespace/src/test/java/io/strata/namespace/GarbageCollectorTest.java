package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.StatFs;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.Status;
import io.strata.core.util.Futures;
import io.strata.core.util.Eventually;
import java.time.Duration;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/**
 * Unlinked files stay readable while open (tracked: for writing, or read-only with TRACK);
 * afterwards the collector frees every chunk. Counted. A plain read-only open writes nothing
 * and holds nothing: an unlink frees the file at once.
 */
class GarbageCollectorTest extends MetaFixture {
    private ChunkDir chunks;

    @Override
    ChunkReclaimer reclaimer() {
        chunks = chunkDir();
        return chunks;
    }

    private InodeAttrs written(String name, long length) throws IOException {
        InodeAttrs f = create(ROOT, name);
        OpenResult w = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 1, req()));
        chunks.writeLength(f, length);
        return join(meta.closeAsync(Caller.ROOT, f.id(), w.sessionId(), length, true, req()));
    }

    @Test
    void anUnlinkedOpenFileStaysReadableUntilItsLastClose() throws IOException {
        InodeAttrs f = written("model.bin", 5L << 20); // 5 chunks of 1 MiB
        InodeAttrs other = written("keep.bin", 2L << 20);
        assertThat(chunks.count()).isEqualTo(7);
        OpenResult reader = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.READ | OpenFlags.TRACK, 9, req()));
        OpenResult reader2 = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.READ | OpenFlags.WRITE, 10, req()));
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "model.bin", req()));

        InodeAttrs orphan = stat(f.id());
        assertThat(orphan.nlink()).isZero();
        assertThat(orphan.length()).isEqualTo(5L << 20);
        assertThat(join(meta.collectGarbageAsync())).isZero();
        assertThat(chunks.count(f.id())).as("chunks of an unlinked file still open").isEqualTo(5);

        join(meta.closeAsync(Caller.ROOT, f.id(), reader.sessionId(), -1, false, req()));
        assertThat(join(meta.collectGarbageAsync())).isZero();
        assertThat(chunks.count(f.id())).isEqualTo(5);
        join(meta.closeAsync(Caller.ROOT, f.id(), reader2.sessionId(), -1, false, req()));
        assertFailsClean(Status.NOT_FOUND, () -> stat(f.id()));
        assertThat(join(meta.collectGarbageAsync())).isEqualTo(1);
        assertThat(chunks.count(f.id())).isZero();
        assertThat(chunks.count()).as("the other file's chunks").isEqualTo(2);
        Fsck.check(kv);
    }

    @Test
    void nothingLeaksAcrossUnlinkRenameTruncateAndHardLinks() throws IOException {
        written("a", 3L << 20);
        InodeAttrs b = written("b", 1L << 20);
        InodeAttrs c = written("c", 4L << 20);
        written("d", 100);
        long before = chunks.count();
        assertThat(before).isEqualTo(3 + 1 + 4 + 1);
        // truncate shrinks the length but the high-water mark keeps every chunk known
        join(meta.setattrAsync(Caller.ROOT, c.id(), SetAttr.size(10), req()));
        // a hard link keeps b alive after one name goes
        join(meta.linkAsync(Caller.ROOT, b.id(), ROOT, "b2", req()));
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "b", req()));
        join(meta.collectGarbageAsync());
        assertThat(chunks.count(b.id())).isEqualTo(1);
        // a rename over "d" frees d
        join(meta.renameAsync(Caller.ROOT, ROOT, "a", ROOT, "d", false, req()));
        for (String n : new String[] {"b2", "c", "d"}) {
            join(meta.unlinkAsync(Caller.ROOT, ROOT, n, req()));
        }
        assertThat(join(meta.gcQueueLengthAsync())).isEqualTo(4);
        assertThat(join(meta.collectGarbageAsync())).isEqualTo(4);
        assertThat(chunks.count()).as("chunks left after every file is gone").isZero();
        assertThat(join(meta.statfsAsync(Caller.ROOT))).isEqualTo(new StatFs(1, 0));
        Fsck.check(kv);
    }

    @Test
    void aFailedReclaimIsRetriedByTheNextPass() throws IOException {
        written("f", 2L << 20);
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "f", req()));
        chunks.failNext.set(1);
        assertThat(join(meta.collectGarbageAsync())).isZero();
        assertThat(chunks.count()).isEqualTo(2);
        assertThat(join(meta.gcQueueLengthAsync())).isEqualTo(1);
        assertThat(join(meta.collectGarbageAsync())).isEqualTo(1);
        assertThat(chunks.count()).isZero();
        assertThat(join(meta.gcQueueLengthAsync())).isZero();
    }

    @Test
    void chunksACrashedWriterLeftPastTheLengthAreFoundToo() throws IOException {
        InodeAttrs f = create(ROOT, "f");
        join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 77, req()));
        chunks.writeLength(f, 3L << 20); // the client dies before close: the length stays 0
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "f", req()));
        assertThat(join(meta.pruneSessionsAsync(77))).isEqualTo(1);
        assertThat(join(meta.collectGarbageAsync())).isEqualTo(1);
        assertThat(chunks.count()).isZero();
        Fsck.check(kv);
    }

    /**
     * A reclaim that hangs (storage unreachable, a huge file) must never take the threads that
     * serve requests. The periodic collector runs every 20 ms here and its pass stays stuck for
     * as long as the test runs: passes do not pile up, and creates, lookups and unlinks are
     * answered all along. (Passes used to be queued on the request threads every period, so a
     * stuck reclaim took all eight within a fraction of a second.)
     */
    @Test
    void aStuckCollectorNeverTakesTheRequestThreads() throws Exception {
        for (int i = 0; i < 40; i++) {
            written("victim-" + i, 1L << 20);
            join(meta.unlinkAsync(Caller.ROOT, ROOT, "victim-" + i, req()));
        }
        chunks.hang.set(true);
        meta.close();
        meta = new MetaStore(ctx, kv, StaticChainTables.uniform(8), chunks, options().withGc(Duration.ofMillis(20), Duration.ZERO));
        Thread.sleep(500); // some 25 periods with the pass stuck
        for (int i = 0; i < 200; i++) {
            InodeAttrs f = create(ROOT, "live-" + i);
            assertThat(Futures.join(meta.lookupAsync(Caller.ROOT, ROOT, "live-" + i), Duration.ofSeconds(5)).id()).isEqualTo(f.id());
            Futures.join(meta.unlinkAsync(Caller.ROOT, ROOT, "live-" + i, req()), Duration.ofSeconds(5));
        }
        assertThat(chunks.count()).as("nothing freed while the reclaim hangs").isEqualTo(40);
        chunks.hang.set(false);
        chunks.release();
        Eventually.await("the collector frees the victims once storage answers", Duration.ofSeconds(30),
                () -> join(meta.gcQueueLengthAsync()) == 0);
        assertThat(chunks.count()).isZero();
    }

    /** The collector removes at most gc-chunks-per-second chunks per second (here 100/s: 300 chunks take 2.5 s or more). */
    @Test
    void removalsAreRateLimited() throws IOException {
        written("big", 300L << 20); // 300 chunks of 1 MiB
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "big", req()));
        long t0 = System.nanoTime();
        assertThat(join(meta.collectGarbageAsync())).isEqualTo(1);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertThat(chunks.count()).isZero();
        assertThat(ms).as("300 removals at 100 per second (a tenth of a second of burst)").isGreaterThanOrEqualTo(2500);
    }

    @Override
    MetaStore.Options options() {
        return super.options().withGcRate(100);
    }

    @Test
    void aReadOnlyOpenWritesNothingAndAnUnlinkElsewhereFreesTheFileAtOnce() throws IOException {
        InodeAttrs f = written("sample.jpg", 3L << 20);
        var before = dump();
        OpenResult r = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.READ, 9, req()));
        assertThat(r.sessionId()).as("no session").isZero();
        assertThat(r.attrs().length()).isEqualTo(3L << 20);
        assertThat(r.attrs().dataVersion()).isEqualTo(f.dataVersion());
        assertThat(dump()).as("the store after a read-only open").isEqualTo(before);

        join(meta.unlinkAsync(Caller.ROOT, ROOT, "sample.jpg", req()));
        assertFailsClean(Status.NOT_FOUND, () -> stat(f.id()));
        assertThat(join(meta.collectGarbageAsync())).isEqualTo(1);
        assertThat(chunks.count(f.id())).isZero();
        assertThat(statusOf(org.assertj.core.api.Assertions.catchThrowable(
                () -> join(meta.closeAsync(Caller.ROOT, f.id(), 0, -1, false, req()))))).as("there is no session 0 to close")
                .isEqualTo(Status.STALE_HANDLE);
    }

    @Test
    void aReadOnlyOpenOfADirectoryOrAMissingFileFailsWithNothingWritten() {
        InodeAttrs d = mkdir(ROOT, "dir");
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.openAsync(Caller.ROOT, d.id(), OpenFlags.READ, 9, req())));
        assertFailsClean(Status.NOT_FOUND, () -> join(meta.openAsync(Caller.ROOT, io.strata.core.InodeId.of(987654), OpenFlags.READ, 9, req())));
    }
}
