package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.SetAttr;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** close/fsync publish lengths and bump dataVersion; concurrent writers end at the largest length. */
class FileLengthTest extends MetaFixture {
    @Test
    void closeAfterWritesRecordsTheLengthAndBumpsDataVersion() {
        InodeAttrs f = create(ROOT, "f");
        long v0 = f.dataVersion();
        OpenResult w = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.READ | OpenFlags.WRITE, 1, req()));
        InodeAttrs synced = join(meta.fsyncAsync(Caller.ROOT, f.id(), w.sessionId(), 4096, req()));
        assertThat(synced.length()).isEqualTo(4096);
        assertThat(synced.dataVersion()).isEqualTo(v0 + 1);
        InodeAttrs closed = join(meta.closeAsync(Caller.ROOT, f.id(), w.sessionId(), 3 * 1024 * 1024 + 5, true, req()));
        assertThat(closed.length()).isEqualTo(3 * 1024 * 1024 + 5);
        assertThat(closed.dataVersion()).isEqualTo(v0 + 2);
        assertThat(closed.chunkHighWater()).isEqualTo(4); // 1 MiB chunks by default
        // a reader's close changes nothing
        OpenResult r = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.READ | OpenFlags.TRACK, 2, req()));
        assertThat(join(meta.closeAsync(Caller.ROOT, f.id(), r.sessionId(), -1, false, req())).dataVersion()).isEqualTo(v0 + 2);
        // truncate sets the exact length and bumps the version; O_TRUNC too
        InodeAttrs t = join(meta.setattrAsync(Caller.ROOT, f.id(), SetAttr.size(10), req()));
        assertThat(t.length()).isEqualTo(10);
        assertThat(t.dataVersion()).isEqualTo(v0 + 3);
        assertThat(t.chunkHighWater()).isEqualTo(4);
        OpenResult tr = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE | OpenFlags.TRUNCATE, 3, req()));
        assertThat(tr.attrs().length()).isZero();
        assertThat(tr.attrs().dataVersion()).isEqualTo(v0 + 4);
        Fsck.check(kv);
    }

    @Test
    void concurrentWritersEndWithTheLargestWrittenLength() {
        InodeAttrs f = create(ROOT, "shared");
        int writers = 8;
        List<OpenResult> sessions = new ArrayList<>();
        for (int i = 0; i < writers; i++) {
            sessions.add(join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, i, req())));
        }
        List<CompletableFuture<InodeAttrs>> closes = new ArrayList<>();
        for (int i = 0; i < writers; i++) {
            long written = (i == 3 ? 9_000_000L : 1_000L * (i + 1));
            closes.add(meta.closeAsync(Caller.ROOT, f.id(), sessions.get(i).sessionId(), written, true, req()));
        }
        closes.forEach(MetaFixture::join);
        InodeAttrs end = stat(f.id());
        assertThat(end.length()).isEqualTo(9_000_000L);
        assertThat(end.dataVersion()).isEqualTo(f.dataVersion() + writers);
        Fsck.check(kv);
    }
}
