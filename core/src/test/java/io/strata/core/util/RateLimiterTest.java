package io.strata.core.util;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.time.ManualClock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RateLimiterTest {
    private static final long MS = 1_000_000;

    @Test
    void reservationsTakeTheirPlaceOnTheTimelineAfterATenthOfASecondOfBurst() {
        ManualClock clock = new ManualClock();
        RateLimiter r = new RateLimiter(clock, 10); // one unit per 100 ms
        clock.advance(Duration.ofSeconds(5)); // idle time earns at most the burst
        assertThat(r.reserve(1)).isZero();
        assertThat(r.reserve(1)).isZero();
        assertThat(r.reserve(1)).isEqualTo(100 * MS);
        assertThat(r.reserve(1)).isEqualTo(200 * MS);
    }

    @Test
    void reserveWithinBooksNothingWhenTheWaitWouldBeLonger() {
        ManualClock clock = new ManualClock();
        RateLimiter r = new RateLimiter(clock, 10);
        clock.advance(Duration.ofSeconds(5));
        assertThat(r.reserveWithin(1, 150 * MS)).isZero();
        assertThat(r.reserveWithin(1, 150 * MS)).isZero();
        assertThat(r.reserveWithin(1, 150 * MS)).isEqualTo(100 * MS);
        // the next slot is 200 ms away: refused, and not booked
        assertThat(r.reserveWithin(1, 150 * MS)).isEqualTo(-1);
        assertThat(r.reserveWithin(1, 150 * MS)).isEqualTo(-1);
        clock.advance(Duration.ofMillis(100));
        assertThat(r.reserveWithin(1, 150 * MS)).as("the refused asks left the timeline where it was").isEqualTo(100 * MS);
    }

    @Test
    void aNewRateAppliesToWhatIsReservedAfterIt() {
        ManualClock clock = new ManualClock();
        RateLimiter r = new RateLimiter(clock, 10);
        clock.advance(Duration.ofSeconds(5));
        assertThat(r.reserve(2)).isZero(); // the burst, then the timeline is 100 ms ahead
        r.setRate(1); // one unit a second from now on
        assertThat(r.rate()).isEqualTo(1);
        assertThat(r.reserve(1)).as("placed after what was booked at the old rate").isEqualTo(100 * MS);
        assertThat(r.reserve(1)).isEqualTo(1100 * MS);
    }
}
