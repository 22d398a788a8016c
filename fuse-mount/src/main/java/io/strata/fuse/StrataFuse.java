package io.strata.fuse;

import io.strata.client.FileStatus;
import io.strata.protocol.meta.SetAttr;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jnr.ffi.Pointer;
import jnr.ffi.Struct;
import jnr.ffi.types.mode_t;
import jnr.ffi.types.off_t;
import jnr.ffi.types.size_t;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import ru.serce.jnrfuse.FuseFillDir;
import ru.serce.jnrfuse.FuseStubFS;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.FuseContext;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.Statvfs;
import ru.serce.jnrfuse.struct.Timespec;

/**
 * The libfuse2 binding (high-level API through jnr-fuse): translates libfuse2's structs to and
 * from {@link FuseOps}, which does the work. Requests are 128 KiB at most (FUSE protocol 7.19).
 */
final class StrataFuse extends FuseStubFS implements FuseBinding {
    private static final Logger LOG = LoggerFactory.getLogger(StrataFuse.class);
    /** Linux {@code struct fuse_file_info} (libfuse 2.9, x86_64): the bit-field word after {@code writepage}. */
    private static final int FI_BITS_OFFSET = 20;
    private static final int FI_DIRECT_IO = 1;
    private static final int FI_KEEP_CACHE = 2;
    private static final long UTIME_NOW = (1L << 30) - 1;
    private static final long UTIME_OMIT = (1L << 30) - 2;

    /** Native memory as direct ByteBuffers (JNI NewDirectByteBuffer: no sun.misc.Unsafe needed). */
    private static final com.kenai.jffi.MemoryIO NATIVE = com.kenai.jffi.MemoryIO.getInstance();

    private final FuseOps ops;
    private final boolean fileInfoLayoutKnown;

    StrataFuse(FuseOps ops) {
        this.ops = ops;
        setOperationFlags();
        this.fileInfoLayoutKnown = fileInfoLayoutKnown();
    }

    /**
     * Sets {@code flag_nullpath_ok} and {@code flag_utime_omit_ok} in libfuse's operations table
     * (jnr-fuse declares the bit-field but gives no setter). The word follows the 38 callback
     * pointers of {@code struct fuse_operations} (libfuse 2.9); refused if jnr-fuse's layout
     * disagrees, in which case unlinked open files read through libfuse's path instead.
     */
    private boolean setOperationFlags() {
        try {
            // 38 callbacks, the flag word (padded to 8), 6 more callbacks: 360 bytes on x86_64
            int size = Struct.size(fuseOperations);
            if (size != 38 * 8 + 8 + 6 * 8) {
                LOG.warn("unexpected fuse_operations layout ({} bytes): nullpath_ok not set", size);
                return false;
            }
            Pointer o = Struct.getMemory(fuseOperations);
            o.putInt(38L * 8, o.getInt(38L * 8) | 1 | 4);
            return true;
        } catch (RuntimeException e) {
            LOG.warn("cannot set libfuse operation flags: {}", e.toString());
            return false;
        }
    }

    /** libfuse 2.9's {@code struct fuse_file_info} is 40 bytes with {@code fh} at 24; jnr-fuse's must agree. */
    private static boolean fileInfoLayoutKnown() {
        int size = Struct.size(new FuseFileInfo(jnr.ffi.Runtime.getSystemRuntime()) { });
        if (size != 40) {
            LOG.warn("unexpected fuse_file_info layout ({} bytes): direct_io and keep_cache not set per file", size);
            return false;
        }
        return true;
    }

    /** Mounts and serves on Java threads ({@link Fuse2Loop}) until the file system is unmounted. */
    @Override
    public void run(Path dir, List<String> args, boolean debug) {
        // fuse_main's command line, as jnr-fuse's mount() builds it: foreground, the mount point, the options
        List<String> argv = new ArrayList<>(List.of("strata", "-f"));
        if (debug) {
            argv.add("-d");
        }
        argv.add(dir.toAbsolutePath().toString());
        argv.addAll(args);
        Fuse2Loop.run(fuseOperations, dir, argv);
    }

    // ---- plumbing ----

    private FuseOps.Who who() {
        FuseContext c = getContext();
        return new FuseOps.Who(c.uid.get(), c.gid.get(), c.pid.get());
    }

    /** {@code size} bytes of native memory at {@code p} as a ByteBuffer (empty for a null pointer or size 0). */
    private static ByteBuffer bytes(Pointer p, long size) {
        return p == null || size == 0 ? ByteBuffer.allocate(0) : NATIVE.newDirectByteBuffer(p.address(), (int) size);
    }

    private static FuseOps.Attrs into(FileStat stat) {
        return (st, rdev) -> fill(stat, st, rdev);
    }

    static void fill(FileStat stat, FileStatus st, long rdev) {
        stat.st_mode.set(FuseOps.mode(st));
        stat.st_rdev.set(rdev);
        stat.st_ino.set(st.inode().value());
        stat.st_nlink.set(st.nlink());
        stat.st_uid.set(st.uid());
        stat.st_gid.set(st.gid());
        stat.st_size.set(st.size());
        stat.st_blksize.set(MountOptions.MAX_REQUEST);
        stat.st_blocks.set((st.size() + 511) / 512);
        time(stat.st_atim, st.atimeNanos());
        time(stat.st_mtim, st.mtimeNanos());
        time(stat.st_ctim, st.ctimeNanos());
    }

    private static void time(Timespec t, long nanos) {
        t.tv_sec.set(Math.floorDiv(nanos, 1_000_000_000L));
        t.tv_nsec.set(Math.floorMod(nanos, 1_000_000_000L));
    }

