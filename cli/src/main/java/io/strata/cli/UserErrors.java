package io.strata.cli;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.Locale;

/**
 * Errors in the user's words: the text after {@code strata: } on stderr. An error about a path
 * names the path as the user typed it, followed by what went wrong in the words of ls, cp or
 * mkdir ({@code /data/x: no such file or directory}), whether the path is in Strata (the
 * commands run their calls through {@link #at}) or on the local disk (the JDK's file-system
 * exceptions carry the path). The namespace's own wording ({@code no entry "x" in inode-1})
 * stays in the cause, printed with {@code --verbose}.
 */
final class UserErrors {
    private UserErrors() {
    }

    /** A call on one Strata path; {@code X} is what it may throw besides Strata errors. */
    @FunctionalInterface
    interface PathCall<T, X extends Exception> {
        T call() throws X;
    }

    /**
     * Runs {@code call}, a Strata operation on {@code path} (as the user wrote it); a Strata error
     * it raises comes out as "PATH: what went wrong", its status kept. An error already naming a
     * path (from a nested call on a path below it) passes through unchanged.
     */
    static <T, X extends Exception> T at(String path, PathCall<T, X> call) throws X {
        try {
            return call.call();
        } catch (PathError e) {
            throw e;
        } catch (StrataException e) {
            throw new PathError(path, e);
        }
    }

    /** The short, familiar phrase for a status about a path (strerror's, lower case), or null when there is none. */
    static String phrase(Status s) {
        return switch (s) {
            case NOT_FOUND -> "no such file or directory";
            case ALREADY_EXISTS -> "file exists";
            case NOT_A_DIRECTORY -> "not a directory";
            case IS_A_DIRECTORY -> "is a directory";
            case DIRECTORY_NOT_EMPTY -> "directory not empty";
            case PERMISSION_DENIED -> "permission denied";
            case NOT_PERMITTED -> "operation not permitted";
            case NAME_TOO_LONG -> "file name too long";
            case SYMLINK_LOOP -> "too many levels of symbolic links";
            case TOO_MANY_LINKS -> "too many links";
            case CROSS_DEVICE -> "invalid cross-device link";
            case FILE_TOO_LARGE -> "file too large";
            case NO_SPACE -> "no space left on device";
            case STALE_HANDLE -> "stale file handle";
            case NO_SUCH_ATTRIBUTE -> "no such attribute";
            case READ_ONLY -> "read-only (an immutable file that was already written)";
            default -> null;
        };
    }

    /** The one line {@code strata} prints (after "strata: ") for an error a command failed with. */
    static String message(Throwable t) {
        if (t instanceof StrataException se) {
            return se.getMessage();
        }
        if (t instanceof FileSystemException fse) {
            return local(fse);
        }
        if (t instanceof IllegalArgumentException || t instanceof IllegalStateException || t instanceof IOException) {
            return t.getMessage() == null ? t.toString() : t.getMessage();
        }
        return t.toString();
    }

    /** A local file's error: the JDK names the file, and for the common errnos only by the exception's type. */
    private static String local(FileSystemException e) {
        Status s = switch (e) {
            case NoSuchFileException x -> Status.NOT_FOUND;
            case FileAlreadyExistsException x -> Status.ALREADY_EXISTS;
            case DirectoryNotEmptyException x -> Status.DIRECTORY_NOT_EMPTY;
            case NotDirectoryException x -> Status.NOT_A_DIRECTORY;
            case AccessDeniedException x -> Status.PERMISSION_DENIED;
            default -> null;
        };
        String what = e.getReason() != null ? lowerFirst(e.getReason()) : s != null ? phrase(s) : "failed";
        return (e.getFile() == null ? "" : e.getFile() + (e.getOtherFile() == null ? "" : " -> " + e.getOtherFile()) + ": ") + what;
    }

    private static String lowerFirst(String s) {
        return s.isEmpty() ? s : s.substring(0, 1).toLowerCase(Locale.ROOT) + s.substring(1);
    }

    /** A Strata error about a path the user gave: "PATH: phrase" (or the error's own message when no phrase fits). */
    static final class PathError extends StrataException {
        private static final long serialVersionUID = 1L;

        PathError(String path, StrataException cause) {
            super(cause.status(), path + ": " + (phrase(cause.status()) != null ? phrase(cause.status()) : cause.getMessage()), cause);
        }
    }
}
