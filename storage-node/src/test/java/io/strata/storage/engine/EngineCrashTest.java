package io.strata.storage.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.ChunkId;
import io.strata.core.util.JavaProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A real process is killed (Runtime.halt, as kill -9: no shutdown hook, no close) in the middle
 * of writing a new chunk version; on reopen the chunk is its old content or its new content,
 * never a mix, its CRC matches, and LMDB and the data files agree.
 */
class EngineCrashTest {
    static final ChunkId CHUNK = ChunkId.of(42, 7);
    static final int SIZE = 4 * 1024 * 1024;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "crash at {0} ({1})")
    @CsvSource({
            "chunk.data-write, committed, 1",   // half the new bytes written
            "chunk.data-sync, committed, 1",    // all bytes written, not synced
            "chunk.meta-commit, committed, 1",  // data synced, metadata not written
            "chunk.meta-commit, pending, 1",
    })
    void crashMidWriteLeavesNoTornChunk(String point, String mode, int expectedCommitted) throws Exception {
        Path target = dir.resolve("target");
        Files.createDirectories(target);
        try (JavaProcess p = JavaProcess.start("engine-crash", EngineCrashChild.class.getName(),
                List.of(target.toString(), point, mode), List.of("-Xmx512m"), Map.of(), dir.resolve("child.log"))) {
            assertThat(p.waitFor(Duration.ofSeconds(60))).as("child exits").isTrue();
            assertThat(p.exitValue()).as("child halted by the injected crash; log:\n%s", p.tail(40)).isEqualTo(137);
        }
        assertThat(target.resolve("v1.done")).exists();
        assertThat(target.resolve("v2.done")).doesNotExist();
        try (EngineFixture f = new EngineFixture(target, 12)) {
            ChunkMeta m = f.engine.meta(CHUNK, SIZE);
            assertThat(m.committedVersion()).isEqualTo(expectedCommitted);
            assertThat(m.dirty()).isFalse();
            byte[] content = f.read(CHUNK, SIZE);
            byte[] one = new byte[SIZE];
            Arrays.fill(one, (byte) 1);
            assertThat(content).isEqualTo(one);
            // no stray data files: the half-written version was reclaimed as a free (empty) file
            try (var files = Files.list(target.resolve("chunks"))) {
                assertThat(files.filter(x -> x.toFile().length() > 0).count()).isEqualTo(1);
            }
            // the target keeps working
            f.write(CHUNK, SIZE, 0, new byte[]{5});
            assertThat(f.read(CHUNK, SIZE)[0]).isEqualTo((byte) 5);
        }
    }
}