    private static Long nanos(Timespec t) {
        long ns = t.tv_nsec.longValue();
        if (ns == UTIME_OMIT) {
            return null;
        }
        if (ns == UTIME_NOW) {
            return SetAttr.NOW;
        }
        return t.tv_sec.get() * 1_000_000_000L + ns;
    }

    private FuseOps.Opened into(FuseFileInfo fi) {
        return (fh, directIo, keepCache) -> {
            fi.fh.set(fh);
            int bits = (directIo ? FI_DIRECT_IO : 0) | (keepCache ? FI_KEEP_CACHE : 0);
            if (bits != 0 && fileInfoLayoutKnown) {
                Pointer m = Struct.getMemory(fi);
                m.putInt(FI_BITS_OFFSET, m.getInt(FI_BITS_OFFSET) | bits);
            }
        };
    }

    private static long fh(FuseFileInfo fi) {
        return fi == null ? -1 : fi.fh.get();
    }

    // ---- attributes ----

    @Override
    public int getattr(String path, FileStat stat) {
        return ops.getattr(who(), path, into(stat));
    }

    @Override
    public int fgetattr(String path, FileStat stat, FuseFileInfo fi) {
        return ops.fgetattr(who(), path, fh(fi), into(stat));
    }

    @Override
    public int access(String path, int mask) {
        return ops.access(who(), path);
    }

    @Override
    public int chmod(String path, @mode_t long mode) {
        return ops.chmod(who(), path, mode);
    }

    @Override
    public int chown(String path, long uid, long gid) {
        return ops.chown(who(), path, uid, gid);
    }

    @Override
    public int utimens(String path, Timespec[] timespec) {
        return ops.utimens(who(), path, nanos(timespec[0]), nanos(timespec[1]));
    }

    @Override
    public int truncate(String path, @off_t long size) {
        return ops.truncate(who(), path, size);
    }

    @Override
    public int ftruncate(String path, @off_t long size, FuseFileInfo fi) {
        return ops.ftruncate(who(), path, fh(fi), size);
    }

    @Override
    public int statfs(String path, Statvfs st) {
        return ops.statfs((bsize, blocks, free, files, freeFiles, nameMax) -> {
            st.f_bsize.set(bsize);
            st.f_frsize.set(bsize);
            st.f_blocks.set(blocks);
            st.f_bfree.set(free);
            st.f_bavail.set(free);
            st.f_files.set(files);
            st.f_ffree.set(freeFiles);
            st.f_favail.set(freeFiles);
            st.f_namemax.set(nameMax);
        });
    }

    // ---- directories and names ----

    @Override
    public int mkdir(String path, @mode_t long mode) {
        return ops.mkdir(who(), path, mode);
    }

    @Override
    public int rmdir(String path) {
        return ops.rmdir(who(), path);
    }

    @Override
    public int unlink(String path) {
        return ops.unlink(who(), path);
    }

    @Override
    public int rename(String oldpath, String newpath) {
        return ops.rename(who(), oldpath, newpath);
    }

    @Override
    public int symlink(String oldpath, String newpath) {
        return ops.symlink(who(), oldpath, newpath);
    }

    @Override
    public int link(String oldpath, String newpath) {
        return ops.link(who(), oldpath, newpath);
    }

    @Override
    public int readlink(String path, Pointer buf, @size_t long size) {
        return ops.readlink(who(), path, bytes(buf, size));
    }

    @Override
    public int mknod(String path, @mode_t long mode, long rdev) {
        return ops.mknod(who(), path, mode, rdev);
    }

    @Override
    public int opendir(String path, FuseFileInfo fi) {
        return ops.opendir(who(), path);
    }

    @Override
    public int readdir(String path, Pointer buf, FuseFillDir filter, @off_t long offset, FuseFileInfo fi) {
        FileStat st = new FileStat(jnr.ffi.Runtime.getSystemRuntime());
        return ops.readdir(who(), path, (name, type, ino) -> {
            if (type == null) {
                return filter.apply(buf, name, null, 0) == 0;
            }
            st.st_mode.set(FuseOps.typeBits(type));
            st.st_ino.set(ino);
            return filter.apply(buf, name, st, 0) == 0;
        });
    }

    // ---- files ----

    @Override
    public int open(String path, FuseFileInfo fi) {
        return ops.open(who(), path, fi.flags.get(), into(fi));
    }

    @Override
    public int create(String path, @mode_t long mode, FuseFileInfo fi) {
        return ops.create(who(), path, mode, fi.flags.get(), into(fi));
    }

    @Override
    public int read(String path, Pointer buf, @size_t long size, @off_t long offset, FuseFileInfo fi) {
        return ops.read(fh(fi), bytes(buf, size), offset);
    }

    @Override
    public int write(String path, Pointer buf, @size_t long size, @off_t long offset, FuseFileInfo fi) {
        return ops.write(fh(fi), bytes(buf, size), offset);
    }

    @Override
    public int flush(String path, FuseFileInfo fi) {
        return ops.flush(fh(fi));
    }

    @Override
    public int fsync(String path, int isdatasync, FuseFileInfo fi) {
        return ops.fsync(fh(fi));
    }

    @Override
    public int release(String path, FuseFileInfo fi) {
        return ops.release(fh(fi));
    }

    // ---- extended attributes ----

    @Override
    public int getxattr(String path, String name, Pointer value, @size_t long size) {
        return ops.getxattr(who(), path, name, bytes(value, size));
    }

    @Override
    public int setxattr(String path, String name, Pointer value, @size_t long size, int flags) {
        return ops.setxattr(who(), path, name, bytes(value, size), flags);
    }

    @Override
    public int listxattr(String path, Pointer list, @size_t long size) {
        return ops.listxattr(who(), path, bytes(list, size));
    }

    @Override
    public int removexattr(String path, String name) {
        return ops.removexattr(who(), path, name);
    }
}
