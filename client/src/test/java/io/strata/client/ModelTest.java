package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.testing.Seeded;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random writes, truncates, reads, fsyncs and reopens of one file through two handles of one
 * client, checked against an in-memory model after every read; after each fsync or close a
 * second client opens the file and must see exactly the model (close-to-open). Small chunks
 * (64 KiB, 3 chains) so that operations cross many chunk boundaries.
 */
class ModelTest {
    static final int MAX = 2 << 20;

    @Seeded
    @Test
    void randomOperationsMatchTheModel(long seed, @TempDir Path dir) {
        Random r = new Random(seed);
        try (TestCluster c = TestCluster.start(dir, seed)) {
            StrataFileSystem fs = c.client("model");
            StrataFileSystem other = c.client("other");
            fs.mkdirs("/m");
            fs.setPolicy("/m", "stripe.chunk-size=64KiB", "stripe.width=3");
            byte[] model = new byte[0];
            StrataFile w = fs.create("/m/f");
            StrataFile h2 = fs.open("/m/f", EnumSet.of(OpenFlag.READ), 0);
            try {
                for (int op = 0; op < 700; op++) {
                    int kind = r.nextInt(100);
                    if (kind < 45) {
                        int off = r.nextInt(MAX);
                        int len = 1 + r.nextInt(r.nextBoolean() ? 4096 : 200_000);
                        len = Math.min(len, MAX - off);
                        byte[] b = new byte[len];
                        r.nextBytes(b);
                        w.write(off, b, 0, len);
                        if (off + len > model.length) {
                            model = Arrays.copyOf(model, off + len);
                        }
                        System.arraycopy(b, 0, model, off, len);
                    } else if (kind < 55) {
                        int size = r.nextInt(MAX);
                        w.truncate(size);
                        model = Arrays.copyOf(model, size);
                    } else if (kind < 90) {
                        StrataFile h = r.nextBoolean() ? w : h2;
                        int off = r.nextInt(MAX);
                        int len = 1 + r.nextInt(300_000);
                        ByteBuffer b = ByteBuffer.allocate(len);
                        int n = h.read(off, b);
                        int want = Math.max(0, Math.min(len, model.length - off));
                        assertThat(Math.max(n, 0)).as("op %d: read %d+%d of a %d-byte file", op, off, len, model.length).isEqualTo(want);
                        if (want > 0) {
                            assertThat(Arrays.copyOf(b.array(), want)).as("op %d: bytes of read %d+%d", op, off, len)
                                    .isEqualTo(Arrays.copyOfRange(model, off, off + want));
                        }
                        assertThat(h.size()).isEqualTo(model.length);
                    } else if (kind < 96) {
                        w.fsync();
                        if (kind < 93) {
                            assertThat(FileSystemTest.readAll(other, "/m/f")).as("op %d: another client after fsync", op).isEqualTo(model);
                        }
                    } else {
                        w.close();
                        w = fs.open("/m/f", EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0);
                        assertThat(FileSystemTest.readAll(other, "/m/f")).as("op %d: another client after close", op).isEqualTo(model);
                    }
                }
            } finally {
                w.close();
                h2.close();
            }
            assertThat(FileSystemTest.readAll(other, "/m/f")).isEqualTo(model);
        }
    }
}
