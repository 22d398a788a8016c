package io.strata.store;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A store's directory, held open: created when new (private to the process's user,
 * {@link PrivateFiles#createDirectories}), checked against an optional
 * {@link Identity} record, and locked with an exclusive lock on a lock file for as long as the
 * store is open, so that no second opener (another process, or another store in this one) can
 * use it at the same time. The lock is an OS file lock ({@link FileChannel#tryLock}, a POSIX
 * record lock on Linux): the kernel releases it when the process dies, so a crashed store needs
 * no cleanup; the lock file itself stays. Nothing else in the process may open the lock file (a
 * POSIX lock goes with the first close of any descriptor of the file).
 */
public final class StoreDir implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StoreDir.class);

    /**
     * Who a directory belongs to: {@code file} (a properties file in the directory) holds
     * {@code key = value}. A directory without the file is claimed (the file is written
     * crash-safely, directory fsync included); one whose file names another value is refused.
     */
    public record Identity(String file, String key, String value, String comment) {
    }

    private final Path dir;
    private final FileChannel lockFile;
    private final FileLock lock;

    private StoreDir(Path dir, FileChannel lockFile, FileLock lock) {
        this.dir = dir;
        this.lockFile = lockFile;
        this.lock = lock;
    }

    /**
     * Opens {@code dir} (creating it when new): checks {@code identity} (null: none), then takes
     * the lock on {@code lockName}. The identity is checked first so that a directory of another
     * owner is reported as such even while it is in use.
     *
     * @throws StrataException {@code INVALID_ARGUMENT} when the directory belongs to another
     *                         owner, or when it is locked (with {@code inUse} as the message)
     * @throws IOException     when the directory, identity or lock file cannot be used
     */
    public static StoreDir open(Path dir, String lockName, String inUse, Identity identity) throws IOException {
        PrivateFiles.createDirectories(dir);
        if (identity != null) {
            checkIdentity(dir, identity);
        }
        FileChannel ch = PrivateFiles.open(dir.resolve(lockName), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock l;
        try {
            l = ch.tryLock();
        } catch (OverlappingFileLockException e) {
            l = null; // held by this process
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
        if (l == null) {
            ch.close();
            throw new StrataException(Status.INVALID_ARGUMENT, inUse);
        }
        return new StoreDir(dir, ch, l);
    }

    private static void checkIdentity(Path dir, Identity id) throws IOException {
        Path file = dir.resolve(id.file());
        Properties p = new Properties();
        if (Files.exists(file)) {
            try (var r = Files.newBufferedReader(file)) {
                p.load(r);
            }
            String have = p.getProperty(id.key());
            if (!id.value().equals(have)) {
                throw new StrataException(Status.INVALID_ARGUMENT, dir + " holds " + id.key() + " " + have + ", not " + id.value());
            }
            return;
        }
        p.setProperty(id.key(), id.value());
        StringWriter w = new StringWriter();
        p.store(w, id.comment());
        AtomicFiles.plain().write(file, w.toString(), true);
    }

    public Path path() {
        return dir;
    }

    /**
     * Deletes everything under {@code dir} (not {@code dir} itself; nothing when it does not
     * exist): how a cache is emptied when what it holds can no longer be trusted or read.
     */
    public static void deleteContents(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        List<Path> all;
        try (Stream<Path> s = Files.walk(dir)) {
            all = s.sorted(Comparator.reverseOrder()).toList();
        }
        for (Path p : all) {
            if (!p.equals(dir)) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Releases the lock (the directory and its lock file stay). */
    @Override
    public void close() {
        try {
            lock.release();
        } catch (IOException | RuntimeException e) {
            LOG.debug("releasing the lock of {}: {}", dir, e.toString());
        }
        try {
            lockFile.close();
        } catch (IOException e) {
            LOG.debug("closing the lock file of {}: {}", dir, e.toString());
        }
    }
}
