package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import org.junit.jupiter.api.Test;

/** What {@code strata: ...} says about an error: a path error names the user's path in ls's words. */
class UserErrorsTest {
    private static StrataException failing(String path, StrataException e) {
        return catchThrowableOfType(StrataException.class, () -> UserErrors.at(path, () -> {
            throw e;
        }));
    }

    @Test
    void aNamespaceErrorNamesThePathTheUserGaveNotTheInode() {
        StrataException cause = new StrataException(Status.NOT_FOUND, "no entry \"nonexistent\" in inode-1");
        StrataException e = failing("/nonexistent", cause);
        assertThat(UserErrors.message(e)).isEqualTo("/nonexistent: no such file or directory");
        assertThat(e.status()).isEqualTo(Status.NOT_FOUND);
        assertThat(e.getCause()).as("kept for --verbose").isSameAs(cause);
    }

    @Test
    void theCommonStatusesReadAsTheyDoInLsCpAndMkdir() {
        assertThat(UserErrors.phrase(Status.NOT_FOUND)).isEqualTo("no such file or directory");
        assertThat(UserErrors.phrase(Status.ALREADY_EXISTS)).isEqualTo("file exists");
        assertThat(UserErrors.phrase(Status.NOT_A_DIRECTORY)).isEqualTo("not a directory");
        assertThat(UserErrors.phrase(Status.IS_A_DIRECTORY)).isEqualTo("is a directory");
        assertThat(UserErrors.phrase(Status.DIRECTORY_NOT_EMPTY)).isEqualTo("directory not empty");
        assertThat(UserErrors.phrase(Status.PERMISSION_DENIED)).isEqualTo("permission denied");
        assertThat(UserErrors.phrase(Status.NOT_PERMITTED)).isEqualTo("operation not permitted");
        assertThat(UserErrors.message(failing("/ckpt/a", new StrataException(Status.PERMISSION_DENIED, "uid 1000 may not write inode-7"))))
                .isEqualTo("/ckpt/a: permission denied");
    }

    @Test
    void anErrorWithoutAFamiliarPhraseKeepsItsOwnWordsAfterThePath() {
        assertThat(UserErrors.phrase(Status.TIMEOUT)).isNull();
        assertThat(UserErrors.message(failing("/ds/x", new StrataException(Status.TIMEOUT, "no answer within 30000 ms"))))
                .isEqualTo("/ds/x: no answer within 30000 ms");
        assertThat(UserErrors.message(failing("/ckpt", new StrataException(Status.INVALID_ARGUMENT, "replicas: must be between 1 and 5, got 9"))))
                .isEqualTo("/ckpt: replicas: must be between 1 and 5, got 9");
    }

    @Test
    void aNestedCallKeepsTheInnerPathTheErrorIsAbout() {
        StrataException e = catchThrowableOfType(StrataException.class, () -> UserErrors.at("/ds", () -> UserErrors.at("/ds/a/b", () -> {
            throw new StrataException(Status.DIRECTORY_NOT_EMPTY, "inode-9 has 2 entries");
        })));
        assertThat(UserErrors.message(e)).isEqualTo("/ds/a/b: directory not empty");
    }

    @Test
    void aCallThatSucceedsReturnsItsValueAndOtherErrorsPassThrough() throws Exception {
        assertThat(UserErrors.at("/x", () -> 42)).isEqualTo(42);
        IllegalArgumentException iae = new IllegalArgumentException("/d: is a directory (use rm -r)");
        assertThat(catchThrowableOfType(IllegalArgumentException.class, () -> UserErrors.at("/d", () -> {
            throw iae;
        }))).isSameAs(iae);
    }

    @Test
    void localFileErrorsNameTheFileToo() {
        assertThat(UserErrors.message(new NoSuchFileException("model.bin"))).isEqualTo("model.bin: no such file or directory");
        assertThat(UserErrors.message(new AccessDeniedException("/root/x"))).isEqualTo("/root/x: permission denied");
        assertThat(UserErrors.message(new FileSystemException("/tmp/d", null, "Is a directory"))).isEqualTo("/tmp/d: is a directory");
        assertThat(UserErrors.message(new java.io.IOException("disk on fire"))).isEqualTo("disk on fire");
    }
}
