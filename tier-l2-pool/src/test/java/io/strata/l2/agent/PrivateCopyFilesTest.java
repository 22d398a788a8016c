package io.strata.l2.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.strata.core.DataSize;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An L2 agent's store at rest is the agent user's alone: its directories (the store, its index,
 * the chunk directory and its shards) 0700 and its files (chunk copies, the LMDB index, the lock
 * and identity files) 0600, read back from the disk; a store directory left open by an older
 * version is tightened when the store opens.
 */
class PrivateCopyFilesTest {
    @TempDir
    Path dir;

    private static CopyStore open(Path path) throws IOException {
        return CopyStore.open(path, 11, DataSize.ofMiB(64), DataSize.ZERO, () -> 0L);
    }

    @Test
    void everyDirectoryAndFileOfTheStoreIsOwnerOnly() throws IOException {
        Path path = dir.resolve("l2-1");
        CopyStore.Key k = new CopyStore.Key(42, 0);
        try (CopyStore s = open(path)) {
            s.exclusive(k, () -> {
                s.replace(k, Unpooled.wrappedBuffer(new byte[] {1, 2, 3}));
                return null;
            });
        }
        List<Path> all;
        try (Stream<Path> s = Files.walk(path)) {
            all = s.toList();
        }
        assertThat(all).contains(path.resolve("l2.lock"), path.resolve("agent.properties"), path.resolve("index/data.mdb"),
                path.resolve("index/lock.mdb"), path.resolve("chunks"));
        assertThat(all).filteredOn(p -> p.getFileName().toString().equals("42-0")).hasSize(1);
        assertThat(all).allSatisfy(p -> assertThat(Files.getPosixFilePermissions(p)).as(p.toString())
                .isEqualTo(Files.isDirectory(p) ? PrivateFiles.DIRECTORY : PrivateFiles.FILE));
    }

    @Test
    void aStoreDirectoryOpenToOthersIsTightened() throws IOException {
        Path path = Files.createDirectory(dir.resolve("l2-1"));
        Path chunks = Files.createDirectory(path.resolve("chunks"));
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setPosixFilePermissions(chunks, PosixFilePermissions.fromString("rwxr-xr-x"));
        open(path).close();
        assertThat(Files.getPosixFilePermissions(path)).isEqualTo(PrivateFiles.DIRECTORY);
        assertThat(Files.getPosixFilePermissions(chunks)).isEqualTo(PrivateFiles.DIRECTORY);
    }
}
