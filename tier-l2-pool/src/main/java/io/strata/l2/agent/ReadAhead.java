package io.strata.l2.agent;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.strata.l2.agent.CopyStore.Key;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Readahead across a file's chunk copies. Each copy is a file of its own, so the kernel's
 * readahead stops at the end of a chunk, and a reader whose copies' pages are not cached waits
 * for the disk at every chunk. When reads of a file's chunks come in order (a restore, a job
 * reading its dataset), this asks the kernel to start reading the copies of the next chunks
 * ({@code posix_fadvise(POSIX_FADV_WILLNEED)}, which only queues the reads), so that their
 * pages are cached, or on their way, when their reads come.
 *
 * <p>Only page cache hints: nothing here reads or changes a copy, so a copy replaced or removed
 * meanwhile costs at most a useless hint. Which copies: the ones readers come to this agent
 * for, i.e. those whose first holder it is (readers ask a chunk's holders in order), or all of
 * a file's present copies once a reader reads one of which it is not the first holder (its
 * first holder is down). Where {@code posix_fadvise} cannot be called (not Linux, no libc),
 * nothing is done.
 */
final class ReadAhead {
    private static final Logger LOG = LoggerFactory.getLogger(ReadAhead.class);
    /** How far ahead of the reader, in bytes of chunks. */
    static final long AHEAD_BYTES = 16L << 20;
    /** A read within this many chunks of the last one read of the file continues its run. */
    private static final int NEAR = 32;
    private static final int POSIX_FADV_WILLNEED = 3;
    private static final int O_RDONLY = 0;

    /** The few libc calls used. */
    public interface LibC {
        int open(String path, int flags);

        int posix_fadvise(int fd, long offset, long length, int advice);

        int close(int fd);
    }

    private static final LibC LIBC = load();

    private static LibC load() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return null;
        }
        try {
            return jnr.ffi.LibraryLoader.create(LibC.class).load("c");
        } catch (Throwable t) {
            LOG.info("no readahead across L2 copies: libc cannot be called ({})", t.toString());
            return null;
        }
    }

    /** A file being read: the highest chunk index read, and the highest whose copy was hinted. */
    private static final class Run {
        int last = -1;
        int hinted = -1;
        boolean anyHolder;
    }

    private final CopyStore store;
    private final int self;
    private final Executor executor;
    private final Cache<Long, Run> runs = Caffeine.newBuilder().maximumSize(4096).expireAfterAccess(Duration.ofSeconds(30))
            .executor(Runnable::run).build();
    private final AtomicLong hinted = new AtomicLong();
    private volatile boolean broken;

    ReadAhead(CopyStore store, int self, Executor executor) {
        this.store = store;
        this.self = self;
        this.executor = executor;
    }

    static boolean available() {
        return LIBC != null;
    }

    /** A read of copy {@code c} of chunk {@code k} was served: hints the next copies when the file's reads come in order. */
    void served(Key k, Copy c) {
        if (LIBC == null) {
            return;
        }
        int ahead = (int) Math.max(1, AHEAD_BYTES / Math.max(1, c.chunkSize()));
        Run run = runs.get(k.inode(), i -> new Run());
        int from;
        int to;
        boolean any;
        synchronized (run) {
            boolean inOrder = run.last >= 0 && k.index() >= run.last - NEAR && k.index() <= run.last + NEAR;
            run.last = inOrder ? Math.max(run.last, k.index()) : k.index();
            if (!inOrder) {
                run.hinted = k.index();
            }
            if (!c.holders().isEmpty() && c.holders().get(0) != self) {
                run.anyHolder = true; // readers come here for chunks another agent is first holder of
            }
            if (!inOrder) {
                return;
            }
            from = Math.max(k.index(), run.hinted) + 1;
            to = k.index() + ahead;
            if (from > to) {
                return;
            }
            run.hinted = to;
            any = run.anyHolder;
        }
        try {
            executor.execute(() -> hint(k.inode(), from, to, any));
        } catch (RejectedExecutionException closing) {
            // the agent is stopping
        }
    }

    private void hint(long inode, int from, int to, boolean anyHolder) {
        if (broken) {
            return;
        }
        try {
            hintCopies(inode, from, to, anyHolder);
        } catch (RuntimeException | LinkageError e) {
            broken = true; // libc loaded but cannot be called after all: stop trying
            LOG.warn("no readahead across L2 copies from now on: {}", e.toString());
        }
    }

    private void hintCopies(long inode, int from, int to, boolean anyHolder) {
        for (int i = from; i <= to; i++) {
            Key k = new Key(inode, i);
            Copy c = store.all().get(k);
            if (c == null || !c.present() || c.length() == 0) {
                continue;
            }
            if (!anyHolder && !c.holders().isEmpty() && c.holders().get(0) != self) {
                continue; // its readers go to another agent
            }
            willNeed(store.file(k), c.length());
            hinted.incrementAndGet();
        }
    }

    /** Copies hinted so far. */
    long hinted() {
        return hinted.get();
    }

    /** Asks the kernel to read the first {@code length} bytes of {@code file} into the page cache, without waiting for them. */
    static void willNeed(Path file, long length) {
        int fd = LIBC.open(file.toString(), O_RDONLY);
        if (fd < 0) {
            return; // gone meanwhile
        }
        try {
            LIBC.posix_fadvise(fd, 0, length, POSIX_FADV_WILLNEED);
        } finally {
            LIBC.close(fd);
        }
    }
}
