package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.Status;
import io.strata.core.tier.CachedCopies;
import io.strata.protocol.meta.Cached;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The meta service keeps prefetched files' records: an open at the recorded data version tells
 * the reader where the copies are, a write ends that at once, the last hint to let go removes
 * the record, and the record goes with the file.
 */
class CachedRecordTest extends MetaFixture {
    private OpenResult openRead(InodeAttrs f) {
        return join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.READ, 1, req())); // untracked: nothing to close
    }

    @Test
    void anOpenAtTheRecordedVersionFindsTheCopiesAndAWriteEndsThat() {
        InodeAttrs f = create(ROOT, "sample-0");
        assertThat(openRead(f).cached()).as("nothing prefetched yet").isNull();
        Cached.Marked m = join(meta.cacheMarkAsync(Caller.ROOT, 7, List.of(21, 22), List.of(new Cached.File(f.id(), f.dataVersion())), req()));
        assertThat(m.stale()).isEmpty();
        assertThat(openRead(f).cached()).isEqualTo(new CachedCopies(f.dataVersion(), List.of(21, 22)));

        OpenResult w = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 1, req()));
        join(meta.closeAsync(Caller.ROOT, f.id(), w.sessionId(), 4096, true, req()));
        assertThat(openRead(f).cached()).as("the copies hold the old bytes").isNull();
        Cached.Marked again = join(meta.cacheMarkAsync(Caller.ROOT, 7, List.of(21), List.of(new Cached.File(f.id(), f.dataVersion())), req()));
        assertThat(again.stale()).as("marking at the old version is refused").containsExactly(f.id());
    }

    @Test
    void aSecondHintSharesTheFirstOnesCopiesAndOnlyTheLastToLetGoRemovesThem() {
        InodeAttrs f = create(ROOT, "shared");
        Cached.File at = new Cached.File(f.id(), f.dataVersion());
        join(meta.cacheMarkAsync(Caller.ROOT, 1, List.of(21, 22), List.of(at), req()));
        Cached.Marked second = join(meta.cacheMarkAsync(Caller.ROOT, 2, List.of(23), List.of(at), req()));
        assertThat(second.records()).singleElement().satisfies(r -> {
            assertThat(r.agents()).as("the copies already placed are kept").containsExactly(21, 22);
            assertThat(r.owners()).containsExactly(1L, 2L);
        });
        join(meta.cacheUnmarkAsync(Caller.ROOT, 1, List.of(f.id()), req()));
        assertThat(join(meta.cachedAsync(Caller.ROOT, List.of(f.id())))).singleElement()
                .satisfies(r -> assertThat(r.owners()).containsExactly(2L));
        assertThat(openRead(f).cached()).isNotNull();
        join(meta.cacheUnmarkAsync(Caller.ROOT, 2, List.of(f.id()), req()));
        assertThat(join(meta.cachedAsync(Caller.ROOT, List.of(f.id())))).isEmpty();
        assertThat(openRead(f).cached()).isNull();
    }

    @Test
    void theRecordGoesWithTheFileAndOnlyRootMarks() {
        InodeAttrs f = create(ROOT, "gone");
        join(meta.cacheMarkAsync(Caller.ROOT, 3, List.of(21), List.of(new Cached.File(f.id(), f.dataVersion())), req()));
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "gone", req()));
        assertThat(join(meta.cachedAsync(Caller.ROOT, List.of(f.id())))).isEmpty();

        InodeAttrs g = create(ROOT, "mine");
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.cacheMarkAsync(ALICE, 3, List.of(21),
                List.of(new Cached.File(g.id(), g.dataVersion())), req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.cacheMarkAsync(Caller.ROOT, 3, List.of(),
                List.of(new Cached.File(g.id(), g.dataVersion())), req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.cacheMarkAsync(Caller.ROOT, 0, List.of(21),
                List.of(new Cached.File(g.id(), g.dataVersion())), req())));
    }
}
