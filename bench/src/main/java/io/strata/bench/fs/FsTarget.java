package io.strata.bench.fs;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * What {@link FsBench} runs its jobs against: a directory (a FUSE mount, a local disk, tmpfs)
 * through java.nio ({@link DirTarget}), or the Strata Java API (the CLI's adapter over
 * {@code StrataFileSystem}). Paths are relative to the target's root, with {@code /} between
 * names. Implementations are thread-safe: the jobs' threads call them concurrently.
 */
public interface FsTarget extends AutoCloseable {
    /** Short name for tables and JSON keys: {@code fuse}, {@code api}, {@code local}, {@code tmpfs}. */
    String name();

    /** One line saying what this is (for the header). */
    String describe();

    void mkdirs(String path) throws IOException;

    /** Creates or truncates {@code path} and opens it for writing. */
    Handle create(String path) throws IOException;

    /** Opens an existing file for reading. */
    Handle open(String path) throws IOException;

    /** The file's size, from a stat (the small-file stat job). */
    long size(String path) throws IOException;

    /** Removes {@code path} and everything under it; nothing when it does not exist. */
    void deleteTree(String path) throws IOException;

    /** Where the counters behind this target's I/O are read (client meters, a mount's metrics). */
    Counters.Source counters();

    @Override
    default void close() throws IOException {
    }

    /** An open file. Reads and writes are positional; one handle is used by one thread at a time. */
    interface Handle extends AutoCloseable {
        /** Writes all of {@code src} at {@code pos}. */
        void write(long pos, ByteBuffer src) throws IOException;

        /** Reads into {@code dst} at {@code pos} until it is full or the file ends; returns the bytes read. */
        int read(long pos, ByteBuffer dst) throws IOException;

        /** Makes what was written durable (fsync). */
        void fsync() throws IOException;

        @Override
        void close() throws IOException;
    }
}
