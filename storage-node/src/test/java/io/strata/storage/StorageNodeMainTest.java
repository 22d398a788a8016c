package io.strata.storage;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The bare storage node process's ready file: what {@code strata up} reads, private to the daemon's user. */
class StorageNodeMainTest {
    @TempDir
    Path dir;

    @Test
    void theReadyFileAndItsDirectoryArePrivate() throws IOException {
        Path data = dir.resolve("storage-1");
        StorageNodeMain.announceReady(data, "127.0.0.1:9101");
        Path ready = data.resolve("ready.properties");
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(ready)) {
            p.load(r);
        }
        assertThat(p.getProperty("rpc")).isEqualTo("127.0.0.1:9101");
        assertThat(p.getProperty("pid")).isEqualTo(String.valueOf(ProcessHandle.current().pid()));
        assertThat(Files.getPosixFilePermissions(data)).isEqualTo(PrivateFiles.DIRECTORY);
        assertThat(Files.getPosixFilePermissions(ready)).isEqualTo(PrivateFiles.FILE);
    }
}
