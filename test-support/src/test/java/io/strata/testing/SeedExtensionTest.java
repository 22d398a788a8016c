package io.strata.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class SeedExtensionTest {
    @Seeded
    @Test
    void aFixedSeedPropertyIsHonoured(long seed) {
        String fixed = System.getProperty("strata.seed");
        if (fixed != null) {
            assertThat(seed).isEqualTo(Long.parseLong(fixed));
        }
        System.setProperty("strata.seed", "1234");
        try {
            assertThat(Seeds.pick()).isEqualTo(1234L);
        } finally {
            if (fixed == null) {
                System.clearProperty("strata.seed");
            } else {
                System.setProperty("strata.seed", fixed);
            }
        }
    }
}
