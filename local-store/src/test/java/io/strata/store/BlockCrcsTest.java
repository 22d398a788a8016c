package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.testing.Seeded;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** Block CRCs combine into the whole content's CRC and into any block-aligned range's; mismatches are located. */
class BlockCrcsTest {
    static int direct(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, len);
        return (int) c.getValue();
    }

    @Test
    @Seeded
    void blockCrcsCombineIntoTheWholeContentsCrc(long seed) {
        Random r = new Random(seed);
        for (int round = 0; round < 40; round++) {
            int blockSize = 1 + r.nextInt(r.nextBoolean() ? 64 : 70_000);
            byte[] b = new byte[r.nextInt(5 * blockSize + 2)];
            r.nextBytes(b);
            BlockCrcs crcs = new BlockCrcs(blockSize);
            ByteBuf buf = Unpooled.wrappedBuffer(b);
            int[] parts = crcs.of(buf);
            assertThat(parts).hasSize(crcs.count(b.length));
            for (int i = 0; i < parts.length; i++) {
                int at = i * blockSize;
                assertThat(parts[i]).isEqualTo(direct(b, at, Math.min(blockSize, b.length - at)));
            }
            assertThat(crcs.combine(parts, b.length)).as("block size %d, %d bytes", blockSize, b.length)
                    .isEqualTo(direct(b, 0, b.length));
            if (parts.length > 1) {
                int from = 1 + r.nextInt(parts.length - 1);
                int[] tail = java.util.Arrays.copyOfRange(parts, from, parts.length);
                int start = from * blockSize;
                assertThat(crcs.combine(tail, b.length - start)).isEqualTo(direct(b, start, b.length - start));
            }
            buf.release();
        }
        assertThat(new BlockCrcs(4096).combine(new int[0], 0)).isZero();
    }

    @Test
    void theFirstDamagedBlockIsNamed() {
        byte[] b = new byte[10 * 1000 + 17];
        new Random(3).nextBytes(b);
        BlockCrcs crcs = new BlockCrcs(1000);
        ByteBuf buf = Unpooled.wrappedBuffer(b);
        int[] parts = crcs.of(buf);
        assertThat(crcs.firstMismatch(buf, 0, 0, b.length, i -> parts[i])).isEqualTo(-1);
        buf.setByte(7 * 1000 + 5, ~buf.getByte(7 * 1000 + 5));
        assertThat(crcs.firstMismatch(buf, 0, 0, b.length, i -> parts[i])).isEqualTo(7);
        // a range that leaves the damaged block out is clean; one that covers it is not
        assertThat(crcs.firstMismatch(buf, 3000, 3000, 4000, i -> parts[i])).isEqualTo(-1);
        assertThat(crcs.firstMismatch(buf, 8000, 8000, b.length - 8000, i -> parts[i])).isEqualTo(-1);
        assertThat(crcs.firstMismatch(buf, 6000, 6000, 3000, i -> parts[i])).isEqualTo(7);
        buf.release();
    }
}
