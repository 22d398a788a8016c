package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The orphan sweep sorts a store directory's files against its index: files it names are kept,
 * files of its naming scheme it does not name (orphans), temporary files of interrupted writes
 * and foreign files are reported, and a sweep deletes them (subdirectories are left alone).
 */
class OrphanSweepTest {
    @TempDir
    Path dir;

    static Long parse(String name) {
        return name.matches("[0-9a-f]{4}\\.blk") ? Long.parseLong(name.substring(0, 4), 16) : null;
    }

    void touch(String name) throws IOException {
        Files.writeString(dir.resolve(name), name);
    }

    @Test
    void filesTheIndexDoesNotNameAreFoundAndSwept() throws IOException {
        touch("0001.blk");
        touch("0002.blk");
        touch("0003.blk");
        touch("0004.blk.tmp");
        touch("0009.blk.tmp");
        touch("notes.txt");
        Files.createDirectories(dir.resolve("sub"));
        Set<Long> index = Set.of(1L, 3L, 7L); // 7: indexed, its file vanished (the read finds that out)
        OrphanSweep.Scan<Long> s = OrphanSweep.scan(dir, OrphanSweepTest::parse, index::contains);
        assertThat(s.indexed()).extracting(OrphanSweep.Named::key).containsExactlyInAnyOrder(1L, 3L);
        assertThat(s.orphans()).extracting(OrphanSweep.Named::key).containsExactly(2L);
        assertThat(s.orphans()).extracting(OrphanSweep.Named::path).containsExactly(dir.resolve("0002.blk"));
        assertThat(s.temporary()).containsExactlyInAnyOrder(dir.resolve("0004.blk.tmp"), dir.resolve("0009.blk.tmp"));
        assertThat(s.foreign()).containsExactly(dir.resolve("notes.txt"));
        assertThat(s.unaccounted()).isEqualTo(4);

        assertThat(OrphanSweep.sweep(dir, OrphanSweepTest::parse, index::contains)).isEqualTo(4);
        try (var files = Files.list(dir)) {
            assertThat(files.toList()).containsExactlyInAnyOrder(dir.resolve("0001.blk"), dir.resolve("0003.blk"), dir.resolve("sub"));
        }
        assertThat(OrphanSweep.sweep(dir, OrphanSweepTest::parse, index::contains)).isZero();
    }

    @Test
    void aMissingDirectoryHoldsNothing() throws IOException {
        OrphanSweep.Scan<Long> s = OrphanSweep.scan(dir.resolve("none"), OrphanSweepTest::parse, k -> true);
        assertThat(s.unaccounted()).isZero();
        assertThat(s.indexed()).isEmpty();
    }
}
