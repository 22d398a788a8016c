package io.strata.fuse;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import io.strata.testing.Seeded;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An fsx-style exerciser through a real FUSE mount: random writes, truncates (up and down),
 * reads at random offsets through two descriptors, fsyncs, closes and reopens, each checked
 * against an in-memory model of the file; after every close another client (the Java API, no
 * FUSE) must read exactly the model. A bounded number of operations; the seed is printed.
 */
@RequiresFuse
class FsxIT {
    static final int MAX = 2 << 20;
    static final int OPS = 800;

    @Seeded
    @Test
    void randomOperationsThroughTheMountMatchTheModel(long seed, @TempDir Path dir) throws IOException {
        System.out.println("[strata] fsx seed " + seed + " (" + OPS + " operations; replay with -Dstrata.seed=" + seed + ")");
        Random r = new Random(seed);
        try (MountedCluster c = MountedCluster.start(dir, seed); StrataFileSystem other = c.client("other")) {
            Files.createDirectories(c.mnt.resolve("fsx"));
            c.fs.setPolicy("/fsx", "stripe.chunk-size=64KiB", "stripe.width=3");
            Path f = c.mnt.resolve("fsx/file");
            byte[] model = new byte[0];
            FileChannel w = FileChannel.open(f, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileChannel r2 = FileChannel.open(f, StandardOpenOption.READ);
            int[] counts = new int[6];
            try {
                for (int op = 0; op < OPS; op++) {
                    int kind = r.nextInt(100);
                    if (kind < 40) {
                        counts[0]++;
                        int off = r.nextInt(MAX);
                        int len = Math.min(MAX - off, 1 + r.nextInt(r.nextBoolean() ? 3000 : 300_000));
                        byte[] b = new byte[len];
                        r.nextBytes(b);
                        ByteBuffer bb = ByteBuffer.wrap(b);
                        while (bb.hasRemaining()) {
                            w.write(bb, off + bb.position());
                        }
                        if (off + len > model.length) {
                            model = Arrays.copyOf(model, off + len);
                        }
                        System.arraycopy(b, 0, model, off, len);
                    } else if (kind < 50) {
                        counts[1]++;
                        int size = r.nextInt(MAX);
                        w.truncate(size);
                        if (size > model.length) {
                            // FileChannel.truncate never extends; extend with a write of one byte at the end instead
                            w.write(ByteBuffer.wrap(new byte[] {7}), size - 1);
                            model = Arrays.copyOf(model, size);
                            model[size - 1] = 7;
                        } else {
                            model = Arrays.copyOf(model, size);
                        }
                    } else if (kind < 88) {
                        counts[2]++;
                        FileChannel ch = r.nextBoolean() ? w : r2;
                        int off = r.nextInt(MAX);
                        int len = 1 + r.nextInt(200_000);
                        ByteBuffer b = ByteBuffer.allocate(len);
                        int n = 0;
                        while (b.hasRemaining()) {
                            int k = ch.read(b, off + b.position());
                            if (k <= 0) {
                                break;
                            }
                            n += k;
                        }
                        int want = Math.max(0, Math.min(len, model.length - off));
                        assertThat(n).as("op %d: read %d+%d of a %d-byte file", op, off, len, model.length).isEqualTo(want);
                        if (want > 0 && !Arrays.equals(Arrays.copyOf(b.array(), want), Arrays.copyOfRange(model, off, off + want))) {
                            throw new AssertionError("op " + op + ": bytes of read " + off + "+" + len + " differ from the model ("
                                    + (ch == w ? "read/write handle" : "read-only handle") + "; " + firstDifference(b.array(), model, off, want) + ")");
                        }
                        assertThat(ch.size()).as("op %d: size", op).isEqualTo(model.length);
                    } else if (kind < 94) {
                        counts[3]++;
                        w.force(true);
                    } else {
                        counts[4]++;
                        w.close();
                        r2.close();
                        try (StrataFile jf = other.openRead("/fsx/file")) {
                            assertThat(jf.size()).as("op %d: size another client sees after close", op).isEqualTo(model.length);
                            ByteBuffer all = ByteBuffer.allocate(model.length);
                            while (all.hasRemaining() && jf.read(all.position(), all) > 0) {
                                // read on
                            }
                            if (!Arrays.equals(all.array(), model)) {
                                throw new AssertionError("op " + op + ": another client reads different bytes after close");
                            }
                        }
                        w = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE);
                        r2 = FileChannel.open(f, StandardOpenOption.READ);
                    }
                }
            } finally {
                w.close();
                r2.close();
            }
            System.out.println("[strata] fsx done: " + counts[0] + " writes, " + counts[1] + " truncates, " + counts[2] + " reads, "
                    + counts[3] + " fsyncs, " + counts[4] + " reopens; final size " + model.length);
            assertThat(Files.readAllBytes(f)).isEqualTo(model);
        }
    }

    /** Where a read first differs from the model, how long the differing run is, and whether it read zeros. */
    static String firstDifference(byte[] got, byte[] model, int off, int n) {
        int i = 0;
        while (i < n && got[i] == model[off + i]) {
            i++;
        }
        int j = i;
        boolean zeros = true;
        while (j < n && got[j] != model[off + j]) {
            zeros &= got[j] == 0;
            j++;
        }
        return "first difference at file offset " + (off + i) + ", " + (j - i) + " bytes differ from there" + (zeros ? ", read as zeros" : "");
    }
}
