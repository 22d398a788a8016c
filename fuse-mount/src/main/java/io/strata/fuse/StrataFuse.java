package io.strata.fuse;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.client.EntryStatus;
import io.strata.client.FileStatus;
import io.strata.client.OpenFlag;
import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import io.strata.config.policy.Consistency;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.StatFs;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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
 * The FUSE file system (libfuse2 high-level API through jnr-fuse) over a {@link StrataFileSystem}.
 *
 * <p><b>Threads.</b> libfuse runs its multi-threaded loop and calls these methods on its own
 * threads; each one waits for the client's future with a bound (the client's io or meta timeout
 * plus a second), so no request hangs: an operation that cannot complete in time fails with EIO
 * (see {@link FuseErrors}), and a read that a replica can serve succeeds.
 *
 * <p><b>Who.</b> Each request runs as the calling process's uid, gid and supplementary groups
 * ({@link Callers}); the namespace checks permissions (and the kernel too, with
 * {@code default_permissions}).
 *
 * <p><b>Open files.</b> {@code fh} is an index into the table of open {@link StrataFile}s, so
 * every operation on an open file works without its path (the mount uses {@code hard_remove}
 * and {@code nullpath_ok}: an unlinked open file stays usable until released). {@code flush}
 * (each close(2)) publishes the file's writes, so another client's open sees them as soon as
 * close(2) returned; {@code release} ends the session.
 *
 * <p><b>Kernel caching per file.</b> From the file's consistency mode: {@code strict} opens
 * use {@code direct_io} (no page cache: every read reaches the client, which reaches L3);
 * {@code immutable} opens keep the page cache ({@code keep_cache}); {@code close-to-open} opens
 * keep it only when the file's data version is the one the page cache was filled at, else the
 * kernel drops it at open. Attribute and entry timeouts are mount-wide in the high-level API
 * (see {@link FuseMount}).
 */
final class StrataFuse extends FuseStubFS {
    private static final Logger LOG = LoggerFactory.getLogger(StrataFuse.class);
    private static final int O_ACCMODE = 3;
    private static final int O_WRONLY = 1;
    private static final int O_RDWR = 2;
    private static final int O_EXCL = 0200;
    private static final int O_TRUNC = 01000;
    private static final int O_DIRECT = 040000;
    private static final int S_IFMT = 0170000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFLNK = 0120000;
    private static final int S_IFIFO = 0010000;
    private static final int S_IFSOCK = 0140000;
    private static final int S_IFCHR = 0020000;
    private static final int S_IFBLK = 0060000;
    /** Linux {@code struct fuse_file_info} (libfuse 2.9, x86_64): the bit-field word after {@code writepage}. */
    private static final int FI_BITS_OFFSET = 20;
    private static final int FI_DIRECT_IO = 1;
    private static final int FI_KEEP_CACHE = 2;
    private static final long UTIME_NOW = (1L << 30) - 1;
    private static final long UTIME_OMIT = (1L << 30) - 2;
    /** What statfs reports as free: storage nodes do not report capacity to clients yet. */
    private static final long REPORTED_CAPACITY = 1L << 50;

    /** Native memory as direct ByteBuffers (JNI NewDirectByteBuffer: no sun.misc.Unsafe needed). */
    private static final com.kenai.jffi.MemoryIO NATIVE = com.kenai.jffi.MemoryIO.getInstance();

