package io.strata.storage.engine;

import io.strata.protocol.storage.UpdateKind;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A full disk fails the write with NO_SPACE and leaves every existing chunk intact. */
class FullDiskTest {
    static final int CHUNK = 1024 * 1024;

    @TempDir
    Path dir;

    @Test
    void injectedNoSpaceFailsCleanly() {
        try (EngineFixture f = new EngineFixture(dir, 21)) {
            ChunkId id = ChunkId.of(1, 1);
            byte[] v1 = EngineFixture.random(new Random(21), 200_000);
            f.write(id, CHUNK, 0, v1);
            f.ctx.faults().arm(ChunkEngine.DATA_WRITE,
                    new Fault.Fail(new StrataException(Status.NO_SPACE, "No space left on device (injected)")));
            assertThatThrownBy(() -> f.write(id, CHUNK, 0, new byte[300_000]))
                    .isInstanceOf(StrataException.class).extracting(e -> ((StrataException) e).status()).isEqualTo(Status.NO_SPACE);
            f.ctx.faults().disarmAll();
            assertThat(f.read(id, CHUNK)).isEqualTo(v1);
        }
    }

    /** A real full file system: a 6 MiB tmpfs (needs root and mount; skipped with the reason otherwise). */
    @Test
    void realFullFileSystem() throws Exception {
        Path mnt = dir.resolve("small");
        Files.createDirectories(mnt);
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        boolean mounted = p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        if (!mounted) {
            System.out.println("[strata] FullDiskTest.realFullFileSystem skipped: cannot mount a tmpfs (" + out.trim() + ")");
        }
        Assumptions.assumeTrue(mounted, "cannot mount a size-limited tmpfs here: " + out.trim());
        try {
            EngineOptions small = new EngineOptions(DataSize.ofMiB(1), 64, true, 4, 8);
            try (EngineFixture f = new EngineFixture(mnt.resolve("t"), 22, small)) {
                Random r = new Random(22);
                List<byte[]> written = new ArrayList<>();
                StrataException full = null;
                for (int i = 0; i < 20 && full == null; i++) {
                    byte[] data = EngineFixture.random(r, 700_000);
                    try {
                        f.write(ChunkId.of(2, i), CHUNK, 0, data);
                        written.add(data);
                    } catch (StrataException e) {
                        full = e;
                    }
                }
                assertThat(full).as("the 6 MiB file system fills up").isNotNull();
                assertThat(full.status()).isEqualTo(Status.NO_SPACE);
                assertThat(written).isNotEmpty();
                // an overwrite of an existing chunk also fails cleanly, and nothing is torn
                int last = written.size() - 1;
                assertThatThrownBy(() -> f.update(ChunkId.of(2, last), CHUNK,
                        new Update(UpdateKind.WRITE, 0, 900_000, EngineFixture.req()), Unpooled.wrappedBuffer(new byte[900_000]), true))
                        .isInstanceOf(StrataException.class).extracting(e -> ((StrataException) e).status()).isEqualTo(Status.NO_SPACE);
                for (int i = 0; i < written.size(); i++) {
                    assertThat(f.read(ChunkId.of(2, i), CHUNK)).as("chunk %d intact", i).isEqualTo(written.get(i));
                }
                f.reopen();
                for (int i = 0; i < written.size(); i++) {
                    assertThat(f.read(ChunkId.of(2, i), CHUNK)).as("chunk %d intact after reopen", i).isEqualTo(written.get(i));
                }
                // freeing space makes writes work again
                f.update(ChunkId.of(2, 0), CHUNK, new Update(UpdateKind.REMOVE, 0, 0, EngineFixture.req()), Unpooled.EMPTY_BUFFER, true);
                f.update(ChunkId.of(2, 1), CHUNK, new Update(UpdateKind.REMOVE, 0, 0, EngineFixture.req()), Unpooled.EMPTY_BUFFER, true);
                f.reopen(); // flushes, so the removed versions' files are deleted
                byte[] again = EngineFixture.random(r, 500_000);
                f.write(ChunkId.of(3, 0), CHUNK, 0, again);
                assertThat(f.read(ChunkId.of(3, 0), CHUNK)).isEqualTo(again);
            }
        } finally {
            new ProcessBuilder("umount", mnt.toString()).start().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
