package io.strata.fuse;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.testing.Seeded;
import io.strata.testing.Slow;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The small-file storm a new user ran into, on a real mount: 8 workers create (open, write
 * 16 KiB, close), stat, read and delete 20,000 files spread over 8 directories, every result
 * checked (sizes, contents, that nothing is left). The delete phase used to fail with EIO: the
 * garbage collector's passes piled up on the meta service's request threads while it freed the
 * deleted files' chunks. And pjdfstest's ftruncate/12.t: a file truncated to ~1 PB and unlinked
 * used to wedge the mount for minutes (the collector issued one removal per chunk index of its
 * length).
 */
@RequiresFuse
class SmallFileStormIT {
    static final int WORKERS = 8;
    static final int FILES = 20_000;
    static final int DIRS = 8;
    static final int SIZE = 16 * 1024;

    @TempDir
    static Path dir;
    static MountedCluster c;

    @BeforeAll
    static void start() {
        c = MountedCluster.start(dir.resolve("cluster"), 91);
    }

    @AfterAll
    static void stop() {
        if (c != null) {
            c.close();
        }
    }

    @Test
    @Seeded
    @Slow
    @Timeout(value = 20, unit = TimeUnit.MINUTES)
    void twentyThousandSmallFilesAreCreatedStatReadAndDeletedWithoutAnError(long seed) throws Exception {
        Path root = Files.createDirectories(c.mnt.resolve("storm"));
        Random rnd = new Random(seed);
        int[] dirOf = new int[FILES];
        for (int i = 0; i < FILES; i++) {
            dirOf[i] = rnd.nextInt(DIRS);
        }
        for (int d = 0; d < DIRS; d++) {
            Files.createDirectories(root.resolve("d" + d));
        }
        phase("create", i -> {
            try (FileChannel ch = FileChannel.open(path(root, dirOf, i), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer b = ByteBuffer.wrap(content(seed, i));
                while (b.hasRemaining()) {
                    ch.write(b);
                }
            } catch (IOException e) {
                throw new UncheckedIOException("create " + i, e);
            }
        });
        phase("stat", i -> {
            try {
                assertThat(Files.size(path(root, dirOf, i))).as("size of file %d", i).isEqualTo(SIZE);
            } catch (IOException e) {
                throw new UncheckedIOException("stat " + i, e);
            }
        });
        phase("read", i -> {
            try {
                byte[] got = Files.readAllBytes(path(root, dirOf, i));
                if (!Arrays.equals(got, content(seed, i))) {
                    throw new AssertionError("file " + i + " read back other bytes than were written");
                }
            } catch (IOException e) {
                throw new UncheckedIOException("read " + i, e);
            }
        });
        phase("delete", i -> {
            try {
                Files.delete(path(root, dirOf, i));
            } catch (IOException e) {
                throw new UncheckedIOException("delete " + i, e);
            }
        });
        for (int d = 0; d < DIRS; d++) {
            try (Stream<Path> s = Files.list(root.resolve("d" + d))) {
                assertThat(s.toList()).as("directory d%d after the delete phase", d).isEmpty();
            }
        }
        // the collector keeps a slow pace while the storm's changes go on and catches up once they end
        Eventually.await("the collector frees every deleted file's chunks after the storm", Duration.ofSeconds(180),
                () -> Futures.join(c.cluster.meta().meta().gcQueueLengthAsync(), Duration.ofSeconds(30)) == 0);
    }

    /** ftruncate/12.t: truncate to 999,999,999,999,999 bytes and unlink; the mount keeps answering at once. */
    @Test
    void aPetabyteSparseFileIsTruncatedAndUnlinkedWithoutWedgingTheMount() throws Exception {
        Path f = c.mnt.resolve("huge");
        Files.writeString(f, "x");
        Sh.run(c.mnt, "truncate", "-s", "999999999999999", f.toString()).ok();
        assertThat(Files.size(f)).isEqualTo(999_999_999_999_999L);
        Files.delete(f);
        long t0 = System.nanoTime();
        for (int i = 0; i < 50; i++) {
            Path p = c.mnt.resolve("after-" + i);
            Files.writeString(p, "still answering");
            assertThat(Files.readString(p)).isEqualTo("still answering");
            Files.delete(p);
        }
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0)).as("50 small files after the huge unlink").isLessThan(60);
    }

    static Path path(Path root, int[] dirOf, int i) {
        return root.resolve("d" + dirOf[i]).resolve("f" + i);
    }

    static byte[] content(long seed, int i) {
        byte[] b = new byte[SIZE];
        new Random(seed * 31 + i).nextBytes(b);
        return b;
    }

    /** Runs {@code op} for every file on {@link #WORKERS} threads (file i on worker i mod 8) and prints the rate. */
    static void phase(String name, IntConsumer op) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
        long t0 = System.nanoTime();
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                int first = w;
                workers.add(pool.submit(() -> {
                    for (int i = first; i < FILES; i += WORKERS) {
                        op.accept(i);
                    }
                    return null;
                }));
            }
            for (Future<?> f : workers) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        double s = (System.nanoTime() - t0) / 1e9;
        System.out.printf("[strata] storm %s: %d files in %.1f s (%.0f/s)%n", name, FILES, s, FILES / s);
    }
}
