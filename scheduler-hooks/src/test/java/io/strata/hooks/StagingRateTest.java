package io.strata.hooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class StagingRateTest {
    private static final long MIB = 1 << 20;

    /** 16 fetches of 1 MiB sent at t=0, each taking 400 ms, then one completing every 25 ms: 40 MiB/s. */
    private static StagingRate pipeline(long until) {
        StagingRate r = new StagingRate(5_000);
        long fetched = 0;
        r.busy(0, fetched);
        long nextTick = 250;
        for (long t = 400; t <= until; t += 25) {
            while (nextTick < t) {
                r.busy(nextTick, fetched);
                nextTick += 250;
            }
            fetched += MIB;
            r.completed(t, fetched);
        }
        r.busy(until, fetched);
        return r;
    }

    @Test
    void thePipelinesFillIsNotPricedAsIfItRecurred() {
        // 2 s in: counted from the sending, the rate would be 64 MiB / 2 s = 32 MiB/s, a fifth short
        StagingRate r = pipeline(2_000);
        assertThat(r.perMilli() * 1000 / MIB).isCloseTo(40.0, within(0.5));
    }

    @Test
    void theRateFollowsTheLastWindowAndRestartsAfterIdleTime() {
        StagingRate r = pipeline(8_000);
        assertThat(r.perMilli() * 1000 / MIB).isCloseTo(40.0, within(0.5));
        r.idle();
        assertThat(r.perMilli()).as("no rate right after idle time").isZero();
        r.busy(60_000, 0);
        r.busy(60_300, 0);
        assertThat(r.perMilli()).as("nothing completed yet: no rate, not zero bytes over the idle time").isZero();
        r.completed(60_400, MIB);
        r.busy(60_500, MIB);
        assertThat(r.perMilli()).as("under 500 ms of samples").isZero();
        r.completed(61_000, 11 * MIB);
        r.busy(61_000, 11 * MIB);
        assertThat(r.perMilli() * 1000 / MIB).isCloseTo(10 / 0.6, within(0.01));
    }

    @Test
    void aCompletionBeforeStagingIsKnownToHaveResumedIsIgnored() {
        StagingRate r = new StagingRate(5_000);
        r.completed(100, MIB);
        r.busy(250, MIB);
        r.busy(1_000, 5 * MIB);
        assertThat(r.perMilli()).as("the rate starts at the first completion after busy(): none yet").isZero();
        r.completed(1_100, 6 * MIB);
        r.busy(1_700, 13 * MIB);
        assertThat(r.perMilli() * 1000 / MIB).isCloseTo(7 / 0.6, within(0.01));
    }
}
