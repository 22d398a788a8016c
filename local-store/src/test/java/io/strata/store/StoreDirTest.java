package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store directory's lock refuses a second opener while held; its identity refuses another owner. */
class StoreDirTest {
    static final StoreDir.Identity SEVEN = new StoreDir.Identity("target.properties", "target", "7", "test target");

    @TempDir
    Path dir;

    @Test
    void aSecondOpenerIsRefusedUntilTheFirstCloses() throws IOException {
        Path d = dir.resolve("store");
        try (StoreDir first = StoreDir.open(d, "store.lock", "in use by another store", null)) {
            assertThat(first.path()).isEqualTo(d);
            assertThat(d.resolve("store.lock")).exists();
            assertThatThrownBy(() -> StoreDir.open(d, "store.lock", "in use by another store", null))
                    .isInstanceOfSatisfying(StrataException.class, e -> assertThat(e.status()).isEqualTo(Status.INVALID_ARGUMENT))
                    .hasMessage("in use by another store");
            // another lock file in the same directory is another lock
            StoreDir.open(d, "other.lock", "in use", null).close();
        }
        StoreDir.open(d, "store.lock", "in use by another store", null).close();
    }

    @Test
    void theIdentityIsClaimedOnceAndRefusesAnotherOwner() throws IOException {
        Path d = dir.resolve("t");
        StoreDir.open(d, "target.lock", "in use", SEVEN).close();
        Properties p = new Properties();
        try (var r = Files.newBufferedReader(d.resolve("target.properties"))) {
            p.load(r);
        }
        assertThat(p.getProperty("target")).isEqualTo("7");
        assertThat(AtomicFiles.temporary(d.resolve("target.properties"))).doesNotExist();
        StoreDir.open(d, "target.lock", "in use", SEVEN).close();
        StoreDir.Identity eight = new StoreDir.Identity("target.properties", "target", "8", "test target");
        assertThatThrownBy(() -> StoreDir.open(d, "target.lock", "in use", eight))
                .isInstanceOfSatisfying(StrataException.class, e -> assertThat(e.status()).isEqualTo(Status.INVALID_ARGUMENT))
                .hasMessage(d + " holds target 7, not 8");
        // checked before the lock: another owner is named as such even while the directory is in use
        try (StoreDir held = StoreDir.open(d, "target.lock", "in use", SEVEN)) {
            assertThatThrownBy(() -> StoreDir.open(d, "target.lock", "in use", eight)).hasMessageContaining("holds target 7");
            assertThatThrownBy(() -> StoreDir.open(d, "target.lock", "in use", SEVEN)).hasMessage("in use");
        }
    }

    @Test
    void deleteContentsEmptiesADirectoryTree() throws IOException {
        Path d = dir.resolve("cache");
        Files.createDirectories(d.resolve("a/b"));
        Files.writeString(d.resolve("a/b/f"), "x");
        Files.writeString(d.resolve("g"), "y");
        StoreDir.deleteContents(d);
        assertThat(d).isEmptyDirectory();
        StoreDir.deleteContents(dir.resolve("missing")); // nothing to do
    }
}
