package io.strata.fuse;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Struct;
import jnr.ffi.byref.IntByReference;
import jnr.ffi.byref.PointerByReference;
import jnr.ffi.types.size_t;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import ru.serce.jnrfuse.struct.FuseOperations;

/**
 * libfuse2's request loop, run on Java threads.
 *
 * <p>Why not libfuse's own loop ({@code fuse_main}, as jnr-fuse runs it): its worker threads are
 * native threads, and the jnr-fuse callbacks (jffi closures) attach a native thread to the JVM
 * for one call and detach it afterwards. Every FUSE request then made and dropped a
 * {@code java.lang.Thread}, with the JVM's thread bookkeeping and stack guard pages each time
 * (6,152–8,426 thread starts per 1 GiB checkpoint restore, {@code bench/probe/restore-cpu.sh}).
 * A thread that is already a Java thread is neither attached nor detached.
 *
 * <p>So this does what {@code fuse_main} and libfuse 2.9's multi-threaded loop do, in the same
 * order, with Java workers: {@code fuse_setup} parses the options and mounts, each worker
 * receives a request from the channel and processes it ({@code fuse_chan_recv},
 * {@code fuse_session_process}), a worker is added when none is idle (at most {@link #MAX_WORKERS};
 * libfuse adds them the same way), and {@code fuse_teardown} ends the mount. Workers end when the
 * file system is unmounted (the channel answers ENODEV). Workers are never stopped for being idle:
 * one waiting for a request costs its stack and a request buffer.
 */
final class Fuse2Loop {
    private static final Logger LOG = LoggerFactory.getLogger(Fuse2Loop.class);
    /** Most worker threads; requests beyond wait in the kernel's queue. */
    private static final int MAX_WORKERS = 64;
    private static final int EINTR = 4;

    /** The libfuse 2.9 calls the loop needs (jnr-fuse binds only {@code fuse_main_real}). */
    public interface Lib {
        Pointer fuse_setup(int argc, String[] argv, FuseOperations op, @size_t long opSize, PointerByReference mountpoint,
                           IntByReference multithreaded, Pointer userData);

        void fuse_teardown(Pointer fuse, Pointer mountpoint);

        Pointer fuse_get_session(Pointer fuse);

        Pointer fuse_session_next_chan(Pointer session, Pointer chan);

        @size_t long fuse_chan_bufsize(Pointer chan);

        int fuse_chan_recv(PointerByReference chan, Pointer buf, @size_t long size);

        void fuse_session_process(Pointer session, Pointer buf, @size_t long len, Pointer chan);

        int fuse_session_exited(Pointer session);

        void fuse_session_exit(Pointer session);
    }

    private final Lib lib;
    private final Path dir;
    private final Pointer session;
    private final Pointer chan;
    private final int bufsize;
    private final AtomicInteger idle = new AtomicInteger();
    private final List<Thread> workers = new ArrayList<>();

    private Fuse2Loop(Lib lib, Path dir, Pointer fuse) {
        this.lib = lib;
        this.dir = dir;
        this.session = lib.fuse_get_session(fuse);
        this.chan = lib.fuse_session_next_chan(session, null);
        this.bufsize = (int) lib.fuse_chan_bufsize(chan);
    }

    /**
     * Mounts {@code ops} at {@code dir} with the libfuse command line {@code argv} (program name,
     * {@code -f}, the mount point and the options, as {@code fuse_main} takes them) and serves
     * requests until the file system is unmounted.
     */
    static void run(FuseOperations ops, Path dir, List<String> argv) {
        Lib lib = load();
        PointerByReference mountpoint = new PointerByReference();
        Pointer fuse = lib.fuse_setup(argv.size(), argv.toArray(String[]::new), ops, Struct.size(ops), mountpoint,
                new IntByReference(), null);
        if (fuse == null) {
            throw new StrataException(Status.INTERNAL, "libfuse could not mount " + dir + " (fuse_setup failed; its reason is on stderr)");
        }
        try {
            new Fuse2Loop(lib, dir, fuse).serve();
        } finally {
            lib.fuse_teardown(fuse, mountpoint.getValue());
        }
    }

    private static Lib load() {
        try {
            return LibraryLoader.create(Lib.class).failImmediately().load("fuse");
        } catch (LinkageError | RuntimeException e) {
            return LibraryLoader.create(Lib.class).failImmediately().load("libfuse.so.2");
        }
    }

    /**
     * Starts the first worker and waits for all of them to end, even when interrupted: the
     * teardown after it frees what the workers use.
     */
    private void serve() {
        addWorker();
        boolean unmounting = false;
        boolean interrupted = false;
        for (int joined = 0; ; ) {
            Thread w;
            synchronized (workers) {
                if (joined == workers.size()) {
                    break;
                }
                w = workers.get(joined);
            }
            try {
                w.join(200);
            } catch (InterruptedException e) {
                interrupted = true;
            }
            if (!w.isAlive()) {
                joined++;
            } else if (!unmounting && lib.fuse_session_exited(session) != 0) {
                // a worker met a channel error and ended the session: the others wait in the
                // kernel until the file system goes, so unmount it
                unmounting = true;
                try {
                    FuseMount.unmount(dir, true);
                } catch (StrataException e) {
                    LOG.warn("libfuse session of {} ended but the unmount failed: {}", dir, e.getMessage());
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void addWorker() {
        synchronized (workers) {
            if (workers.size() >= MAX_WORKERS) {
                return;
            }
            Thread t = new Thread(this::work, "fuse-" + dir.getFileName() + "-" + (workers.size() + 1));
            t.setDaemon(true);
            idle.incrementAndGet();
            workers.add(t);
            t.start();
        }
    }

    /** libfuse 2.9's worker: receive, process, until the session ends or the channel fails. */
    private void work() {
        Pointer buf = Memory.allocateDirect(jnr.ffi.Runtime.getSystemRuntime(), bufsize);
        while (lib.fuse_session_exited(session) == 0) {
            PointerByReference ch = new PointerByReference(chan);
            int n = lib.fuse_chan_recv(ch, buf, bufsize);
            if (n == -EINTR) {
                continue;
            }
            if (n <= 0) {
                if (n < 0) { // 0 is the end: unmounted (ENODEV) or the session exited
                    LOG.error("reading FUSE requests of {} failed (errno {}): ending the mount", dir, -n);
                    lib.fuse_session_exit(session);
                }
                return;
            }
            if (idle.decrementAndGet() == 0) {
                addWorker();
            }
            try {
                lib.fuse_session_process(session, buf, n, ch.getValue());
            } finally {
                idle.incrementAndGet();
            }
        }
    }
}
