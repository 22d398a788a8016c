package io.strata.storage.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.protocol.storage.RequestId;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** A chunk version's per-block CRC32Cs combine into the whole chunk's and into aligned ranges'. */
class ChunkCrcTest {
    private static int direct(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, len);
        return (int) c.getValue();
    }

    @Test
    void blockCrcsCombineIntoTheChunkCrc() {
        Random r = new Random(7);
        byte[] b = new byte[ChunkEngine.BLOCK * 5 + 1234];
        r.nextBytes(b);
        int[] blocks = new int[ChunkEngine.blocks(b.length)];
        for (int i = 0; i < blocks.length; i++) {
            int s = i * ChunkEngine.BLOCK;
            blocks[i] = direct(b, s, Math.min(ChunkEngine.BLOCK, b.length - s));
        }
        assertThat(ChunkEngine.combine(blocks, b.length)).isEqualTo(direct(b, 0, b.length));
        ChunkVersion v = new ChunkVersion(1, 1, b.length, direct(b, 0, b.length), blocks, false, RequestId.NONE);
        assertThat(ChunkEngine.rangeCrc(v, ChunkEngine.BLOCK, 2 * ChunkEngine.BLOCK))
                .isEqualTo(direct(b, ChunkEngine.BLOCK, 2 * ChunkEngine.BLOCK) & 0xFFFFFFFFL);
        assertThat(ChunkEngine.rangeCrc(v, 3 * ChunkEngine.BLOCK, b.length - 3 * ChunkEngine.BLOCK))
                .isEqualTo(direct(b, 3 * ChunkEngine.BLOCK, b.length - 3 * ChunkEngine.BLOCK) & 0xFFFFFFFFL);
        assertThat(ChunkEngine.rangeCrc(v, 5, 100)).as("unaligned").isEqualTo(-1);
    }
}
