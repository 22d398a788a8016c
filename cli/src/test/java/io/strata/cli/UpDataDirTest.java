package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The data directory of {@code strata up} is private to the user running it: made (or
 * tightened) 0700 with its logs directory, its files written 0600; one that other users may
 * write is refused before anything starts, with the directory, its mode and the fix.
 */
class UpDataDirTest {
    @TempDir
    Path tmp;

    @Test
    void upRefusesADataDirectoryOtherUsersMayWrite() throws IOException {
        for (String mode : List.of("rwxrwxrwx", "rwxrwx---")) {
            Path data = Files.createDirectory(tmp.resolve("shared-" + mode.replace('-', '_')));
            Files.setPosixFilePermissions(data, PosixFilePermissions.fromString(mode));
            CliTest.Run up = CliTest.strata("up", "--data", data.toString(), "--no-mount");
            assertThat(up.code()).as(up.err()).isEqualTo(1);
            assertThat(up.err()).startsWith("strata: " + data + ": writable by other users (mode " + mode + ")")
                    .contains("chmod 700 " + data);
            assertThat(data).as("nothing written, nothing started").isEmptyDirectory();
            assertThat(Files.getPosixFilePermissions(data)).isEqualTo(PosixFilePermissions.fromString(mode));
        }
    }

    @Test
    void claimMakesTheDataAndLogsDirectoriesPrivateAndTightensAReadableOne() throws IOException {
        ClusterDir fresh = new ClusterDir(tmp.resolve("new/data"));
        fresh.claim();
        assertThat(Files.getPosixFilePermissions(fresh.root)).isEqualTo(PrivateFiles.DIRECTORY);
        assertThat(Files.getPosixFilePermissions(fresh.logs())).isEqualTo(PrivateFiles.DIRECTORY);

        Path old = Files.createDirectory(tmp.resolve("old"));
        Files.setPosixFilePermissions(old, PosixFilePermissions.fromString("rwxr-xr-x"));
        new ClusterDir(old).claim();
        assertThat(Files.getPosixFilePermissions(old)).isEqualTo(PrivateFiles.DIRECTORY);
    }

    @Test
    void theFilesUpAndItsDaemonsWriteArePrivate() throws Exception {
        ClusterDir dir = new ClusterDir(tmp.resolve("data"));
        dir.claim();
        try (AutoCloseable lock = dir.lock()) {
            UpLayout.loadOrCreate(dir, 1, 1, 1, 0, null);
            dir.writeMembers(List.of(new ClusterDir.Member("mgmtd", 1, "127.0.0.1:1", dir.logs().resolve("mgmtd.log"))));
            DaemonRuntime.announceReady(dir.daemonDir("mgmtd"), Map.of("rpc", "127.0.0.1:1"));
        }
        for (Path f : List.of(dir.root.resolve(".lock"), dir.root.resolve(UpLayout.FILE), dir.root.resolve(ClusterDir.STATE),
                dir.daemonDir("mgmtd").resolve(DaemonRuntime.READY_FILE))) {
            assertThat(Files.getPosixFilePermissions(f)).as(f.toString()).isEqualTo(PrivateFiles.FILE);
        }
        assertThat(Files.getPosixFilePermissions(dir.daemonDir("mgmtd"))).isEqualTo(PrivateFiles.DIRECTORY);
    }
}
