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
    void durableOnceTheLatestPublishIsReportedDrained() {
        Staging s = Staging.begin(InodeId.of(9), 1, 1, 2, TWO, 100);
        assertThat(s.state()).as("nothing published yet").isEqualTo(Staging.State.DURABLE);
        s = s.publish(new Staging.Delta(Map.of(), List.of(new Staging.Range(0, 2))), 200);
        assertThat(s.state()).isEqualTo(Staging.State.STAGED);
        assertThat(s.undrained()).isTrue();
        s = s.drained(1, false, 300);
        assertThat(s.state()).isEqualTo(Staging.State.DRAINING);
        assertThat(s.drainingMillis()).isEqualTo(300);
        s = s.publish(new Staging.Delta(Map.of(), List.of(new Staging.Range(3, 3))), 400);
        assertThat(s.state()).as("a new publish: its drain has not begun").isEqualTo(Staging.State.STAGED);
        s = s.drained(1, true, 500);
        assertThat(s.state()).as("the first publish is durable, not the second").isEqualTo(Staging.State.STAGED);
        s = s.drained(2, true, 600);
        assertThat(s.state()).isEqualTo(Staging.State.DURABLE);
        assertThat(s.durableMillis()).isEqualTo(600);
        assertThat(s.drained(2, true, 700).durableMillis()).as("a repeated report keeps the time").isEqualTo(600);
        assertThat(s.written()).as("ranges coalesce").containsExactly(new Staging.Range(0, 3));
        assertThat(s.wasWritten(3)).isTrue();
        assertThat(s.wasWritten(4)).isFalse();
        assertThat(s.markLost("both copies of chunk 1 are gone").state()).isEqualTo(Staging.State.LOST);
    }

    @Test
    void theStoreFormRoundTrips() {
        Staging s = Staging.begin(InodeId.of(9), 4, 1, 2, TWO, 100)
                .publish(new Staging.Delta(Map.of(7, List.of(22, 23), 8, List.of()), List.of(new Staging.Range(5, 9))), 200)
                .drained(1, false, 300);
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
