package io.strata.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class StatusTest {
    @Test
    void codesAreUniqueAndRoundTrip() {
        Set<Integer> seen = new HashSet<>();
        for (Status s : Status.values()) {
            assertThat(seen.add(s.code())).as("duplicate code %s", s.code()).isTrue();
            assertThat(Status.fromCode(s.code())).isEqualTo(s);
            assertThat(s.code()).isBetween(0, 0xFFFF);
        }
        assertThat(Status.fromCode(65000)).isEqualTo(Status.INTERNAL);
    }

    @Test
    void subclassesCarryTheirDetailAcrossTheWire() {
        ByteBuf buf = Unpooled.buffer();
        try {
            new StrataException.StaleRouting("stale", 42).encodeDetail(buf);
            StrataException e = StrataException.fromWire(Status.STALE_CHAIN_VERSION, "stale", buf);
            assertThat(e).isInstanceOf(StrataException.StaleRouting.class);
            assertThat(((StrataException.StaleRouting) e).currentVersion()).isEqualTo(42);
            assertThat(e.retryable()).isTrue();

            buf.clear();
            new StrataException.NotLeader("follower", "10.0.0.2:9000").encodeDetail(buf);
            StrataException n = StrataException.fromWire(Status.NOT_LEADER, "follower", buf);
            assertThat(((StrataException.NotLeader) n).leader()).isEqualTo("10.0.0.2:9000");
        } finally {
            buf.release();
        }
    }

    @Test
    void wrapsIoErrorsWithAStatusAUserUnderstands() {
        assertThat(StrataException.wrap(new java.io.IOException("No space left on device")).status())
                .isEqualTo(Status.NO_SPACE);
        assertThat(StrataException.wrap(new java.util.concurrent.CompletionException(
                new StrataException(Status.NOT_FOUND, "x"))).status()).isEqualTo(Status.NOT_FOUND);
    }
}