    private final StrataFileSystem fs;
    private final String root;
    private final Duration metaBound;
    private final Duration ioBound;
    private final Callers callers = new Callers();
    private final ConcurrentHashMap<Long, StrataFile> open = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<InodeId, Long> pageCacheVersion = new ConcurrentHashMap<>();
    private final AtomicLong nextFh = new AtomicLong();
    private final MeterRegistry meters;
    private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();
    private final boolean fileInfoLayoutKnown;
    private final CacheXattrs cache;
    private final CheckpointXattrs checkpoints = new CheckpointXattrs();
    /**
     * Directory attributes by FUSE path, answered without a round trip for the entry timeout
     * (null when it is 0, or when the kernel caches attributes itself). With the attribute
     * timeout at 0 (close-to-open) the kernel asks for the attributes of every directory on a
     * path at each path walk ({@code default_permissions} checks them): fio's delete phase made
     * 20 getattrs per deleted file. File attributes are never kept here: under close-to-open a
     * stat after another client's close must see its size. As with NFS's directory attribute
     * cache and MooseFS's, a directory another client changed shows its new mode, owner, times
     * (or that it is gone) up to that timeout later; this mount's own changes drop the entries
     * they touch at once. Keyed by path alone: the kernel checks search permission on every
     * parent before it asks for a path's attributes.
     */
    private final Cache<String, FileStatus> dirAttrs;
    /** Moves at each change this mount makes: attributes fetched across one are not kept. */
    private final AtomicLong changes = new AtomicLong();
    /**
     * The inode a regular file's path named when this mount last looked it up for the kernel,
     * per uid, kept for the entry timeout (null when it is 0): the kernel's lookup of a path
     * comes right before its open, so the open goes to that inode with one Open call instead
     * of walking the path again. Only the name-to-inode step is reused (as the kernel's own
     * dentry cache reuses it for the entry timeout); the Open answers the file's current
     * attributes and data version, so close-to-open holds as before. This mount's changes
     * drop the entries they touch.
     */
    private final Cache<Known, InodeId> knownFiles;
    /** Handles whose next fgetattr is answered with their open's attributes (libfuse asks right after a create). */
    private final java.util.Set<Long> justCreated = ConcurrentHashMap.newKeySet();

    private record Known(int uid, String path) {
    }

    StrataFuse(StrataFileSystem fs, String root, MeterRegistry meters, Duration dirAttrTtl) {
        this(fs, root, meters, dirAttrTtl, Duration.ZERO);
    }

