package io.strata.storage.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.ChunkId;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A target's files at rest are the daemon user's alone: its directories 0700 and its files
 * (chunk files, the LMDB index, the lock and identity files) 0600, read back from the disk; a
 * target directory left open by an older version is tightened; another local user cannot read
 * a chunk's bytes.
 */
class PrivateTargetFilesTest {
    @TempDir
    Path dir;

    @Test
    void everyDirectoryAndFileOfATargetIsOwnerOnly() throws IOException {
        Path target = dir.resolve("node/target-7");
        try (EngineFixture f = new EngineFixture(target, 1)) {
            f.write(ChunkId.of(1, 0), 64 * 1024, 0, EngineFixture.random(new Random(1), 5000));
            f.reopen();
        }
        List<Path> all;
        try (Stream<Path> s = Files.walk(dir.resolve("node"))) {
            all = s.toList();
        }
        assertThat(all).contains(target.resolve("chunks"), target.resolve("meta/data.mdb"), target.resolve("meta/lock.mdb"),
                target.resolve("target.lock"), target.resolve("target.properties"));
        assertThat(all).filteredOn(p -> p.startsWith(target.resolve("chunks")) && Files.isRegularFile(p)).isNotEmpty();
        assertThat(all).allSatisfy(p -> assertThat(Files.getPosixFilePermissions(p)).as(p.toString())
                .isEqualTo(Files.isDirectory(p) ? PrivateFiles.DIRECTORY : PrivateFiles.FILE));
    }

    @Test
    void directoriesOpenToOthersAreTightenedWhenTheTargetOpens() throws IOException {
        Path target = Files.createDirectory(dir.resolve("target-7"));
        Path chunks = Files.createDirectory(target.resolve("chunks"));
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setPosixFilePermissions(chunks, PosixFilePermissions.fromString("rwxr-xr-x"));
        new EngineFixture(target, 1).close();
        assertThat(Files.getPosixFilePermissions(target)).isEqualTo(PrivateFiles.DIRECTORY);
        assertThat(Files.getPosixFilePermissions(chunks)).isEqualTo(PrivateFiles.DIRECTORY);
    }

    /**
     * Runs {@code cat} as user nobody (the tests run as root) on a chunk file. The temporary
     * directory is opened to everyone first, and a world-readable control file beside the target
     * shows that nobody can reach it: what stops nobody is the target's own modes.
     */
    @Test
    void anotherLocalUserCannotReadAChunkFile() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "switching to user nobody needs root");
        Path setpriv = Stream.of("/usr/bin/setpriv", "/bin/setpriv").map(Path::of).filter(Files::isExecutable).findFirst().orElse(null);
        Assumptions.assumeTrue(setpriv != null, "setpriv (util-linux) is not installed: cannot run a command as another user");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path control = Files.writeString(dir.resolve("control"), "readable");
        Files.setPosixFilePermissions(control, PosixFilePermissions.fromString("rw-r--r--"));
        Path target = dir.resolve("target-7");
        try (EngineFixture f = new EngineFixture(target, 1)) {
            f.write(ChunkId.of(1, 0), 64 * 1024, 0, EngineFixture.random(new Random(1), 5000));
        }
        Path chunk;
        try (Stream<Path> s = Files.list(target.resolve("chunks"))) {
            chunk = s.filter(p -> p.toFile().length() > 0).findFirst().orElseThrow();
        }

        Cat readable = catAsNobody(setpriv, control);
        assertThat(readable.exit()).as("control: nobody reads a world-readable file here: %s", readable.output()).isZero();
        assertThat(readable.output()).isEqualTo("readable");
        Cat refused = catAsNobody(setpriv, chunk);
        assertThat(refused.exit()).as("nobody reading %s: %s", chunk, refused.output()).isNotZero();
        assertThat(refused.output()).contains("Permission denied");
    }

    private record Cat(int exit, String output) {
    }

    /** {@code cat file} as user nobody: its exit status and output (the file's text, or its error). */
    private static Cat catAsNobody(Path setpriv, Path file) throws Exception {
        Process p = new ProcessBuilder(setpriv.toString(), "--reuid=65534", "--regid=65534", "--clear-groups", "cat", file.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return new Cat(p.exitValue(), out);
    }
}
