package io.strata.core.util;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

class Crc32cTest {
    private static int direct(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, len);
        return (int) c.getValue();
    }

    @Test
    void combineEqualsTheCrcOfTheConcatenation() {
        Random r = new Random(42);
        for (int round = 0; round < 200; round++) {
            byte[] b = new byte[r.nextInt(300_000)];
            r.nextBytes(b);
            int cut = b.length == 0 ? 0 : r.nextInt(b.length + 1);
            int a = direct(b, 0, cut);
            int c = direct(b, cut, b.length - cut);
            assertThat(Crc32c.combine(a, c, b.length - cut)).as("split at %d of %d", cut, b.length).isEqualTo(direct(b, 0, b.length));
        }
    }

    @Test
    void wholeBuffersAndZerosMatchTheJdk() {
        byte[] b = new byte[300_001];
        new Random(7).nextBytes(b);
        assertThat(Crc32c.of(Unpooled.wrappedBuffer(b))).isEqualTo(direct(b, 0, b.length));
        assertThat(Crc32c.zeros(100_000)).isEqualTo(direct(new byte[100_000], 0, 100_000));
    }
}