    StrataFuse(StrataFileSystem fs, String root, MeterRegistry meters, Duration dirAttrTtl, Duration entryTtl) {
        this.knownFiles = entryTtl.isZero() ? null
                : Caffeine.newBuilder().expireAfterWrite(entryTtl).maximumSize(100_000).build();
        this.fs = fs;
        this.root = root.equals("/") ? "" : (root.endsWith("/") ? root.substring(0, root.length() - 1) : root);
        this.metaBound = fs.config().metaTimeout().plusSeconds(1);
        this.dirAttrs = dirAttrTtl.isZero() ? null
                : Caffeine.newBuilder().expireAfterWrite(dirAttrTtl).maximumSize(100_000).build();
        this.ioBound = fs.config().ioTimeout().plus(fs.config().metaTimeout()).plusSeconds(1);
        this.meters = meters;
        setOperationFlags();
        this.fileInfoLayoutKnown = fileInfoLayoutKnown();
        this.cache = new CacheXattrs(fs, inode -> {
            if (inode == null) {
                pageCacheVersion.clear();
            } else {
                pageCacheVersion.remove(inode);
            }
        }, metaBound, ioBound);
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
            Pointer ops = Struct.getMemory(fuseOperations);
            ops.putInt(38L * 8, ops.getInt(38L * 8) | 1 | 4);
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

    // ---- plumbing ----

    private String p(String path) {
        if (path == null) {
            throw new StrataException(Status.STALE_HANDLE, "no path for this request");
        }
        return root + path;
    }

    private StrataFileSystem who() {
        FuseContext c = getContext();
        return fs.as(callers.of(c.uid.get(), c.gid.get(), c.pid.get()));
    }

    private static <T> T join(CompletableFuture<T> f, Duration bound) {
        return Futures.join(f, bound);
    }

    private int call(String op, Callable<Integer> body) {
        long t0 = System.nanoTime();
        String result = "ok";
        try {
            int r = body.call();
            if (r < 0) {
                result = "errno-" + (-r);
            }
            return r;
        } catch (Throwable t) {
            int e = FuseErrors.errno(t);
            result = "errno-" + (-e);
            if (e == -Status.Errno.EIO) {
                LOG.warn("{} failed: {}", op, StrataException.wrap(StrataException.unwrapCompletion(t)).toString());
            }
            return e;
        } finally {
            String key = op + "/" + result;
            timers.computeIfAbsent(key, k -> Timer.builder("strata.fuse.requests").tag("op", op)
                    .tag("result", key.substring(op.length() + 1)).register(meters)).record(System.nanoTime() - t0, TimeUnit.NANOSECONDS);
        }
    }

    private StrataFile handle(FuseFileInfo fi) {
        StrataFile h = fi == null ? null : open.get(fi.fh.get());
        if (h == null) {
            throw new StrataException(Status.STALE_HANDLE, "no open file " + (fi == null ? "-" : fi.fh.get()));
        }
        return h;
    }

    /** The files this mount has open (tests, unmount). */
    int openFiles() {
        return open.size();
    }

    /** Closes every file still open (unmount): publishes their writes. */
    void closeAll() {
        for (Long fh : List.copyOf(open.keySet())) {
            StrataFile h = open.remove(fh);
            if (h != null) {
                try {
                    join(h.closeAsync(), ioBound);
                } catch (RuntimeException e) {
                    LOG.warn("closing {} at unmount: {}", h, e.toString());
                }
            }
        }
    }

    /** The {@code S_IFMT} bits of a type. */
    static int typeBits(InodeType type) {
        return switch (type) {
            case DIRECTORY -> S_IFDIR;
            case SYMLINK -> S_IFLNK;
            case FILE -> S_IFREG;
            case FIFO -> S_IFIFO;
            case SOCKET -> S_IFSOCK;
            case CHAR_DEVICE -> S_IFCHR;
            case BLOCK_DEVICE -> S_IFBLK;
        };
    }

    /** The type {@code mknod(2)} asks for in {@code mode}'s {@code S_IFMT} bits (0 is a regular file), or null. */
    static InodeType typeOf(long mode) {
        return switch ((int) (mode & S_IFMT)) {
            case 0, S_IFREG -> InodeType.FILE;
            case S_IFIFO -> InodeType.FIFO;
            case S_IFSOCK -> InodeType.SOCKET;
            case S_IFCHR -> InodeType.CHAR_DEVICE;
            case S_IFBLK -> InodeType.BLOCK_DEVICE;
            default -> null;
        };
    }

    static void fill(FileStat stat, FileStatus st) {
        fill(stat, st, 0);
    }

    static void fill(FileStat stat, FileStatus st, long rdev) {
        stat.st_mode.set(typeBits(st.type()) | (st.mode() & 07777));
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

    // ---- attributes ----

    @Override
    public int getattr(String path, FileStat stat) {
        return call("getattr", () -> {
            FileStatus st = dirAttrs == null ? null : dirAttrs.getIfPresent(path);
            long rdev = 0;
            if (st == null) {
                long before = changes.get();
                EntryStatus e = join(who().lstatEntryAsync(p(path)), metaBound);
                st = e.status();
                rdev = e.rdev();
                if (dirAttrs != null && st.type() == InodeType.DIRECTORY) {
                    dirAttrs.put(path, st);
                    if (changes.get() != before) {
                        dirAttrs.invalidate(path); // a change of this mount may have crossed the fetch
                    }
                } else if (knownFiles != null && st.type() == InodeType.FILE) {
                    Known k = new Known((int) getContext().uid.get(), path);
                    knownFiles.put(k, st.inode());
                    if (changes.get() != before) {
                        knownFiles.invalidate(k);
                    }
                }
            }
            fill(stat, st, rdev);
            return 0;
        });
    }

    /** {@link #call}, then forgets the cached attributes {@code path}'s change touched (every directory for a null path: a rename). */
    private int mutation(String op, String path, Callable<Integer> body) {
        try {
            return call(op, body);
        } finally {
            if (path == null) {
                changedTree();
            } else {
                changed(path);
            }
        }
    }

    /** A {@link #mutation} that is one call to the meta service, waited for up to the meta bound; 0 once it is done. */
    private int metaChange(String op, String path, Callable<CompletableFuture<?>> change) {
        return mutation(op, path, () -> {
            join(change.call(), metaBound);
            return 0;
        });
    }

    /** This mount changed {@code path} (and so its parent directory's times or link count). */
    private void changed(String path) {
        if (knownFiles != null) {
            changes.incrementAndGet();
            if (path == null) {
                knownFiles.invalidateAll();
            } else {
                knownFiles.asMap().keySet().removeIf(k -> k.path().equals(path));
            }
        }
        if (dirAttrs != null && path != null) {
            changes.incrementAndGet();
            dirAttrs.invalidate(path);
            int slash = path.lastIndexOf('/');
            dirAttrs.invalidate(slash <= 0 ? "/" : path.substring(0, slash));
        }
    }

    /** A change that may move whole subtrees (a rename): forget every directory. */
    private void changedTree() {
        if (knownFiles != null) {
            changes.incrementAndGet();
            knownFiles.invalidateAll();
        }
        if (dirAttrs != null) {
            changes.incrementAndGet();
            dirAttrs.invalidateAll();
        }
    }

    @Override
    public int fgetattr(String path, FileStat stat, FuseFileInfo fi) {
        return call("fgetattr", () -> {
            StrataFile h = fi == null ? null : open.get(fi.fh.get());
            java.util.Optional<FileStatus> atOpen = h != null && justCreated.remove(fi.fh.get()) ? h.statAtOpen() : java.util.Optional.empty();
            if (atOpen.isPresent()) {
                fill(stat, atOpen.get(), 0); // the create's own answer, a moment old
            } else if (h != null) {
                fill(stat, join(h.statAsync(), metaBound));
            } else {
                EntryStatus e = join(who().lstatEntryAsync(p(path)), metaBound);
                fill(stat, e.status(), e.rdev());
            }
            return 0;
        });
    }

    @Override
    public int access(String path, int mask) {
        return call("access", () -> {
            join(who().lstatAsync(p(path)), metaBound);
            return 0;
        });
    }

    @Override
    public int chmod(String path, @mode_t long mode) {
        return metaChange("chmod", path, () -> who().setAttrAsync(p(path), SetAttr.mode((int) (mode & 07777))));
    }

    @Override
    public int chown(String path, long uid, long gid) {
        return mutation("chown", path, () -> {
            Integer u = uid == -1 || uid == 0xFFFFFFFFL ? null : (int) uid;
            Integer g = gid == -1 || gid == 0xFFFFFFFFL ? null : (int) gid;
            join(who().setAttrAsync(p(path), SetAttr.owner(u, g)), metaBound);
            return 0;
        });
    }

    @Override
    public int utimens(String path, Timespec[] timespec) {
        return mutation("utimens", path, () -> {
            Long a = nanos(timespec[0]);
            Long m = nanos(timespec[1]);
            if (a != null || m != null) {
                join(who().setAttrAsync(p(path), SetAttr.times(a, m)), metaBound);
            }
            return 0;
        });
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

    @Override
    public int truncate(String path, @off_t long size) {
        return call("truncate", () -> {
            join(who().truncateAsync(p(path), size), ioBound);
            return 0;
        });
    }

    @Override
    public int ftruncate(String path, @off_t long size, FuseFileInfo fi) {
        return call("ftruncate", () -> {
            StrataFile h = fi == null ? null : open.get(fi.fh.get());
            join(h != null && h.isWritable() ? h.truncateAsync(size) : who().truncateAsync(p(path), size), ioBound);
            return 0;
        });
    }

    @Override
    public int statfs(String path, Statvfs st) {
        return call("statfs", () -> {
            StatFs s = join(fs.statfsAsync(), metaBound);
            long bsize = 4096;
            long used = (s.bytes() + bsize - 1) / bsize;
            long total = Math.max(used, REPORTED_CAPACITY / bsize);
            st.f_bsize.set(bsize);
            st.f_frsize.set(bsize);
            st.f_blocks.set(total);
            st.f_bfree.set(total - used);
            st.f_bavail.set(total - used);
            st.f_files.set(s.inodes() + (1L << 32));
            st.f_ffree.set(1L << 32);
            st.f_favail.set(1L << 32);
            st.f_namemax.set(255);
            return 0;
        });
    }

    // ---- directories and names ----

    @Override
    public int mkdir(String path, @mode_t long mode) {
        return metaChange("mkdir", path, () -> who().mkdirAsync(p(path), (int) (mode & 07777)));
    }

    @Override
    public int rmdir(String path) {
        return metaChange("rmdir", path, () -> who().rmdirAsync(p(path)));
    }

    @Override
    public int unlink(String path) {
        return metaChange("unlink", path, () -> who().unlinkAsync(p(path)));
    }

    @Override
    public int rename(String oldpath, String newpath) {
        return metaChange("rename", null, () -> who().renameAsync(p(oldpath), p(newpath)));
    }

    @Override
    public int symlink(String oldpath, String newpath) {
        return metaChange("symlink", newpath, () -> who().symlinkAsync(oldpath, p(newpath)));
    }

    @Override
    public int link(String oldpath, String newpath) {
        return metaChange("link", newpath, () -> who().linkAsync(p(oldpath), p(newpath)));
    }

    @Override
    public int readlink(String path, Pointer buf, @size_t long size) {
        return call("readlink", () -> {
            byte[] t = join(who().readlinkAsync(p(path)), metaBound).getBytes(StandardCharsets.UTF_8);
            int n = (int) Math.min(t.length, Math.max(0, size - 1));
            buf.put(0, t, 0, n);
            buf.putByte(n, (byte) 0);
            return 0;
        });
    }

    /**
     * Regular files, FIFOs, sockets ({@code bind(2)} makes one) and devices. Only the name is
     * stored: the kernel gives a FIFO, socket or device inode its own operations, so their I/O
     * never reaches this mount.
     */
    @Override
    public int mknod(String path, @mode_t long mode, long rdev) {
        return mutation("mknod", path, () -> {
            InodeType type = typeOf(mode);
            if (type == null) {
                return -Status.Errno.EINVAL;
            }
            long dev = type.isDevice() ? rdev & 0xFFFF_FFFFL : 0; // FUSE carries 32 bits; others have none
            join(who().mknodAsync(p(path), type, (int) (mode & 07777), dev), metaBound);
            return 0;
        });
    }

    @Override
    public int opendir(String path, FuseFileInfo fi) {
        return call("opendir", () -> {
            FileStatus st = join(who().statAsync(p(path)), metaBound);
            return st.isDirectory() ? 0 : -Status.Errno.ENOTDIR;
        });
    }

    @Override
    public int readdir(String path, Pointer buf, FuseFillDir filter, @off_t long offset, FuseFileInfo fi) {
        return call("readdir", () -> {
            List<DirEntry> entries = join(who().listAsync(p(path), false), metaBound.multipliedBy(4));
            FileStat st = new FileStat(jnr.ffi.Runtime.getSystemRuntime());
            filter.apply(buf, ".", null, 0);
            filter.apply(buf, "..", null, 0);
            for (DirEntry e : entries) {
                st.st_mode.set(typeBits(e.type()));
                st.st_ino.set(e.inode().value());
                if (filter.apply(buf, e.name(), st, 0) != 0) {
                    break;
                }
            }
            return 0;
        });
    }

    // ---- files ----

    @Override
    public int open(String path, FuseFileInfo fi) {
        return call("open", () -> {
            int flags = fi.flags.get();
            Set<OpenFlag> of = EnumSet.noneOf(OpenFlag.class);
            int acc = flags & O_ACCMODE;
            if (acc != O_WRONLY) {
                of.add(OpenFlag.READ);
            }
            if (acc == O_WRONLY || acc == O_RDWR) {
                of.add(OpenFlag.WRITE);
                if ((flags & O_TRUNC) != 0) {
                    of.add(OpenFlag.TRUNCATE);
                }
            }
            InodeId known = knownFiles == null || path == null ? null
                    : knownFiles.getIfPresent(new Known((int) getContext().uid.get(), path));
            return register(join(who().openKnownAsync(p(path), known, of), ioBound), fi, flags);
        });
    }

    @Override
    public int create(String path, @mode_t long mode, FuseFileInfo fi) {
        return mutation("create", path, () -> {
            int flags = fi.flags.get();
            Set<OpenFlag> of = EnumSet.of(OpenFlag.CREATE, OpenFlag.WRITE);
            if ((flags & O_ACCMODE) != O_WRONLY) {
                of.add(OpenFlag.READ);
            }
            if ((flags & O_EXCL) != 0) {
                of.add(OpenFlag.EXCLUSIVE);
            }
            if ((flags & O_TRUNC) != 0) {
                of.add(OpenFlag.TRUNCATE);
            }
            int rc = register(join(who().openAsync(p(path), of, (int) (mode & 07777)), ioBound), fi, flags);
            justCreated.add(fi.fh.get());
            return rc;
        });
    }

    private int register(StrataFile h, FuseFileInfo fi, int flags) {
        long fh = nextFh.incrementAndGet();
        open.put(fh, h);
        fi.fh.set(fh);
        int bits = 0;
        Consistency mode = h.policy().consistency();
        if (mode == Consistency.STRICT || (flags & O_DIRECT) != 0) {
            bits = FI_DIRECT_IO;
        } else if (mode == Consistency.IMMUTABLE) {
            bits = FI_KEEP_CACHE;
        } else {
            Long cached = pageCacheVersion.put(h.inode(), h.dataVersion());
            if (cached != null && cached == h.dataVersion()) {
                bits = FI_KEEP_CACHE;
            }
        }
        if (bits != 0 && fileInfoLayoutKnown) {
            Pointer m = Struct.getMemory(fi);
            m.putInt(FI_BITS_OFFSET, m.getInt(FI_BITS_OFFSET) | bits);
        }
        return 0;
    }

    @Override
    public int read(String path, Pointer buf, @size_t long size, @off_t long offset, FuseFileInfo fi) {
        return call("read", () -> {
            ByteBuf b = join(handle(fi).readAsync(offset, (int) size), ioBound);
            try {
                int n = b.readableBytes();
                if (n > 0) {
                    b.getBytes(b.readerIndex(), NATIVE.newDirectByteBuffer(buf.address(), n));
                }
                return n;
            } finally {
                b.release();
            }
        });
    }

    @Override
    public int write(String path, Pointer buf, @size_t long size, @off_t long offset, FuseFileInfo fi) {
        return call("write", () -> {
            StrataFile h = handle(fi);
            // libfuse's buffer, wrapped without a copy; it stays valid while this thread waits
            ByteBuf src = Unpooled.wrappedBuffer(NATIVE.newDirectByteBuffer(buf.address(), (int) size));
            join(h.writeAsync(offset, src), ioBound);
            return (int) size;
        });
    }

    @Override
    public int flush(String path, FuseFileInfo fi) {
        return call("flush", () -> {
            StrataFile h = handle(fi);
            if (h.isWritable()) {
                join(h.publishAsync(), ioBound);
                pageCacheVersion.remove(h.inode()); // published: the data version moved on
            }
            return 0;
        });
    }

    @Override
    public int fsync(String path, int isdatasync, FuseFileInfo fi) {
        return call("fsync", () -> {
            StrataFile h = handle(fi);
            join(h.fsyncAsync(), ioBound);
            if (h.isWritable()) {
                pageCacheVersion.remove(h.inode());
            }
            return 0;
        });
    }

    @Override
    public int release(String path, FuseFileInfo fi) {
        return call("release", () -> {
            StrataFile h = open.remove(fi.fh.get());
            justCreated.remove(fi.fh.get());
            if (h != null) {
                join(h.closeAsync(), ioBound);
                if (h.isWritable()) {
                    pageCacheVersion.remove(h.inode());
                }
            }
            return 0;
        });
    }

    // ---- extended attributes ----

    /**
     * {@code security.*} attributes are not stored: the kernel asks for {@code security.capability}
     * before every write (to drop file capabilities), and answering that without a namespace call
     * keeps small writes at FUSE speed.
     */
    private static boolean unsupportedNamespace(String name) {
        return name.startsWith("security.") || name.startsWith("system.") || name.startsWith("trusted.");
    }

    /**
     * How getxattr and listxattr answer with {@code v}: its length when {@code size} is 0 (the
     * caller asks how much room it needs), ERANGE when it does not fit {@code size}, else its
     * length once copied into {@code buf}.
     */
    private static int copyOut(byte[] v, Pointer buf, long size) {
        if (size == 0) {
            return v.length;
        }
        if (size < v.length) {
            return -FuseErrors.ERANGE;
        }
        buf.put(0, v, 0, v.length);
        return v.length;
    }

    @Override
    public int getxattr(String path, String name, Pointer value, @size_t long size) {
        if (unsupportedNamespace(name)) {
            return -Status.Errno.ENODATA;
        }
        return call("getxattr", () -> {
            StrataFileSystem w = who();
            if (CacheXattrs.handles(name)) {
                // statistics change between the size probe and the read: the probe leaves room
                byte[] v = cache.get(w, p(path), "/".equals(path), name);
                return size == 0 ? v.length + 256 : copyOut(v, value, size);
            }
            if (CheckpointXattrs.handles(name)) {
                // a status changes between the size probe and the read: the probe leaves room
                byte[] v = checkpoints.get(w, p(path), name);
                return size == 0 ? v.length + 256 : copyOut(v, value, size);
            }
            byte[] v = join(PolicyXattrs.handles(name) ? PolicyXattrs.get(w, p(path), name) : w.getXattrAsync(p(path), name), metaBound);
            return copyOut(v, value, size);
        });
    }

    @Override
    public int setxattr(String path, String name, Pointer value, @size_t long size, int flags) {
        if (unsupportedNamespace(name)) {
            return -Status.Errno.ENOTSUP;
        }
        return mutation("setxattr", path, () -> {
            byte[] v = new byte[(int) size];
            value.get(0, v, 0, v.length);
            StrataFileSystem w = who();
            if (CacheXattrs.handles(name)) {
                if (!name.equals(CacheXattrs.DROP)) {
                    return -Status.Errno.EPERM; // user.strata.cache is read-only
                }
                cache.drop(w, p(path), "/".equals(path));
                return 0;
            }
            if (CheckpointXattrs.handles(name)) {
                checkpoints.set(w, p(path), name, v);
                return 0;
            }
            join(PolicyXattrs.handles(name) ? PolicyXattrs.set(w, p(path), name, v) : w.setXattrAsync(p(path), name, v, flags), metaBound);
            return 0;
        });
    }

    @Override
    public int listxattr(String path, Pointer list, @size_t long size) {
        return call("listxattr", () -> {
            StrataFileSystem w = who();
            // only stored attributes: the virtual ones (user.strata.policy, .layout, .cache) are
            // read by name; listed, cp -a / rsync -X would copy them onto other files (setting a
            // directory's whole effective policy as overrides, or failing on read-only names)
            List<String> names = join(w.listXattrsAsync(p(path)), metaBound);
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            for (String n : names) {
                out.writeBytes(n.getBytes(StandardCharsets.UTF_8));
                out.write(0);
            }
            return copyOut(out.toByteArray(), list, size);
        });
    }

    @Override
    public int removexattr(String path, String name) {
        if (unsupportedNamespace(name)) {
            return -Status.Errno.ENODATA;
        }
        return mutation("removexattr", path, () -> {
            StrataFileSystem w = who();
            if (CacheXattrs.handles(name) || CheckpointXattrs.handles(name)) {
                return -Status.Errno.EPERM;
            }
            join(PolicyXattrs.handles(name) ? PolicyXattrs.remove(w, p(path), name) : w.removeXattrAsync(p(path), name), metaBound);
            return 0;
        });
    }
}
