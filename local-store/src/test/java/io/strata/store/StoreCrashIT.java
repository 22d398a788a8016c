package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.util.JavaProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * With real processes: a process that halts (as kill -9: no shutdown hook, no cleanup) at each
 * step of a crash-safe write leaves the old file, and at most a temporary file that the orphan
 * sweep recognises and deletes; one that completes leaves the new file. A store directory locked
 * by another process is refused until that process dies.
 */
class StoreCrashIT {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "halt at {0}")
    @CsvSource({"test.file-write, 137", "test.file-sync, 137", "test.file-rename, 137", "none, 0"})
    void aCrashAtAnyStepLeavesTheOldFileOrTheNew(String point, int exit) throws Exception {
        Path store = dir.resolve("store");
        Files.createDirectories(store);
        Files.writeString(store.resolve("f"), "old");
        try (JavaProcess p = JavaProcess.start("store-child", StoreChild.class.getName(), List.of("write", store.toString(), point),
                List.of("-Xmx64m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), Map.of(), dir.resolve("child.log"))) {
            assertThat(p.waitFor(Duration.ofSeconds(60))).as("the child exits").isTrue();
            assertThat(p.exitValue()).as("log:\n%s", p.tail(30)).isEqualTo(exit);
        }
        boolean crashed = exit != 0;
        assertThat(Files.readString(store.resolve("f"))).isEqualTo(crashed ? "old" : StoreChild.NEW);
        Path tmp = AtomicFiles.temporary(store.resolve("f"));
        assertThat(Files.exists(tmp)).as("a temporary file is what a crash leaves").isEqualTo(crashed);
        OrphanSweep.Scan<String> scan = OrphanSweep.scan(store, n -> n.equals("f") ? n : null, k -> true);
        assertThat(scan.temporary()).containsExactlyElementsOf(crashed ? List.of(tmp) : List.of());
        assertThat(OrphanSweep.sweep(store, n -> n.equals("f") ? n : null, k -> true)).isEqualTo(crashed ? 1 : 0);
        try (var files = Files.list(store)) {
            assertThat(files.toList()).containsExactly(store.resolve("f"));
        }
    }

    @Test
    void aLockHeldByAnotherProcessRefusesUntilItDies() throws Exception {
        Path store = dir.resolve("locked-store");
        Files.createDirectories(store);
        try (JavaProcess p = JavaProcess.start("store-locker", StoreChild.class.getName(), List.of("lock", store.toString()),
                List.of("-Xmx64m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), Map.of(), dir.resolve("locker.log"))) {
            p.awaitReady(() -> Files.exists(store.resolve("locked")), Duration.ofSeconds(60));
            assertThatThrownBy(() -> StoreDir.open(store, "store.lock", "locked by another process", null))
                    .hasMessage("locked by another process");
            p.kill();
        }
        StoreDir.open(store, "store.lock", "locked by another process", null).close();
    }
}
