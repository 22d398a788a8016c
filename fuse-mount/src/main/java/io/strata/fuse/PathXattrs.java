package io.strata.fuse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import jnr.ffi.LastError;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.Out;
import jnr.ffi.types.size_t;
import jnr.ffi.types.ssize_t;

/**
 * Extended attributes by path ({@code getxattr(2)}, {@code setxattr(2)}), for tools such as
 * {@code strata cache}. Java's UserDefinedFileAttributeView opens the file to reach its
 * attributes; on a Strata mount that open and its close are a session of the file (the close
 * publishes, and flushes write-back data the cache absorbed for it), so reading statistics that
 * way would change what it reports. A path call opens nothing. Names are full ({@code user.x}).
 */
public final class PathXattrs {
    /** The libc calls used (x86_64 and aarch64 Linux). */
    public interface LibC {
        @ssize_t long getxattr(String path, String name, @Out byte[] value, @size_t long size);

        int setxattr(String path, String name, @In byte[] value, @size_t long size, int flags);

        String strerror(int errnum);
    }

    private static final int ENOENT = 2;
    private static final int EACCES = 13;
    private static final int ERANGE = 34;

    private static volatile LibC libc;

    private PathXattrs() {
    }

    private static LibC c() {
        LibC l = libc;
        if (l == null) {
            l = LibraryLoader.create(LibC.class).load("c");
            libc = l;
        }
        return l;
    }

    /** The value of attribute {@code name} of {@code path} (links followed). */
    public static byte[] get(Path path, String name) throws IOException {
        LibC l = c();
        String p = path.toString();
        for (int attempt = 0; attempt < 5; attempt++) {
            long n = l.getxattr(p, name, null, 0);
            if (n < 0) {
                throw error(l, path, name);
            }
            byte[] buf = new byte[(int) Math.max(n, 1)];
            long got = l.getxattr(p, name, buf, buf.length);
            if (got >= 0) {
                return Arrays.copyOf(buf, (int) got);
            }
            if (LastError.getLastError(Runtime.getRuntime(l)) != ERANGE) {
                throw error(l, path, name);
            }
            // it grew between the two calls: ask again
        }
        throw new FileSystemException(path.toString(), null, "the value of " + name + " keeps changing size");
    }

    /** Sets attribute {@code name} of {@code path} (links followed) to {@code value}. */
    public static void set(Path path, String name, byte[] value) throws IOException {
        LibC l = c();
        if (l.setxattr(path.toString(), name, value, value.length, 0) != 0) {
            throw error(l, path, name);
        }
    }

    /** Sets it to a UTF-8 string. */
    public static void set(Path path, String name, String value) throws IOException {
        set(path, name, value.getBytes(StandardCharsets.UTF_8));
    }

    private static IOException error(LibC l, Path path, String name) {
        int errno = LastError.getLastError(Runtime.getRuntime(l));
        String why = l.strerror(errno);
        return switch (errno) {
            case ENOENT -> new NoSuchFileException(path.toString(), null, why);
            case EACCES -> new AccessDeniedException(path.toString(), null, why);
            default -> new FileSystemException(path.toString(), null, why + " (" + name + ", errno " + errno + ")");
        };
    }
}
