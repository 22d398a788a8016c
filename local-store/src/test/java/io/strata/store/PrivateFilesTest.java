package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Data directories are created 0700 and data files 0600 whatever the umask lets through; an
 * existing directory open to others is tightened when ours and refused when others may write it
 * and it is not ours to tighten. The JVM's umask cannot be changed, so every mode is read back
 * from the disk rather than trusted.
 */
class PrivateFilesTest {
    @TempDir
    Path dir;

    @Test
    void createdDirectoriesAndTheirMissingParentsAreOwnerOnly() throws IOException {
        Path d = dir.resolve("a/b/c");
        assertThat(PrivateFiles.createDirectories(d)).isEqualTo(d);
        for (Path p : new Path[] {dir.resolve("a"), dir.resolve("a/b"), d}) {
            assertThat(Files.getPosixFilePermissions(p)).as(p.toString()).isEqualTo(PrivateFiles.DIRECTORY);
        }
    }

    @Test
    void createdFilesAreOwnerOnly() throws IOException {
        Path f = PrivateFiles.createFile(dir.resolve("created"));
        assertThat(Files.getPosixFilePermissions(f)).isEqualTo(PrivateFiles.FILE);
        try (FileChannel ch = PrivateFiles.open(dir.resolve("opened"), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            assertThat(ch.size()).isZero();
        }
        assertThat(Files.getPosixFilePermissions(dir.resolve("opened"))).isEqualTo(PrivateFiles.FILE);
        AtomicFiles.plain().write(dir.resolve("atomic"), Unpooled.wrappedBuffer(new byte[] {1, 2, 3}), true);
        AtomicFiles.plain().write(dir.resolve("text"), "pid=1\n", false);
        assertThat(Files.getPosixFilePermissions(dir.resolve("atomic"))).isEqualTo(PrivateFiles.FILE);
        assertThat(Files.getPosixFilePermissions(dir.resolve("text"))).isEqualTo(PrivateFiles.FILE);
        assertThat(dir.resolve("text")).hasContent("pid=1\n");
    }

    @Test
    void anExistingDirectoryOfOursOpenToOthersIsTightened() throws IOException {
        Path d = Files.createDirectory(dir.resolve("wide"));
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxrwxrwx"));
        PrivateFiles.createDirectories(d);
        assertThat(Files.getPosixFilePermissions(d)).isEqualTo(PrivateFiles.DIRECTORY);
    }

    @Test
    void aSharedStickyDirectoryIsRefusedNotTightened() throws IOException {
        Path d = Files.createDirectory(dir.resolve("tmp-like"));
        Files.setAttribute(d, "unix:mode", 01777);
        assertThatThrownBy(() -> PrivateFiles.createDirectories(d))
                .isInstanceOf(FileSystemException.class)
                .hasMessageContaining(d.toString())
                .hasMessageContaining("writable by other users (mode rwxrwxrwx)")
                .hasMessageContaining("chmod 700 " + d);
        assertThat((int) Files.getAttribute(d, "unix:mode") & 07777).isEqualTo(01777);
    }

    @Test
    void aDirectoryOfAnotherUserIsRefusedWhenOthersMayWriteItAndLeftAloneOtherwise() throws IOException {
        UserPrincipal nobody = nobody();
        Path writable = Files.createDirectory(dir.resolve("theirs-writable"));
        Files.setPosixFilePermissions(writable, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setOwner(writable, nobody);
        assertThatThrownBy(() -> PrivateFiles.createDirectories(writable))
                .isInstanceOf(FileSystemException.class)
                .hasMessageContaining("chmod 700 " + writable);
        assertThat(Files.getPosixFilePermissions(writable)).isEqualTo(PosixFilePermissions.fromString("rwxrwxrwx"));

        Path readable = Files.createDirectory(dir.resolve("theirs-readable"));
        Files.setPosixFilePermissions(readable, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.setOwner(readable, nobody);
        PrivateFiles.createDirectories(readable); // only names are visible: its files are private; warned, not refused
        assertThat(Files.getPosixFilePermissions(readable)).isEqualTo(PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    @Test
    void storeDirectoriesLockAndIdentityFilesAndIndexesArePrivate() throws IOException {
        Path store = dir.resolve("store");
        try (StoreDir s = StoreDir.open(store, "store.lock", "in use", StoreDirTest.SEVEN);
             IndexEnv env = IndexEnv.open(store.resolve("index"), IndexEnvTest.MAP, IndexEnv.Sync.FULL, 1, 16)) {
            env.db("a");
        }
        try (Stream<Path> all = Files.walk(store)) {
            assertThat(all.toList()).hasSize(6).allSatisfy(p -> assertThat(Files.getPosixFilePermissions(p)).as(p.toString())
                    .isEqualTo(Files.isDirectory(p) ? PrivateFiles.DIRECTORY : PrivateFiles.FILE));
        }
    }

    /** Changing a file's owner needs root (the tests run as root; elsewhere these cases are skipped). */
    private UserPrincipal nobody() throws IOException {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "changing a directory's owner needs root");
        return dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
    }
}
