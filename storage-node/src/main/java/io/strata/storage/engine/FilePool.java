package io.strata.storage.engine;

import io.strata.store.ChannelIo;
import io.strata.store.OrphanSweep;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data files of one target: {@code chunks/<16 hex digits>}, one file per chunk version.
 * Files are created ahead of need in batches, and their directory entries made durable with one
 * directory fsync per batch, so that a write only has to fdatasync its own file. A free file is
 * empty; a file in use belongs to exactly one version and is never written again once that
 * version exists; a file no longer referenced is deleted (never reused: a reader that opened it
 * keeps reading the old bytes). The directory is 0700 and the files 0600 ({@link PrivateFiles}):
 * chunk bytes are the daemon user's alone.
 */
final class FilePool {
    private static final Logger LOG = LoggerFactory.getLogger(FilePool.class);

    private final Path dir;
    private final Executor executor;
    private final int low;
    private final int high;
    private final ArrayDeque<Long> free = new ArrayDeque<>();
    private final AtomicLong nextId;
    private final AtomicBoolean refilling = new AtomicBoolean();

    /**
     * Opens {@code dir}, keeping files in {@code referenced}; every other file (a version that
     * never committed, a free file) is emptied and becomes free.
     */
    FilePool(Path dir, Set<Long> referenced, Executor executor, int low, int high) throws IOException {
        this.dir = dir;
        this.executor = executor;
        this.low = low;
        this.high = high;
        PrivateFiles.createDirectories(dir);
        // files of other names are not ours: left alone
        OrphanSweep.Scan<Long> scan = OrphanSweep.scan(dir, FilePool::parseId, referenced::contains);
        long max = 0;
        for (OrphanSweep.Named<Long> f : scan.indexed()) {
            max = Math.max(max, f.key());
        }
        List<Long> orphans = new ArrayList<>();
        for (OrphanSweep.Named<Long> f : scan.orphans()) {
            max = Math.max(max, f.key());
            orphans.add(f.key());
        }
        for (long id : orphans) {
            if (free.size() < high) {
                try (FileChannel ch = FileChannel.open(path(id), StandardOpenOption.WRITE)) {
                    ch.truncate(0);
                }
                free.add(id);
            } else {
                Files.deleteIfExists(path(id));
            }
        }
        if (!orphans.isEmpty()) {
            LOG.info("{}: {} unreferenced data files reclaimed", dir, orphans.size());
        }
        nextId = new AtomicLong(max + 1);
        syncDir();
    }

    /** The id a data file's name stands for (hex), or null for a name that is not a data file's. */
    private static Long parseId(String name) {
        try {
            return Long.parseUnsignedLong(name, 16);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    Path path(long id) {
        return dir.resolve(String.format("%016x", id));
    }

    int freeCount() {
        synchronized (free) {
            return free.size();
        }
    }

    /** An empty file whose directory entry is durable; creates one at once when none is ready. */
    long take() throws IOException {
        Long id;
        synchronized (free) {
            id = free.poll();
        }
        if (free.size() < low) {
            refillAsync();
        }
        if (id != null) {
            return id;
        }
        return create(1).get(0);
    }

    /** A file taken but left unused (a failed write): emptied and made free again, or deleted. */
    void discard(long id) {
        try {
            try (FileChannel ch = FileChannel.open(path(id), StandardOpenOption.WRITE)) {
                ch.truncate(0);
            }
            synchronized (free) {
                free.add(id);
            }
        } catch (IOException e) {
            delete(id);
        }
    }

    /** Deletes a file no version references any more (only once that fact is durable). */
    void delete(long id) {
        try {
            Files.deleteIfExists(path(id));
        } catch (IOException e) {
            LOG.warn("{}: cannot delete unreferenced data file {}: {}", dir, Long.toHexString(id), e.toString());
        }
    }

    private void refillAsync() {
        if (!refilling.compareAndSet(false, true)) {
            return;
        }
        try {
            executor.execute(() -> {
                try {
                    int n = high - freeCount();
                    if (n > 0) {
                        List<Long> ids = create(n);
                        synchronized (free) {
                            free.addAll(ids);
                        }
                    }
                } catch (IOException e) {
                    LOG.warn("{}: cannot create data files ahead: {}", dir, e.toString());
                } finally {
                    refilling.set(false);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            refilling.set(false);
        }
    }

    private List<Long> create(int n) throws IOException {
        List<Long> ids = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long id = nextId.getAndIncrement();
            try {
                PrivateFiles.createFile(path(id));
            } catch (FileAlreadyExistsException e) {
                continue;
            }
            ids.add(id);
        }
        syncDir();
        return ids;
    }

    private void syncDir() throws IOException {
        ChannelIo.syncDirectory(dir);
    }
}
