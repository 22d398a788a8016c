package io.strata.core.util;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class EventuallyTest {
    @Test
    void waitsThenGivesUpWithWhatItWaitedFor() {
        AtomicInteger n = new AtomicInteger();
        Eventually.await("three polls", Duration.ofSeconds(5), () -> n.incrementAndGet() >= 3);
        assertThat(n.get()).isGreaterThanOrEqualTo(3);
        assertThatThrownBy(() -> Eventually.await("the impossible", Duration.ofMillis(50), () -> false))
                .isInstanceOf(StrataException.class).hasMessageContaining("waiting for the impossible")
                .extracting(e -> ((StrataException) e).status()).isEqualTo(Status.TIMEOUT);
    }
}
