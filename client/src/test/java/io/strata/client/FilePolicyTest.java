package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** What a file's recorded policy asks of the L2 pool: {@code tiers.l2}, {@code durability}, {@code l2.replicas}. */
class FilePolicyTest {
    @Test
    void aStagedFileAsksForTheL2CopiesItsPolicyNames() {
        assertThat(FilePolicy.of(Map.of("tiers.l2", "stage")).stage().replicas()).as("the default").isEqualTo(2);
        var three = FilePolicy.of(Map.of("tiers.l2", "stage", "durability", "l2", "l2.replicas", "3")).stage();
        assertThat(three.stage()).isTrue();
        assertThat(three.durableL2()).isTrue();
        assertThat(three.replicas()).isEqualTo(3);
        assertThat(FilePolicy.of(Map.of("tiers.l2", "stage", "l2.replicas", "1")).stage().replicas()).isEqualTo(1);
        assertThat(FilePolicy.of(Map.of("tiers.l2", "off", "l2.replicas", "3")).stage().stage()).as("not staged").isFalse();
    }
}
