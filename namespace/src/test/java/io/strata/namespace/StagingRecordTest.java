package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.Status;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Staging;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The meta service keeps each staged file's record: epochs, publishes, drain reports, and the record goes with the file. */
class StagingRecordTest extends MetaFixture {
    static final List<Staging.Candidate> AB = List.of(new Staging.Candidate(21, "a"), new Staging.Candidate(22, "b"));
    static final List<Staging.Candidate> BC = List.of(new Staging.Candidate(22, "b"), new Staging.Candidate(23, "c"));

    @Test
    void anEpochKeepsItsCandidatesUntilEverythingIsDrained() {
        InodeAttrs f = create(ROOT, "shard-0");
        Staging s = join(meta.stageOpenAsync(Caller.ROOT, f.id(), 1, 2, AB, req()));
        assertThat(s.epoch()).isEqualTo(1);
        assertThat(s.candidates()).isEqualTo(AB);
        s = join(meta.stagePublishAsync(Caller.ROOT, f.id(), 1, new Staging.Delta(Map.of(), List.of(new Staging.Range(0, 9))), req()));
        assertThat(s.state()).isEqualTo(Staging.State.STAGED);
        assertThat(join(meta.stageOpenAsync(Caller.ROOT, f.id(), 1, 2, BC, req())).candidates())
                .as("a second writer while undrained joins the epoch").isEqualTo(AB);
        join(meta.drainReportAsync(Caller.ROOT, f.id(), 1, 1, false, req()));
        assertThat(join(meta.stagingAsync(Caller.ROOT, f.id())).orElseThrow().state()).isEqualTo(Staging.State.DRAINING);
        assertThat(join(meta.listStagingAsync(Caller.ROOT, true, 0, 10))).extracting(Staging::inode).containsExactly(f.id());
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.drainReportAsync(Caller.ROOT, f.id(), 1, 2, true, req())));
        Staging done = join(meta.drainReportAsync(Caller.ROOT, f.id(), 1, 1, true, req()));
        assertThat(done.state()).isEqualTo(Staging.State.DURABLE);
        assertThat(done.durableMillis()).isPositive();
        assertThat(join(meta.listStagingAsync(Caller.ROOT, true, 0, 10))).as("nothing pending").isEmpty();

        Staging next = join(meta.stageOpenAsync(Caller.ROOT, f.id(), 1, 2, BC, req()));
        assertThat(next.epoch()).as("a durable file starts a new epoch").isEqualTo(2);
        assertThat(next.candidates()).isEqualTo(BC);
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.stagePublishAsync(Caller.ROOT, f.id(), 1,
                new Staging.Delta(Map.of(), List.of()), req())));
    }

    @Test
    void theRecordGoesWithTheFile() {
        InodeAttrs f = create(ROOT, "shard-1");
        join(meta.stageOpenAsync(Caller.ROOT, f.id(), 1, 2, AB, req()));
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "shard-1", req()));
        assertThat(join(meta.stagingAsync(Caller.ROOT, f.id()))).isEmpty();
        InodeAttrs x = create(ROOT, "x");
        assertFailsClean(Status.NOT_SERVING, () -> join(meta.stageOpenAsync(Caller.ROOT, x.id(), 1, 2, List.of(), req())));
    }
}
