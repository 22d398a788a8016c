package io.strata.fuse;

import io.strata.client.FileStatus;
import io.strata.core.Status;
import io.strata.protocol.meta.SetAttr;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;
import org.cryptomator.jfuse.linux.amd64.FuseNewHelper;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.fuse_args;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.fuse_conn_info;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.fuse_file_info;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.fuse_fill_dir_t;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.fuse_h;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.fuse_operations;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.stat;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.statvfs;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.timespec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The libfuse3 binding: libfuse3's high-level (path) API called through the Java FFM API, with
 * the struct layouts and upcall stubs that jfuse (org.cryptomator:jfuse-linux-amd64) generated
 * with jextract. jfuse's own {@code FuseOperations} interface is not used: it has no
 * {@code st_ino}, {@code st_rdev}, {@code direct_io}/{@code keep_cache}, request context,
 * {@code mknod} or {@code link}, all of which {@link FuseOps} needs; this class binds the raw
 * callbacks instead and translates them to {@link FuseOps}.
 *
 * <p>Why libfuse3: FUSE protocol 7.28+ negotiates {@code max_pages}, so with {@code max_write}
 * of 1 MiB the kernel sends reads and writes of up to 1 MiB (libfuse2: 128 KiB). Compiled at
 * Java 22 (the FFM API is final there) from {@code src/main/java22}; {@link FuseMount} loads it
 * by name, so the rest of the module still builds and runs on JDK 21.
 *
 * <p>Every upcall catches everything ({@link #guard}): an exception escaping an upcall would
 * end the JVM.
 */
final class StrataFuse3 implements FuseBinding {
    private static final Logger LOG = LoggerFactory.getLogger(StrataFuse3.class);
    /** {@code struct fuse_file_info}: the bit-field word after {@code flags}; bit 1 direct_io, bit 2 keep_cache. */
    private static final long FI_BITS_OFFSET = 4;
    private static final int FI_DIRECT_IO = 1 << 1;
    private static final int FI_KEEP_CACHE = 1 << 2;
    /** {@code fuse_conn_info.want} bits cleared so the mount behaves as the libfuse2 one (see {@link #init}). */
    private static final int FUSE_CAP_AUTO_INVAL_DATA = 1 << 12;
    private static final int FUSE_CAP_READDIRPLUS = 1 << 13;
    private static final int FUSE_CAP_READDIRPLUS_AUTO = 1 << 14;
    private static final int FUSE_CAP_HANDLE_KILLPRIV = 1 << 20;
    private static final long UTIME_NOW = (1L << 30) - 1;
    private static final long UTIME_OMIT = (1L << 30) - 2;
    private static final int MAX_THREADS = 16;

    private final FuseOps ops;
    private final String library;
    private final int maxRequest;
    private MethodHandle getContext;
    /** What libfuse's worker threads are named ({@link #named}): {@code fuse-<mount dir>-}, as the libfuse2 mount's own threads. */
    private volatile String threadPrefix = "fuse-";
    private final AtomicInteger threadsNamed = new AtomicInteger();

    StrataFuse3(FuseOps ops, String library, int maxRequest) {
        this.ops = ops;
        this.library = library;
        this.maxRequest = maxRequest;
    }

    /**
     * Creates the file system ({@code fuse_new} with {@code args}), mounts it at {@code dir}
     * (as root through mount(2) directly: no fusermount3 needed) and runs libfuse's
     * multi-threaded loop until it is unmounted. Requests run on libfuse's worker threads, which
     * the JVM attaches at their first upcall and keeps attached (libfuse 3.12+ keeps idle workers
     * by default); each is named {@code fuse-<mount dir>-N} at its first request ({@link #named}).
     */
    @Override
    public void run(Path dir, List<String> args, boolean debug) {
        System.load(library);
        threadPrefix = "fuse-" + dir.getFileName() + "-";
        int version = fuse_h.fuse_version();
        if (version < 312) {
            throw new io.strata.core.StrataException(Status.UNSUPPORTED, "libfuse " + version / 100 + "." + version % 100
                    + " at " + library + " is too old: the libfuse3 mount needs 3.12 or newer");
        }
        getContext = Linker.nativeLinker().downcallHandle(SymbolLookup.loaderLookup().find("fuse_get_context").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.ADDRESS));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment table = fuse_operations.allocate(arena);
            bind(table, arena, version);
            List<String> argv = new ArrayList<>();
            argv.add("strata");
            if (debug) {
                argv.add("-d");
            }
            argv.addAll(args);
            MemorySegment fargs = fuse_args.allocate(arena);
            MemorySegment array = arena.allocate(ValueLayout.ADDRESS, argv.size() + 1L);
            for (int i = 0; i < argv.size(); i++) {
                array.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(argv.get(i)));
            }
            array.setAtIndex(ValueLayout.ADDRESS, argv.size(), MemorySegment.NULL);
            fuse_args.argc(fargs, argv.size());
            fuse_args.argv(fargs, array);
            fuse_args.allocated(fargs, 0);
            MemorySegment fuse = FuseNewHelper.getInstance().fuse_new(fargs, table, fuse_operations.sizeof(), MemorySegment.NULL);
            if (fuse.equals(MemorySegment.NULL)) {
                throw new io.strata.core.StrataException(Status.INVALID_ARGUMENT, "fuse_new refused the options " + argv);
            }
            try {
                if (fuse_h.fuse_mount(fuse, arena.allocateFrom(dir.toString())) != 0) {
                    throw new io.strata.core.StrataException(Status.INTERNAL, "fuse_mount failed at " + dir);
                }
                MemorySegment loop = fuse_h.fuse_loop_cfg_create();
                try {
                    fuse_h.fuse_loop_cfg_set_clone_fd(loop, 0);
                    fuse_h.fuse_loop_cfg_set_max_threads(loop, MAX_THREADS);
                    int rc = fuse_h.fuse_loop_mt(fuse, loop);
                    if (rc != 0) {
                        LOG.warn("libfuse3 loop of {} ended with {}", dir, rc);
                    }
                } finally {
                    fuse_h.fuse_loop_cfg_destroy(loop);
                    fuse_h.fuse_unmount(fuse);
                }
            } finally {
                fuse_h.fuse_destroy(fuse);
            }
        }
    }

    private void bind(MemorySegment t, Arena a, int version) {
        fuse_operations.init(t, fuse_operations.init.allocate(this::init, a));
        fuse_operations.getattr(t, fuse_operations.getattr.allocate((path, st, fi) -> guard(() -> isNull(fi)
                ? ops.getattr(who(), str(path), attrs(st)) : ops.fgetattr(who(), str(path), fuse_file_info.fh(fi), attrs(st))), a));
        fuse_operations.access(t, fuse_operations.access.allocate((path, mask) -> guard(() -> ops.access(who(), str(path))), a));
        fuse_operations.chmod(t, fuse_operations.chmod.allocate((path, mode, fi) -> guard(() -> ops.chmod(who(), str(path), mode)), a));
        fuse_operations.chown(t, fuse_operations.chown.allocate((path, uid, gid, fi) -> guard(() -> ops.chown(who(), str(path),
                Integer.toUnsignedLong(uid), Integer.toUnsignedLong(gid))), a));
        fuse_operations.utimens(t, fuse_operations.utimens.allocate((path, tv, fi) -> guard(() -> {
            MemorySegment ts = tv.reinterpret(2 * timespec.sizeof());
            return ops.utimens(who(), str(path), nanos(ts.asSlice(0, timespec.sizeof())), nanos(ts.asSlice(timespec.sizeof())));
        }), a));
        fuse_operations.truncate(t, fuse_operations.truncate.allocate((path, size, fi) -> guard(() -> isNull(fi)
                ? ops.truncate(who(), str(path), size) : ops.ftruncate(who(), str(path), fuse_file_info.fh(fi), size)), a));
        fuse_operations.statfs(t, fuse_operations.statfs.allocate((path, st) -> guard(() -> ops.statfs(
                (bsize, blocks, free, files, freeFiles, nameMax) -> {
                    MemorySegment s = st.reinterpret(statvfs.sizeof());
                    s.fill((byte) 0);
                    statvfs.f_bsize(s, bsize);
                    statvfs.f_frsize(s, bsize);
                    statvfs.f_blocks(s, blocks);
                    statvfs.f_bfree(s, free);
                    statvfs.f_bavail(s, free);
                    statvfs.f_files(s, files);
                    statvfs.f_ffree(s, freeFiles);
                    statvfs.f_favail(s, freeFiles);
                    statvfs.f_namemax(s, nameMax);
                })), a));
        fuse_operations.mkdir(t, fuse_operations.mkdir.allocate((path, mode) -> guard(() -> ops.mkdir(who(), str(path), mode)), a));
        fuse_operations.rmdir(t, fuse_operations.rmdir.allocate(path -> guard(() -> ops.rmdir(who(), str(path))), a));
        fuse_operations.unlink(t, fuse_operations.unlink.allocate(path -> guard(() -> ops.unlink(who(), str(path))), a));
        fuse_operations.rename(t, fuse_operations.rename.allocate((from, to, flags) -> guard(() -> flags != 0
                ? -Status.Errno.EINVAL // RENAME_NOREPLACE/EXCHANGE: callers (mv) fall back to rename(2)
                : ops.rename(who(), str(from), str(to))), a));
        fuse_operations.symlink(t, fuse_operations.symlink.allocate((target, path) -> guard(() -> ops.symlink(who(), str(target), str(path))), a));
        fuse_operations.link(t, fuse_operations.link.allocate((from, to) -> guard(() -> ops.link(who(), str(from), str(to))), a));
        fuse_operations.readlink(t, fuse_operations.readlink.allocate((path, buf, size) -> guard(() -> ops.readlink(who(), str(path),
                bytes(buf, size))), a));
        fuse_operations.mknod(t, fuse_operations.mknod.allocate((path, mode, rdev) -> guard(() -> ops.mknod(who(), str(path),
                Integer.toUnsignedLong(mode), rdev)), a));
        fuse_operations.opendir(t, fuse_operations.opendir.allocate((path, fi) -> guard(() -> ops.opendir(who(), str(path))), a));
        fuse_operations.readdir(t, fuse_operations.readdir.allocate((path, buf, filler, offset, fi, flags) -> guard(() -> {
            try (Arena call = Arena.ofConfined()) {
                MemorySegment st = stat.allocate(call);
                return ops.readdir(who(), str(path), (name, type, ino) -> {
                    st.fill((byte) 0);
                    if (type != null) {
                        stat.st_mode(st, FuseOps.typeBits(type));
                        stat.st_ino(st, ino);
                    }
                    return fuse_fill_dir_t.invoke(filler, buf, call.allocateFrom(name), type == null ? MemorySegment.NULL : st, 0, 0) == 0;
                });
            }
        }), a));
        fuse_operations.open(t, fuse_operations.open.allocate((path, fi) -> guard(() -> ops.open(who(), str(path),
                fuse_file_info.flags(fi), opened(fi))), a));
        fuse_operations.create(t, fuse_operations.create.allocate((path, mode, fi) -> guard(() -> ops.create(who(), str(path),
                Integer.toUnsignedLong(mode), fuse_file_info.flags(fi), opened(fi))), a));
        fuse_operations.read(t, fuse_operations.read.allocate((path, buf, size, offset, fi) -> guard(() -> ops.read(
                fuse_file_info.fh(fi), bytes(buf, size), offset)), a));
        fuse_operations.write(t, fuse_operations.write.allocate((path, buf, size, offset, fi) -> guard(() -> ops.write(
                fuse_file_info.fh(fi), bytes(buf, size), offset)), a));
        fuse_operations.flush(t, fuse_operations.flush.allocate((path, fi) -> guard(() -> ops.flush(fuse_file_info.fh(fi))), a));
        fuse_operations.fsync(t, fuse_operations.fsync.allocate((path, datasync, fi) -> guard(() -> ops.fsync(fuse_file_info.fh(fi))), a));
        fuse_operations.release(t, fuse_operations.release.allocate((path, fi) -> guard(() -> ops.release(fuse_file_info.fh(fi))), a));
        fuse_operations.getxattr(t, fuse_operations.getxattr.allocate((path, name, value, size) -> guard(() -> ops.getxattr(who(),
                str(path), str(name), bytes(value, size))), a));
        fuse_operations.setxattr(t, fuse_operations.setxattr.allocate((path, name, value, size, flags) -> guard(() -> ops.setxattr(who(),
                str(path), str(name), bytes(value, size), flags)), a));
        fuse_operations.listxattr(t, fuse_operations.listxattr.allocate((path, list, size) -> guard(() -> ops.listxattr(who(),
                str(path), bytes(list, size))), a));
        fuse_operations.removexattr(t, fuse_operations.removexattr.allocate((path, name) -> guard(() -> ops.removexattr(who(),
                str(path), str(name))), a));
    }

    /**
     * libfuse's init: 1 MiB reads and writes ({@code max_write} also sets the {@code max_pages}
     * libfuse asks the kernel for), a 1 MiB readahead, {@code use_ino}; READDIRPLUS,
     * HANDLE_KILLPRIV and AUTO_INVAL_DATA off, so the kernel asks as it does of the libfuse2
     * mount (plain readdir, setattr to drop set-user-ID bits on write, and a file's attributes
     * from a read only when it reads past the size it knows: with AUTO_INVAL_DATA and the
     * attribute timeout at 0 every read(2) first asked for the open file's attributes, one
     * GetAttr round trip to the namespace each; the page cache follows the open's
     * {@code keep_cache} on both mounts).
     */
    private MemorySegment init(MemorySegment conn, MemorySegment cfg) {
        // nullpath_ok and hard_remove stay 0, as on the libfuse2 mount: libfuse3's nullpath_ok
        // withholds the path from every read, readdir, fsync... (libfuse2's flag only when a file
        // has none), and with hard_remove an fstat of an unlinked open file fails with ESTALE (the
        // kernel's getattr carries no handle); without it libfuse keeps such a file under a
        // hidden name (.fuse_hidden*) until its release

        try {
            MemorySegment c = conn.reinterpret(fuse_conn_info.sizeof());
            fuse_conn_info.max_write(c, maxRequest);
            fuse_conn_info.max_read(c, maxRequest);
            fuse_conn_info.max_readahead(c, maxRequest);
            fuse_conn_info.want(c, fuse_conn_info.want(c)
                    & ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_AUTO_INVAL_DATA));
            MemorySegment f = cfg.reinterpret(68);
            // the prefix up to readdir_ino is the same in every libfuse 3; negative_timeout=0 was
            // given and the other two timeouts lie in 0..1 day: a check that this is that struct
            double negative = f.get(ValueLayout.JAVA_DOUBLE, 32);
            double entry = f.get(ValueLayout.JAVA_DOUBLE, 24);
            double attr = f.get(ValueLayout.JAVA_DOUBLE, 40);
            if (negative == 0 && entry >= 0 && entry <= 86_400 && attr >= 0 && attr <= 86_400) {
                f.set(ValueLayout.JAVA_INT, 64, 1); // use_ino: st_ino is the Strata inode
            } else {
                LOG.warn("unexpected fuse_config layout: use_ino not set");
            }
            LOG.info("libfuse3 init: protocol 7.{}, max_write {}, max_read {}, max_readahead {}", fuse_conn_info.proto_minor(c),
                    fuse_conn_info.max_write(c), fuse_conn_info.max_read(c), fuse_conn_info.max_readahead(c));
        } catch (Throwable t) {
            LOG.error("libfuse3 init failed", t);
        }
        return MemorySegment.NULL;
    }

    // ---- plumbing ----

    private int guard(IntSupplier body) {
        try {
            named();
            return body.getAsInt();
        } catch (Throwable t) {
            LOG.warn("libfuse3 callback failed", t);
            return -Status.Errno.EIO;
        }
    }

    /**
     * Names the current thread {@code fuse-<mount dir>-N} unless it is already: the JVM names a
     * native thread it attaches for an upcall {@code Thread-N}, so without this a thread dump does
     * not tell the mount's request threads from others. The libfuse2 mount's loop threads carry
     * the same names ({@link Fuse2Loop}).
     */
    private void named() {
        Thread t = Thread.currentThread();
        String prefix = threadPrefix;
        if (!t.getName().startsWith(prefix)) {
            t.setName(prefix + threadsNamed.incrementAndGet());
        }
    }

    private static boolean isNull(MemorySegment p) {
        return p == null || p.address() == 0;
    }

    private static String str(MemorySegment p) {
        return isNull(p) ? null : p.reinterpret(Integer.MAX_VALUE).getString(0);
    }

    /** {@code size} bytes at {@code p}, borrowed for this callback (empty for NULL or 0). */
    private static ByteBuffer bytes(MemorySegment p, long size) {
        return isNull(p) || size == 0 ? ByteBuffer.allocate(0) : p.reinterpret(size).asByteBuffer();
    }

    /** The caller from {@code fuse_get_context()}: uid at 8, gid at 12, pid at 16. */
    private FuseOps.Who who() {
        try {
            MemorySegment c = ((MemorySegment) getContext.invokeExact()).reinterpret(20);
            return new FuseOps.Who(Integer.toUnsignedLong(c.get(ValueLayout.JAVA_INT, 8)),
                    Integer.toUnsignedLong(c.get(ValueLayout.JAVA_INT, 12)), c.get(ValueLayout.JAVA_INT, 16));
        } catch (Throwable t) {
            throw new IllegalStateException("fuse_get_context failed", t);
        }
    }

    private FuseOps.Attrs attrs(MemorySegment p) {
        return (st, rdev) -> fill(p.reinterpret(stat.sizeof()), st, rdev);
    }

    private void fill(MemorySegment s, FileStatus st, long rdev) {
        s.fill((byte) 0);
        stat.st_mode(s, FuseOps.mode(st));
        stat.st_rdev(s, rdev);
        stat.st_ino(s, st.inode().value());
        stat.st_nlink(s, st.nlink());
        stat.st_uid(s, st.uid());
        stat.st_gid(s, st.gid());
        stat.st_size(s, st.size());
        stat.st_blksize(s, maxRequest);
        stat.st_blocks(s, (st.size() + 511) / 512);
        time(s, stat.st_atim$offset(), st.atimeNanos());
        time(s, stat.st_mtim$offset(), st.mtimeNanos());
        time(s, stat.st_ctim$offset(), st.ctimeNanos());
    }

    private static void time(MemorySegment s, long at, long nanos) {
        MemorySegment t = s.asSlice(at, timespec.sizeof());
        timespec.tv_sec(t, Math.floorDiv(nanos, 1_000_000_000L));
        timespec.tv_nsec(t, Math.floorMod(nanos, 1_000_000_000L));
    }

    private static Long nanos(MemorySegment t) {
        long ns = timespec.tv_nsec(t);
        if (ns == UTIME_OMIT) {
            return null;
        }
        if (ns == UTIME_NOW) {
            return SetAttr.NOW;
        }
        return timespec.tv_sec(t) * 1_000_000_000L + ns;
    }

    private static FuseOps.Opened opened(MemorySegment fi) {
        return (fh, directIo, keepCache) -> {
            fuse_file_info.fh(fi, fh);
            int bits = (directIo ? FI_DIRECT_IO : 0) | (keepCache ? FI_KEEP_CACHE : 0);
            if (bits != 0) {
                MemorySegment m = fi.reinterpret(fuse_file_info.sizeof());
                m.set(ValueLayout.JAVA_INT, FI_BITS_OFFSET, m.get(ValueLayout.JAVA_INT, FI_BITS_OFFSET) | bits);
            }
        };
    }
}
