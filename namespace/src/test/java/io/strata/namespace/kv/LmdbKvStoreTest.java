package io.strata.namespace.kv;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LmdbKvStoreTest extends KvConformanceTest {
    @TempDir
    Path dir;
    private int n;

    @Override
    protected KvStore open() {
        return LmdbKvStore.open(dir.resolve("kv" + (n++)), LmdbKvStore.Options.DEFAULTS.withSync(false), null);
    }

    @Test
    void committedDataSurvivesAReopen() {
        Path d = dir.resolve("persist");
        try (LmdbKvStore s = LmdbKvStore.open(d, LmdbKvStore.Options.DEFAULTS, null)) {
            s.run(tx -> {
                tx.set(b("k"), b("v"));
                tx.atomicAdd(b("n"), 3);
                return null;
            });
        }
        try (LmdbKvStore s = LmdbKvStore.open(d, LmdbKvStore.Options.DEFAULTS, null)) {
            assertThat(s(s.<byte[]>run(tx -> tx.get(b("k"))))).isEqualTo("v");
            assertThat(s.<Long>run(tx -> Bytes.readLe64(tx.get(b("n"))))).isEqualTo(3);
        }
    }

    @Test
    void theStoreIsPrivateToTheProcesssUser() throws IOException {
        Path d = dir.resolve("private/kv");
        LmdbKvStore.open(d, LmdbKvStore.Options.DEFAULTS, null).close();
        for (Path p : List.of(dir.resolve("private"), d)) {
            assertThat(Files.getPosixFilePermissions(p)).as(p.toString()).isEqualTo(PrivateFiles.DIRECTORY);
        }
        for (Path p : List.of(d.resolve("data.mdb"), d.resolve("lock.mdb"))) {
            assertThat(Files.getPosixFilePermissions(p)).as(p.toString()).isEqualTo(PrivateFiles.FILE);
        }
    }

    @Test
    void aStoreDirectoryOpenToOthersIsTightened() throws IOException {
        Path d = Files.createDirectory(dir.resolve("wide"));
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxrwxrwx"));
        LmdbKvStore.open(d, LmdbKvStore.Options.DEFAULTS, null).close();
        assertThat(Files.getPosixFilePermissions(d)).isEqualTo(PrivateFiles.DIRECTORY);
    }

    @Test
    void concurrentCommittersShareGroupCommits() throws Exception {
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                fs.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < 100; i++) {
                        int k = i;
                        store.run(tx -> {
                            tx.set(b("t" + id + "-" + k), b("x"));
                            return null;
                        });
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(store.<List<KeyValue>>run(tx -> tx.getPrefix(b("t"), 0))).hasSize(threads * 100);
    }
}
