package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A crash-safe write leaves the target with its old bytes or all of the new ones: a failure at
 * each step (half the bytes written, before the fdatasync, before the rename) leaves the old
 * file and no temporary file; an abandoned staged write changes nothing. {@link AtomicFilesCrashIT}
 * does the same with a process that halts at each step.
 */
class AtomicFilesTest {
    static final FaultPoint WRITE = FaultPoint.of("test.file-write");
    static final FaultPoint SYNC = FaultPoint.of("test.file-sync");
    static final FaultPoint RENAME = FaultPoint.of("test.file-rename");

    @TempDir
    Path dir;
    NodeContext ctx;
    AtomicFiles files;

    @BeforeEach
    void open() {
        ctx = NodeContext.seeded("atomic", 1);
        files = new AtomicFiles(ctx.faults(), new AtomicFiles.Faults(WRITE, SYNC, RENAME));
    }

    @AfterEach
    void close() {
        ctx.close();
    }

    static void write(AtomicFiles f, Path target, String text, boolean sync) throws IOException {
        ByteBuf b = Unpooled.copiedBuffer(text, StandardCharsets.UTF_8);
        try {
            f.write(target, b, sync);
        } finally {
            b.release();
        }
    }

    @Test
    void aWriteReplacesTheFileWhole() throws IOException {
        Path t = dir.resolve("f");
        write(files, t, "old bytes", true);
        assertThat(Files.readString(t)).isEqualTo("old bytes");
        write(files, t, "new, longer bytes", false);
        assertThat(Files.readString(t)).isEqualTo("new, longer bytes");
        write(files, t, "short", true);
        assertThat(Files.readString(t)).isEqualTo("short");
        assertThat(AtomicFiles.temporary(t)).doesNotExist();
        try (var s = Files.list(dir)) {
            assertThat(s.toList()).containsExactly(t);
        }
    }

    @ParameterizedTest(name = "fault at {0}")
    @ValueSource(strings = {"test.file-write", "test.file-sync", "test.file-rename"})
    void aFailureAtAnyStepLeavesTheOldFile(String point) throws IOException {
        Path t = dir.resolve("f");
        Path fresh = dir.resolve("fresh");
        write(files, t, "old bytes", true);
        var rule = ctx.faults().arm(FaultPoint.of(point), new Fault.Fail(new StrataException(Status.IO_ERROR, "injected")));
        assertThatThrownBy(() -> write(files, t, "new bytes that never land", true)).isInstanceOf(StrataException.class);
        assertThatThrownBy(() -> write(files, fresh, "a file that never appears", true)).isInstanceOf(StrataException.class);
        assertThat(rule.fired()).isEqualTo(2);
        ctx.faults().disarmAll();
        assertThat(Files.readString(t)).isEqualTo("old bytes");
        assertThat(fresh).doesNotExist();
        assertThat(AtomicFiles.temporary(t)).as("the failed write's temporary file is gone").doesNotExist();
        assertThat(AtomicFiles.temporary(fresh)).doesNotExist();
        write(files, t, "new bytes", true);
        assertThat(Files.readString(t)).isEqualTo("new bytes");
    }

    @Test
    void aStagedWriteChangesNothingUntilCommittedAndNothingWhenAbandoned() throws IOException {
        Path t = dir.resolve("f");
        write(files, t, "old", true);
        ByteBuf b = Unpooled.copiedBuffer("new", StandardCharsets.UTF_8);
        try {
            AtomicFiles.Staged s = files.stage(t, b, true);
            assertThat(Files.readString(t)).isEqualTo("old");
            assertThat(Files.readString(AtomicFiles.temporary(t))).isEqualTo("new");
            s.abandon();
            assertThat(Files.readString(t)).isEqualTo("old");
            assertThat(AtomicFiles.temporary(t)).doesNotExist();
            AtomicFiles.Staged s2 = files.stage(t, b, false);
            s2.commit();
            assertThat(Files.readString(t)).isEqualTo("new");
            s2.abandon(); // after the rename: nothing to delete, the target stays
            assertThat(Files.readString(t)).isEqualTo("new");
        } finally {
            b.release();
        }
    }

    @Test
    void temporaryNamesAreRecognised() {
        Path t = dir.resolve("0001-0002.blk");
        assertThat(AtomicFiles.temporary(t).getFileName().toString()).isEqualTo("0001-0002.blk.tmp");
        assertThat(AtomicFiles.isTemporary("0001-0002.blk.tmp")).isTrue();
        assertThat(AtomicFiles.isTemporary("0001-0002.blk")).isFalse();
    }
}
