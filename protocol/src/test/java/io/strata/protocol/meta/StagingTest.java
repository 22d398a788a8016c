package io.strata.protocol.meta;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.InodeId;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A staging record moves staged -> draining -> durable as writers publish and agents report, and survives its store form. */
class StagingTest {
    static final List<Staging.Candidate> TWO = List.of(new Staging.Candidate(21, "a"), new Staging.Candidate(22, "b"));

    @Test
    void durableOnceEveryPublishedSequenceIsDrained() {
        Staging s = Staging.begin(InodeId.of(9), 1, 1, 2, TWO, 100);
        assertThat(s.state()).as("nothing published yet").isEqualTo(Staging.State.DURABLE);
        assertThat(s.durableMillis()).isZero();
        s = s.publish(new Staging.Delta(Map.of(21, 10L, 22, 4L), Map.of(), List.of(new Staging.Range(0, 2))), 200);
        assertThat(s.state()).isEqualTo(Staging.State.STAGED);
        assertThat(s.undrained()).isTrue();
        s = s.drainedBy(21, 10, 300);
        assertThat(s.state()).isEqualTo(Staging.State.DRAINING);
        s = s.publish(new Staging.Delta(Map.of(21, 12L), Map.of(), List.of(new Staging.Range(3, 3))), 400);
        s = s.drainedBy(22, 4, 500);
        assertThat(s.state()).as("agent 21 acknowledged 12 but drained 10").isEqualTo(Staging.State.DRAINING);
        s = s.drainedBy(21, 12, 600);
        assertThat(s.state()).isEqualTo(Staging.State.DURABLE);
        assertThat(s.durableMillis()).isEqualTo(600);
        assertThat(s.drainedBy(21, 12, 700).durableMillis()).as("a repeated report keeps the time").isEqualTo(600);
        assertThat(s.written()).as("ranges coalesce").containsExactly(new Staging.Range(0, 3));
        assertThat(s.wasWritten(3)).isTrue();
        assertThat(s.wasWritten(4)).isFalse();
        assertThat(s.markLost("both copies of chunk 1 are gone").state()).isEqualTo(Staging.State.LOST);
    }

    @Test
    void theStoreFormRoundTrips() {
        Staging s = Staging.begin(InodeId.of(9), 4, 1, 2, TWO, 100)
                .publish(new Staging.Delta(Map.of(21, 3L), Map.of(7, List.of(22, 23), 8, List.of()), List.of(new Staging.Range(5, 9))), 200)
                .drainedBy(22, 1, 300);
        ByteBuf b = Unpooled.buffer();
        try {
            s.encode(b);
            assertThat(Staging.decode(b)).isEqualTo(s);
            assertThat(b.isReadable()).isFalse();
        } finally {
            b.release();
        }
    }
}
