package io.strata.l1;

import static io.strata.l1.Fixture.bytes;
import static io.strata.l1.Fixture.chunk;
import static io.strata.l1.Fixture.io;
import static io.strata.l1.Fixture.read;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.DataSize;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.util.Futures;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The NVMe cache's files at rest are the process user's alone: its directories (the cache, its
 * index, the block directory and every shard) 0700 and its files (blocks, the LMDB index, the
 * lock file) 0600, read back from the disk; a cache directory left open by an older version is
 * tightened when the cache opens.
 */
class PrivateCacheFilesTest extends FileTierFixture {
    static final int CHUNK = 64 * 1024;
    static final int BLOCK = 16 * 1024;

    PrivateCacheFilesTest() {
        super("private", 3);
    }

    private L1Tier l1(Path nvme) {
        return new L1Tier(ctx, Fixture.config("p", DataSize.ofKiB(17), DataSize.ofBytes(BLOCK), nvme, DataSize.ofMiB(4)), below);
    }

    @Test
    void everyDirectoryAndFileOfTheCacheIsOwnerOnly() throws IOException {
        ChunkAddress c = chunk(3, 0, CHUNK);
        byte[] data = bytes(3, CHUNK);
        Fixture.write(below, c, 0, data, io(1));
        Path nvme = dir.resolve("nvme");
        try (L1Tier l1 = l1(nvme)) {
            assertThat(read(l1, c, 0, CHUNK, io(1))).isEqualTo(data);
            Futures.join(l1.nvme().barrier());
            assertThat(l1.nvme().blockCount()).isEqualTo(CHUNK / BLOCK);
        }
        List<Path> all;
        try (Stream<Path> s = Files.walk(nvme)) {
            all = s.toList();
        }
        assertThat(all).contains(nvme.resolve("l1.lock"), nvme.resolve("index/data.mdb"), nvme.resolve("index/lock.mdb"));
        assertThat(all).filteredOn(p -> p.getFileName().toString().endsWith(".blk")).hasSize(CHUNK / BLOCK);
        assertThat(all).allSatisfy(p -> assertThat(Files.getPosixFilePermissions(p)).as(p.toString())
                .isEqualTo(Files.isDirectory(p) ? PrivateFiles.DIRECTORY : PrivateFiles.FILE));
    }

    @Test
    void aCacheDirectoryOpenToOthersIsTightened() throws IOException {
        Path nvme = Files.createDirectory(dir.resolve("nvme"));
        Path shard = Files.createDirectories(nvme.resolve("blocks/00"));
        Files.setPosixFilePermissions(nvme, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setPosixFilePermissions(shard, PosixFilePermissions.fromString("rwxr-xr-x"));
        l1(nvme).close();
        assertThat(Files.getPosixFilePermissions(nvme)).isEqualTo(PrivateFiles.DIRECTORY);
        assertThat(Files.getPosixFilePermissions(shard)).isEqualTo(PrivateFiles.DIRECTORY);
    }
}
