package io.strata.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class DataSizeTest {
    @Test
    void parsesBinaryUnits() {
        assertThat(DataSize.parse("64KiB").bytes()).isEqualTo(65536);
        assertThat(DataSize.parse("4 MiB").bytes()).isEqualTo(4L << 20);
        assertThat(DataSize.parse("1.5GiB").bytes()).isEqualTo(3L << 29);
        assertThat(DataSize.parse("4096").bytes()).isEqualTo(4096);
        assertThat(DataSize.parse("4M").bytes()).isEqualTo(4L << 20);
        assertThat(DataSize.parse("2tb").bytes()).isEqualTo(2L << 40);
    }

    @Test
    void printsTheLargestExactUnit() {
        assertThat(DataSize.ofKiB(64)).hasToString("64KiB");
        assertThat(DataSize.ofBytes(1000)).hasToString("1000B");
        assertThat(DataSize.parse(DataSize.ofMiB(3).toString())).isEqualTo(DataSize.ofMiB(3));
        assertThat(DataSize.human(1536)).isEqualTo("1.5KiB");
    }

    @Test
    void rejectsGarbageWithTheInputInTheMessage() {
        assertThatThrownBy(() -> DataSize.parse("lots")).hasMessageContaining("'lots'");
        assertThatThrownBy(() -> DataSize.parse("4XB")).hasMessageContaining("unknown size unit");
        assertThatThrownBy(() -> DataSize.parse("99999999999999TiB")).hasMessageContaining("out of range");
        assertThatThrownBy(() -> DataSize.ofBytes(-1)).isInstanceOf(IllegalArgumentException.class);
    }
}
