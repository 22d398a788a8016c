package io.strata.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.DataSize;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sequential reads are served by readahead (few large tier reads ahead of the reader); random reads fetch exactly what was asked. */
class ReadaheadTest {
    @TempDir
    static Path dir;
    static TestCluster cluster;
    static CountingTier[] l3 = new CountingTier[1];
    static StrataFileSystem fs;
    static byte[] data = FileSystemTest.random(16 << 20, 31);

    @BeforeAll
    static void start() {
        cluster = TestCluster.start(dir, 31);
        fs = cluster.client("readahead", cluster.config().withReadahead(DataSize.ofMiB(8)),
                t -> l3[0] = new CountingTier(t, cluster.cluster.storage().clientContext("timer").scheduler()));
        fs.mkdirs("/ra");
        FileSystemTest.writeFile(fs, "/ra/f", data);
        fs.mkdirs("/strict");
        fs.setPolicy("/strict", "consistency=strict");
        FileSystemTest.writeFile(fs, "/strict/f", data);
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    @Test
    void sequentialReadsArePrefetchedInUnits() {
        try (StrataFile f = fs.openRead("/ra/f")) {
            l3[0].reset();
            ByteBuffer all = ByteBuffer.allocate(data.length);
            int step = 128 << 10;
            for (long off = 0; off < data.length; off += step) {
                ByteBuffer b = ByteBuffer.allocate(step);
                assertThat(f.read(off, b)).isEqualTo(step);
                all.put(b.flip());
            }
            assertThat(all.array()).isEqualTo(data);
            long[] counts = f.readaheadCounts();
            // 128 reads of 128 KiB: two direct reads while the stream is recognised, then 1 MiB units
            assertThat(l3[0].reads.get()).as("tier reads").isLessThanOrEqualTo(2 + 16);
            assertThat(counts[0]).as("reads served from prefetched units").isGreaterThan(100);
            assertThat(l3[0].readBytes.get()).as("bytes fetched").isLessThanOrEqualTo(data.length + (2L << 17));
        }
    }

    @Test
    void aUnitFetchedWhileAWriteToItIsStillGatheredDoesNotServeThatWriteStale() {
        // found by FsxIT (seed 5367467166083430209): a sequential read fetched the whole unit it
        // needed while a write elsewhere in that unit was still gathered, and a later read of the
        // written range was served from the unit without the write
        byte[] before = FileSystemTest.random(4 << 20, 32);
        FileSystemTest.writeFile(fs, "/ra/gathered", before);
        byte[] expect = before.clone();
        byte[] patch = FileSystemTest.random(64 << 10, 33);
        int unit = 1 << 20;
        int at = 3 * unit + (512 << 10);
        System.arraycopy(patch, 0, expect, at, patch.length);
        try (StrataFile f = fs.open("/ra/gathered", EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0)) {
            f.write(at, ByteBuffer.wrap(patch)); // gathered in the client, not yet at the tier
            int step = 128 << 10;
            for (int off = 3 * unit; off < 3 * unit + 3 * step; off += step) { // a stream in the same unit, before the write
                ByteBuffer b = ByteBuffer.allocate(step);
                assertThat(f.read(off, b)).isEqualTo(step);
                assertThat(Arrays.equals(b.array(), Arrays.copyOfRange(expect, off, off + step))).as("read at %d", off).isTrue();
            }
            ByteBuffer b = ByteBuffer.allocate(patch.length);
            assertThat(f.read(at, b)).isEqualTo(patch.length);
            assertThat(Arrays.equals(b.array(), patch)).as("the bytes just written, read through the same handle").isTrue();
        }
    }

    @Test
    void randomReadsFetchExactlyWhatIsAsked() {
        Random r = new Random(5);
        try (StrataFile f = fs.openRead("/ra/f")) {
            l3[0].reset();
            int n = 300;
            for (int i = 0; i < n; i++) {
                long off = (long) r.nextInt(data.length / 4096) * 4096;
                ByteBuffer b = ByteBuffer.allocate(4096);
                assertThat(f.read(off, b)).isEqualTo(4096);
                assertThat(b.array()).isEqualTo(Arrays.copyOfRange(data, (int) off, (int) off + 4096));
            }
            assertThat(l3[0].reads.get()).isEqualTo(n);
            assertThat(l3[0].readBytes.get()).isEqualTo(n * 4096L);
            assertThat(f.readaheadCounts()[0]).isZero();
        }
    }

    @Test
    void aStreamAfterRandomReadsIsRecognisedAgain() {
        try (StrataFile f = fs.openRead("/ra/f")) {
            f.read(9 << 20, ByteBuffer.allocate(4096));
            f.read(1 << 20, ByteBuffer.allocate(4096));
            l3[0].reset();
            for (long off = 4 << 20; off < (12 << 20); off += 64 << 10) {
                ByteBuffer b = ByteBuffer.allocate(64 << 10);
                f.read(off, b);
                assertThat(b.array()).isEqualTo(Arrays.copyOfRange(data, (int) off, (int) off + (64 << 10)));
            }
            assertThat(l3[0].reads.get()).isLessThanOrEqualTo(2 + 8 + 8);
            assertThat(f.readaheadCounts()[0]).isGreaterThan(100);
        }
    }

    @Test
    void strictFilesAreNeverReadAhead() {
        try (StrataFile f = fs.openRead("/strict/f")) {
            l3[0].reset();
            for (long off = 0; off < (4 << 20); off += 128 << 10) {
                f.read(off, ByteBuffer.allocate(128 << 10));
            }
            assertThat(l3[0].reads.get()).isEqualTo(32);
            assertThat(l3[0].readBytes.get()).isEqualTo(4L << 20);
        }
    }
}
