package io.strata.fuse;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.client.Capacity;
import io.strata.client.EntryStatus;
import io.strata.client.FileStatus;
import io.strata.client.OpenFlag;
import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import io.strata.config.policy.Consistency;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.trace.SlowOps;
import io.strata.core.trace.Trace;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.StatFs;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operations of a Strata FUSE mount over a {@link StrataFileSystem}, independent of the
 * libfuse binding: {@link StrataFuse} (libfuse2 through jnr-fuse) and {@code StrataFuse3}
 * (libfuse3 through the Java FFM API) translate libfuse's structs to and from these calls, so
 * both mounts answer every request the same way. Each method returns what libfuse wants back:
 * 0 or a byte count, or a negated errno.
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
 * every operation on an open file works without its path (libfuse keeps an unlinked open file
 * under a hidden name, {@code .fuse_hidden*}, usable until released). {@code flush}
 * (each close(2)) publishes the file's writes, so another client's open sees them as soon as
 * close(2) returned; {@code release} ends the session.
 *
 * <p><b>Kernel caching per file.</b> From the file's consistency mode: {@code strict} opens
 * use {@code direct_io} (no page cache: every read reaches the client, which reaches L3);
 * {@code immutable} opens keep the page cache ({@code keep_cache}); {@code close-to-open} opens
 * keep it only when the file's data version is the one the page cache was filled at, else the
 * kernel drops it at open. Attribute and entry timeouts are mount-wide in the high-level API
 * (see {@link FuseMount}).
 *
 * <p><b>Metrics.</b> {@code strata.fuse.requests} (a timer per {@code op} and {@code result})
 * and {@code strata.fuse.request.bytes} (the size of each read and write request, per
 * {@code op}): how many requests a GiB takes is what tells the two libfuse versions apart.
 */
final class FuseOps {
    private static final Logger LOG = LoggerFactory.getLogger(FuseOps.class);
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
    /** What statfs reports as the size when nothing reports space (a static chain table, no cluster manager). */
    private static final long UNKNOWN_CAPACITY = 1L << 50;

    /** The process a request comes from (libfuse's request context). */
    record Who(long uid, long gid, long pid) {
    }

    /** Where a request's attributes go (the binding's {@code struct stat}). */
    @FunctionalInterface
    interface Attrs {
        void set(FileStatus st, long rdev);
    }

    /** Where readdir's entries go; false when the kernel's buffer is full. */
    @FunctionalInterface
    interface Dir {
        boolean add(String name, InodeType type, long ino);
    }

    /** Where an open's handle and caching bits go (the binding's {@code struct fuse_file_info}). */
    @FunctionalInterface
    interface Opened {
        void set(long fh, boolean directIo, boolean keepCache);
    }

    /** Where statfs's figures go, in blocks of {@code bsize} bytes. */
    @FunctionalInterface
    interface Fs {
        void set(long bsize, long blocks, long free, long files, long freeFiles, long nameMax);
    }

    private final StrataFileSystem fs;
    private final String root;
    private final Duration metaBound;
    private final Duration ioBound;
    private final Callers callers = new Callers();
    private final ConcurrentHashMap<Long, StrataFile> open = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<InodeId, Long> pageCacheVersion = new ConcurrentHashMap<>();
    private final AtomicLong nextFh = new AtomicLong();
    private final MeterRegistry meters;
    private final SlowOps slowOps;
    private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();
    private final DistributionSummary readBytes;
    private final DistributionSummary writeBytes;
    private final CacheXattrs cache;
    private final CheckpointXattrs checkpoints = new CheckpointXattrs();
    /**
     * Directory attributes by FUSE path, answered without a round trip for the entry timeout
     * (null when it is 0, or when the kernel caches attributes itself). With the attribute
     * timeout at 0 (close-to-open) the kernel asks for the attributes of every directory on a
     * path at each path walk ({@code default_permissions} checks them): fio's delete phase made
     * 20 getattrs per deleted file. As with NFS's directory attribute
     * cache and MooseFS's, a directory another client changed shows its new mode, owner, times
     * (or that it is gone) up to that timeout later; this mount's own changes replace the entries
     * they touch with the directories their answers carry ({@link #dirChange}), or drop them,
     * at once. Keyed by path alone: the kernel checks search permission on every
     * parent before it asks for a path's attributes.
     */
    private final Cache<String, FileStatus> dirAttrs;
    /**
     * Regular files' attributes by FUSE path, for the same timeout and under the same rules as
     * {@link #dirAttrs} (null when that is): a stat is the kernel's LOOKUP and then its GETATTR of
     * the same path, and the second is answered by the first. Another client's close shows in a
     * stat up to the timeout later, as with NFS's attribute cache (3 s at least) and MooseFS's
     * (1 s); an open always asks the namespace (close-to-open), and its answer replaces what is
     * kept. Never kept: {@code strict} files, files with more than one name (a change through one
     * name would leave the other's stale), and files a handle here has open for writing (their
     * size moves with each write; they are asked for every time, and forgotten when such a
     * handle closes). This mount's changes drop what they touch.
     */
    private final Cache<String, EntryStatus> fileAttrs;
    /** Moves at each change this mount makes: attributes fetched across one are not kept. */
    private final AtomicLong changes = new AtomicLong();
    /**
     * Moves with {@link #changes} and also when a handle here that wrote a file closes: file
     * attributes fetched across either are not kept. (A separate count: a writer's release
     * arrives after its close(2) returned, and must not stop the next create from keeping its
     * directory.)
     */
    private final AtomicLong fileChanges = new AtomicLong();
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
    private final Set<Long> justCreated = ConcurrentHashMap.newKeySet();
    /**
     * The handle each path this mount just created is open in, for the attribute timeout (null
     * when it is 0), until the handle publishes or closes: the kernel asks for the new file's
     * attributes by path as the open completes (its permission check), and the create's answer
     * with the handle's length is that answer, without a {@code Lookup}. Like {@link #fileAttrs}:
     * another client's change shows in a stat up to the timeout later, never for strict files
     * (not kept), and this mount's changes drop the entries they touch.
     */
    private final Cache<String, Long> createdFiles;
    /** The path each handle in {@link #createdFiles} was created at, to drop its entry without a scan. */
    private final Map<Long, String> createdPathOf = new ConcurrentHashMap<>();

    private record Known(long uid, String path) {
    }

    FuseOps(StrataFileSystem fs, String root, MeterRegistry meters, Duration dirAttrTtl, Duration entryTtl) {
        this.knownFiles = entryTtl.isZero() ? null
                : Caffeine.newBuilder().expireAfterWrite(entryTtl).maximumSize(100_000).executor(Runnable::run).build();
        this.fs = fs;
        this.root = root.equals("/") ? "" : (root.endsWith("/") ? root.substring(0, root.length() - 1) : root);
        this.metaBound = fs.config().metaTimeout().plusSeconds(1);
        this.dirAttrs = dirAttrTtl.isZero() ? null
                : Caffeine.newBuilder().expireAfterWrite(dirAttrTtl).maximumSize(100_000).executor(Runnable::run).build();
        this.fileAttrs = dirAttrTtl.isZero() ? null
                : Caffeine.newBuilder().expireAfterWrite(dirAttrTtl).maximumSize(100_000).executor(Runnable::run).build();
        this.createdFiles = dirAttrTtl.isZero() ? null
                : Caffeine.newBuilder().expireAfterWrite(dirAttrTtl).maximumSize(100_000).executor(Runnable::run).build();
        this.ioBound = fs.config().ioTimeout().plus(fs.config().metaTimeout()).plusSeconds(1);
        this.meters = meters;
        this.slowOps = fs.slowOps();
        this.readBytes = requestBytes("read", meters);
        this.writeBytes = requestBytes("write", meters);
        this.cache = new CacheXattrs(fs, inode -> {
            if (inode == null) {
                pageCacheVersion.clear();
            } else {
                pageCacheVersion.remove(inode);
            }
        }, metaBound, ioBound);
    }

    private static DistributionSummary requestBytes(String op, MeterRegistry meters) {
        return DistributionSummary.builder("strata.fuse.request.bytes").tag("op", op).baseUnit("bytes")
                .description("size of each FUSE read or write request").register(meters);
    }

    // ---- plumbing ----

    private String p(String path) {
        if (path == null) {
            throw new StrataException(Status.STALE_HANDLE, "no path for this request");
        }
        return root + path;
    }

    private StrataFileSystem as(Who w) {
        return fs.as(callers.of(w.uid(), w.gid(), w.pid()));
    }

    private static <T> T join(CompletableFuture<T> f, Duration bound) {
        return Futures.join(f, bound);
    }

    private int call(String op, Callable<Integer> body) {
        return call(op, () -> "", body);
    }

    /**
     * Runs one FUSE request as a traced user operation: every call it makes carries a fresh
     * trace id, and if it is slow it is kept with {@code what} (evaluated only then) in the
     * process's slow operations.
     */
    private int call(String op, java.util.function.Supplier<String> what, Callable<Integer> body) {
        long t0 = System.nanoTime();
        justSet.remove();
        String result = "ok";
        Trace.Scope trace = Trace.begin();
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
            trace.close();
            long took = System.nanoTime() - t0;
            String key = op + "/" + result;
            timers.computeIfAbsent(key, k -> Timer.builder("strata.fuse.requests").tag("op", op)
                    .tag("result", key.substring(op.length() + 1)).register(meters)).record(took, TimeUnit.NANOSECONDS);
            if (slowOps.isSlow(took)) {
                String w = what.get();
                slowOps.record(trace.id(), "fuse", w.isEmpty() ? op : op + " " + w, took, result);
            }
        }
    }

    /** The open file {@code fh} as slow operations name it. */
    private String handleName(long fh) {
        StrataFile h = open.get(fh);
        return h == null ? "handle " + fh : h.toString();
    }

    private StrataFile handle(long fh) {
        StrataFile h = open.get(fh);
        if (h == null) {
            throw new StrataException(Status.STALE_HANDLE, "no open file " + fh);
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

    /**
     * Keeps {@code e} as the attributes of the file at {@code path}, fetched (or opened) since
     * {@link #fileChanges} stood at {@code before}, unless {@link #fileAttrs} may not keep it or a
     * change of this mount crossed the fetch.
     */
    private void keepFile(String path, EntryStatus e, long before) {
        FileStatus st = e.status();
        if (fileAttrs == null || path == null || !st.isFile() || st.nlink() != 1 || st.consistency() == Consistency.STRICT
                || fs.writingHere(st.inode())) {
            return;
        }
        fileAttrs.put(path, e);
        if (fileChanges.get() != before || fs.writingHere(st.inode())) {
            fileAttrs.invalidate(path);
        }
    }

    /** A handle here wrote {@code inode} (or is about to publish it): the attributes kept of it are not an answer. */
    private void forgetFile(InodeId inode) {
        if (fileAttrs == null) {
            return;
        }
        fileChanges.incrementAndGet();
        fileAttrs.asMap().values().removeIf(e -> e.status().inode().equals(inode));
    }

    /** {@code st_mode} of a status: type bits and permission bits. */
    static int mode(FileStatus st) {
        return typeBits(st.type()) | (st.mode() & 07777);
    }

    // ---- attributes ----

    int getattr(Who w, String path, Attrs out) {
        JustSet set = justSet.get();
        justSet.remove();
        return call("getattr", () -> {
            if (set != null && set.path().equals(path) && System.nanoTime() - set.nanos() < JUST_SET_NANOS) {
                out.set(set.status(), 0); // libfuse's question right after this thread's setattr
                return 0;
            }
            FileStatus st = dirAttrs == null ? null : dirAttrs.getIfPresent(path);
            long rdev = 0;
            if (st == null && fileAttrs != null) {
                EntryStatus kept = fileAttrs.getIfPresent(path);
                if (kept != null && !fs.writingHere(kept.status().inode())) {
                    st = kept.status();
                }
            }
            if (st == null && createdFiles != null) {
                Long fh = createdFiles.getIfPresent(path);
                StrataFile h = fh == null ? null : open.get(fh);
                st = h == null ? null : h.statAtOpen().orElse(null);
            }
            if (st == null) {
                long before = changes.get();
                long beforeFile = fileChanges.get();
                EntryStatus e = join(as(w).lstatEntryAsync(p(path)), metaBound);
                st = e.status();
                rdev = e.rdev();
                keepFetched(path, e, before, beforeFile, knownFiles == null ? null : new Known(w.uid(), path));
            }
            out.set(st, rdev);
            return 0;
        });
    }

    /** The attributes of open file {@code fh} (its path when the handle is unknown). */
    int fgetattr(Who w, String path, long fh, Attrs out) {
        return call("fgetattr", () -> {
            StrataFile h = open.get(fh);
            Optional<FileStatus> atOpen = h != null && justCreated.remove(fh) ? h.statAtOpen() : Optional.empty();
            if (atOpen.isPresent()) {
                out.set(atOpen.get(), 0); // the create's own answer, a moment old
            } else if (h != null) {
                out.set(join(h.statAsync(), metaBound), 0);
            } else {
                EntryStatus e = join(as(w).lstatEntryAsync(p(path)), metaBound);
                out.set(e.status(), e.rdev());
            }
            return 0;
        });
    }

    /** {@link #call}, then forgets the cached attributes {@code path}'s change touched. */
    private int mutation(String op, String path, Callable<Integer> body) {
        try {
            return call(op, body);
        } finally {
            changed(path);
        }
    }

    /** A {@link #mutation} that is one call to the meta service, waited for up to the meta bound; 0 once it is done. */
    private int metaChange(String op, String path, Callable<CompletableFuture<?>> change) {
        return mutation(op, path, () -> {
            join(change.call(), metaBound);
            return 0;
        });
    }

    /**
     * A {@link #mutation} that is one call to the meta service answering directories as they are
     * right after the change, by path (the parent, and a new directory itself): those attributes
     * replace the ones the change dropped (as NFSv3's post-operation directory attributes do), so
     * the kernel's next walk through them does not look them up again. Kept only when no other
     * change of this mount crossed the call.
     */
    private int dirChange(String op, String path, Callable<CompletableFuture<Map<String, FileStatus>>> change) {
        long before = changes.get();
        List<Map<String, FileStatus>> got = new ArrayList<>(1);
        int r = mutation(op, path, () -> {
            got.add(join(change.call(), metaBound));
            return 0;
        });
        if (!got.isEmpty()) {
            got.get(0).forEach((dir, st) -> keepDir(dir, st, before));
        }
        return r;
    }

    /** The answer {@code dir} as the attributes of {@code path}'s parent, for {@link #dirChange}. */
    private static Map<String, FileStatus> parentOf(String path, FileStatus dir) {
        return dir == null ? Map.of() : Map.of(parentOf(path), dir);
    }

    /**
     * Keeps {@code st} as directory {@code dir}'s attributes, given by the answer to this mount's
     * change begun when {@link #changes} stood at {@code before}: unless another change (or a
     * fetch's invalidation) came between, which would make the answer older than what it dropped.
     */
    private void keepDir(String dir, FileStatus st, long before) {
        if (dirAttrs != null) {
            keepUnlessCrossed(dirAttrs, dir, st, changes, before + 1);
        }
    }

    private static String parentOf(String path) {
        int slash = path.lastIndexOf('/');
        return slash <= 0 ? "/" : path.substring(0, slash);
    }

    /** This mount changed {@code path} (and so its parent directory's times or link count): {@link #changes} moves by one. */
    private void changed(String path) {
        changed(path, true);
    }

    /**
     * As {@link #changed(String)}; {@code nameChanged} false for a change that leaves the name
     * naming the same inode (a setattr, an extended attribute): the inode the name was looked up
     * as is still the answer.
     */
    private void changed(String path, boolean nameChanged) {
        if (knownFiles != null || dirAttrs != null) {
            changes.incrementAndGet();
            fileChanges.incrementAndGet();
        }
        if (path == null) {
            return;
        }
        if (knownFiles != null && nameChanged) {
            knownFiles.asMap().keySet().removeIf(k -> k.path().equals(path));
        }
        if (dirAttrs != null) {
            dirAttrs.invalidate(path);
            dirAttrs.invalidate(parentOf(path));
            fileAttrs.invalidate(path);
            createdFiles.invalidate(path);
        }
    }

    /**
     * This mount renamed {@code from} to {@code to}: what the rename moved or replaced is at or
     * under those two paths (a directory takes its subtree along), and it changed the entries of
     * their parents. Only those are forgotten; other directories did not change.
     */
    private void renamed(String from, String to) {
        if (knownFiles == null && dirAttrs == null) {
            return;
        }
        changes.incrementAndGet();
        fileChanges.incrementAndGet();
        java.util.function.Predicate<String> moved = p -> atOrUnder(p, from) || atOrUnder(p, to);
        if (knownFiles != null) {
            knownFiles.asMap().keySet().removeIf(k -> moved.test(k.path()));
        }
        if (dirAttrs != null) {
            dirAttrs.asMap().keySet().removeIf(moved);
            dirAttrs.invalidate(parentOf(from));
            dirAttrs.invalidate(parentOf(to));
            fileAttrs.asMap().keySet().removeIf(moved);
            createdFiles.asMap().keySet().removeIf(moved);
        }
    }

    private static boolean atOrUnder(String path, String dir) {
        return path.equals(dir) || (path.startsWith(dir) && path.charAt(dir.length()) == '/');
    }

    int access(Who w, String path) {
        return call("access", () -> {
            join(as(w).lstatAsync(p(path)), metaBound);
            return 0;
        });
    }

    int chmod(Who w, String path, long mode) {
        return setAttr("chmod", w, path, SetAttr.mode((int) (mode & 07777)));
    }

    /** uid or gid {@code -1} (as 32 or 64 bits) leaves it unchanged. */
    int chown(Who w, String path, long uid, long gid) {
        Integer u = uid == -1 || uid == 0xFFFFFFFFL ? null : (int) uid;
        Integer g = gid == -1 || gid == 0xFFFFFFFFL ? null : (int) gid;
        return setAttr("chown", w, path, SetAttr.owner(u, g));
    }

    /** Times in nanoseconds since the epoch, {@link SetAttr#NOW}, or null to leave one unchanged. */
    int utimens(Who w, String path, Long atime, Long mtime) {
        return setAttr("utimens", w, path, atime == null && mtime == null ? SetAttr.NONE : SetAttr.times(atime, mtime));
    }

    /**
     * A chmod, chown or utimens of {@code path}: to the inode this mount's lookup or create of the
     * path named a moment ago when there is one (no path walk; {@link StrataFileSystem#setAttrKnownAsync}),
     * and its answer is kept for libfuse's getattr of the same path that follows it on this thread
     * ({@link #justSet}). Forgets the kept attributes of the path, not its name.
     */
    private int setAttr(String op, Who w, String path, SetAttr attrs) {
        try {
            return call(op, () -> {
                if (attrs.equals(SetAttr.NONE)) {
                    return 0;
                }
                InodeId known = knownFiles == null || path == null ? null : knownFiles.getIfPresent(new Known(w.uid(), path));
                FileStatus st = join(as(w).setAttrKnownAsync(p(path), known, attrs), metaBound);
                if (path != null && !st.type().isDevice()) {
                    justSet.set(new JustSet(path, st, System.nanoTime()));
                }
                return 0;
            });
        } finally {
            changed(path, false);
        }
    }

    /** The attributes a setattr of {@code path} just answered, at {@code nanos}. */
    private record JustSet(String path, FileStatus status, long nanos) {
    }

    /**
     * What the last setattr on this thread answered: libfuse's high-level API asks for the path's
     * attributes right after each chmod, chown or utimens, on the same thread, to answer the
     * kernel's SETATTR; that question is answered with them. Cleared by every other request.
     */
    private final ThreadLocal<JustSet> justSet = new ThreadLocal<>();

    int truncate(Who w, String path, long size) {
        return mutation("truncate", path, () -> {
            join(as(w).truncateAsync(p(path), size), ioBound);
            return 0;
        });
    }

    /** Truncates through open file {@code fh} when it is open for writing, else by path. */
    int ftruncate(Who w, String path, long fh, long size) {
        return mutation("ftruncate", path, () -> {
            StrataFile h = open.get(fh);
            join(h != null && h.isWritable() ? h.truncateAsync(size) : as(w).truncateAsync(p(path), size), ioBound);
            return 0;
        });
    }

    /**
     * The cluster's capacity, or empty when the client follows no cluster manager or the manager
     * does not answer in time ({@code df} must not hang or fail for that: the namespace's own
     * figures are shown then).
     */
    private Optional<Capacity> capacityQuietly() {
        try {
            return join(fs.capacityAsync(), metaBound);
        } catch (RuntimeException e) {
            LOG.debug("statfs: no capacity from the cluster manager: {}", e.toString());
            return Optional.empty();
        }
    }

    int statfs(Fs out) {
        return call("statfs", () -> {
            StatFs s = join(fs.statfsAsync(), metaBound);
            long bsize = 4096;
            long blocks;
            long free;
            Optional<Capacity> c = capacityQuietly();
            if (c.isPresent()) {
                // the disks' own figures: what the storage nodes hold, however the namespace counts it
                blocks = c.get().totalBytes() / bsize;
                free = c.get().freeBytes() / bsize;
            } else {
                long used = (s.bytes() + bsize - 1) / bsize;
                blocks = Math.max(used, UNKNOWN_CAPACITY / bsize);
                free = blocks - used;
            }
            out.set(bsize, blocks, free, s.inodes() + (1L << 32), 1L << 32, 255);
            return 0;
        });
    }

    // ---- directories and names ----

    int mkdir(Who w, String path, long mode) {
        // the new directory's own attributes too: the walk into it that usually follows (a
        // create inside) does not look it up
        return dirChange("mkdir", path, () -> as(w).mkdirInAsync(p(path), (int) (mode & 07777))
                .thenApply(m -> Map.of(path, m.entry(), parentOf(path), m.dir())));
    }

    int rmdir(Who w, String path) {
        return dirChange("rmdir", path, () -> as(w).rmdirAsync(p(path)).thenApply(d -> parentOf(path, d)));
    }

    int unlink(Who w, String path) {
        return dirChange("unlink", path, () -> as(w).unlinkAsync(p(path)).thenApply(d -> parentOf(path, d)));
    }

    int rename(Who w, String oldpath, String newpath) {
        try {
            return call("rename", () -> {
                join(as(w).renameAsync(p(oldpath), p(newpath)), metaBound);
                return 0;
            });
        } finally {
            if (oldpath != null && newpath != null) {
                renamed(oldpath, newpath);
            }
        }
    }

    int symlink(Who w, String target, String linkpath) {
        return dirChange("symlink", linkpath, () -> as(w).symlinkInAsync(target, p(linkpath))
                .thenApply(m -> parentOf(linkpath, m.dir())));
    }

    int link(Who w, String oldpath, String newpath) {
        try {
            return metaChange("link", newpath, () -> as(w).linkAsync(p(oldpath), p(newpath)));
        } finally {
            changed(oldpath, false); // its link count and ctime moved
        }
    }

    /** The link's target, NUL-terminated and truncated to fit {@code buf}. */
    int readlink(Who w, String path, ByteBuffer buf) {
        return call("readlink", () -> {
            byte[] t = join(as(w).readlinkAsync(p(path)), metaBound).getBytes(StandardCharsets.UTF_8);
            if (buf.capacity() == 0) {
                return 0;
            }
            int n = Math.min(t.length, buf.capacity() - 1);
            buf.put(0, t, 0, n);
            buf.put(n, (byte) 0);
            return 0;
        });
    }

    /**
     * Regular files, FIFOs, sockets ({@code bind(2)} makes one) and devices. Only the name is
     * stored: the kernel gives a FIFO, socket or device inode its own operations, so their I/O
     * never reaches this mount.
     */
    int mknod(Who w, String path, long mode, long rdev) {
        return mutation("mknod", path, () -> {
            InodeType type = typeOf(mode);
            if (type == null) {
                return -Status.Errno.EINVAL;
            }
            long dev = type.isDevice() ? rdev & 0xFFFF_FFFFL : 0; // FUSE carries 32 bits; others have none
            join(as(w).mknodAsync(p(path), type, (int) (mode & 07777), dev), metaBound);
            return 0;
        });
    }

    int opendir(Who w, String path) {
        return call("opendir", () -> {
            FileStatus st = dirAttrs == null || path == null ? null : dirAttrs.getIfPresent(path);
            if (st == null) {
                st = join(as(w).statAsync(p(path)), metaBound);
            }
            return st.isDirectory() ? 0 : -Status.Errno.ENOTDIR;
        });
    }

    /**
     * Every entry of the directory, {@code .} and {@code ..} first (their type null), in one reply.
     * The directory is found by its path at each listing (another client may have put another
     * one there). While attributes are kept, the first {@link #LISTED_ATTRS} entries come with
     * theirs and are kept as a stat's would be (as NFS's READDIRPLUS and FUSE's readdirplus do):
     * {@code ls -l}, {@code find} and {@code rm -rf} then look each entry up without a round trip.
     * An open still walks to the file by path and asks the namespace.
     */
    int readdir(Who w, String path, Dir out) {
        return call("readdir", () -> {
            int attrsFor = fileAttrs == null ? 0 : LISTED_ATTRS;
            long before = changes.get();
            long beforeFile = fileChanges.get();
            StrataFileSystem as = as(w);
            List<DirEntry> entries = join(as.listAsync(p(path), attrsFor), metaBound.multipliedBy(4));
            out.add(".", null, 0);
            out.add("..", null, 0);
            for (DirEntry e : entries) {
                if (e.attrs() != null) {
                    keepFetched(path.equals("/") ? "/" + e.name() : path + "/" + e.name(), as.entryStatus(e.attrs()), before, beforeFile, null);
                }
                if (!out.add(e.name(), e.type(), e.inode().value())) {
                    break;
                }
            }
            return 0;
        });
    }

    /** How long a setattr's answer waits for libfuse's getattr that follows it (it comes at once). */
    private static final long JUST_SET_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    /** How many entries of a directory a readdir asks with their attributes (the rest come without). */
    static final int LISTED_ATTRS = 1_000;

    /**
     * Keeps what a lookup or a listing answered for the entry at {@code path}, asked when
     * {@link #changes} and {@link #fileChanges} stood at {@code before} and {@code beforeFile}:
     * a directory's attributes, a file's ({@link #keepFile}) and, for a lookup ({@code known} not
     * null), the inode the name was looked up as. Nothing that a change of this mount crossed.
     */
    private void keepFetched(String path, EntryStatus e, long before, long beforeFile, Known known) {
        FileStatus st = e.status();
        if (dirAttrs != null && st.isDirectory()) {
            keepUnlessCrossed(dirAttrs, path, st, changes, before);
        } else if (st.isFile()) {
            keepFile(path, e, beforeFile);
            if (known != null) {
                keepUnlessCrossed(knownFiles, known, st.inode(), changes, before);
            }
        }
    }

    /** Puts {@code v} at {@code k}, and takes it out again if {@code counter} moved past {@code expected} meanwhile. */
    private static <K, V> void keepUnlessCrossed(Cache<K, V> cache, K k, V v, AtomicLong counter, long expected) {
        if (counter.get() != expected) {
            return;
        }
        cache.put(k, v);
        if (counter.get() != expected) {
            cache.invalidate(k);
        }
    }

    // ---- files ----

    int open(Who w, String path, int flags, Opened out) {
        return call("open", () -> {
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
            InodeId known = knownFiles == null || path == null ? null : knownFiles.getIfPresent(new Known(w.uid(), path));
            if (known == null && fileAttrs != null && path != null) {
                // the kernel's lookup was answered from kept attributes (a listing's): their inode,
                // as old as they are (the open asks the namespace for everything else)
                EntryStatus kept = fileAttrs.getIfPresent(path);
                known = kept == null ? null : kept.status().inode();
            }
            long before = fileChanges.get();
            StrataFile h = join(as(w).openKnownAsync(p(path), known, of), ioBound);
            register(h, flags, out);
            if (fileAttrs != null && path != null) {
                // the namespace's answer of a moment ago: a stat right after (or during) the read sees it
                Optional<FileStatus> now = h.statAtOpen();
                if (now.isPresent()) {
                    keepFile(path, new EntryStatus(now.get(), 0), before);
                } else {
                    fileAttrs.invalidate(path);
                }
            }
            return 0;
        });
    }

    int create(Who w, String path, long mode, int flags, Opened out) {
        long before = changes.get();
        InodeId[] made = new InodeId[1];
        long[] madeFh = new long[1];
        boolean[] keepable = new boolean[1];
        int r = dirChange("create", path, () -> {
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
            StrataFile h = join(as(w).openAsync(p(path), of, (int) (mode & 07777)), ioBound);
            long fh = register(h, flags, out);
            justCreated.add(fh);
            made[0] = h.inode();
            madeFh[0] = fh;
            keepable[0] = h.policy().consistency() != Consistency.STRICT; // a strict file's stat always asks
            return CompletableFuture.completedFuture(parentOf(path, h.dirAtCreate().orElse(null)));
        });
        if (r == 0 && made[0] != null && knownFiles != null && path != null) {
            // the name the create made (its own change is the one expected): setattrs by path
            // that follow (tar's fchmod, fchown and utimensat of the new file) go to it without
            // walking the path
            keepUnlessCrossed(knownFiles, new Known(w.uid(), path), made[0], changes, before + 1);
        }
        if (r == 0 && made[0] != null && createdFiles != null && path != null && keepable[0]) {
            createdPathOf.put(madeFh[0], path);
            keepUnlessCrossed(createdFiles, path, madeFh[0], changes, before + 1);
        }
        return r;
    }

    private long register(StrataFile h, int flags, Opened out) {
        long fh = nextFh.incrementAndGet();
        open.put(fh, h);
        boolean directIo = false;
        boolean keepCache = false;
        Consistency mode = h.policy().consistency();
        if (mode == Consistency.STRICT || (flags & O_DIRECT) != 0) {
            directIo = true;
        } else if (mode == Consistency.IMMUTABLE) {
            keepCache = true;
        } else {
            Long cached = pageCacheVersion.put(h.inode(), h.dataVersion());
            keepCache = cached != null && cached == h.dataVersion();
        }
        out.set(fh, directIo, keepCache);
        return fh;
    }

    /** Reads into {@code dst} (libfuse's buffer, borrowed for this call) from {@code offset}; the byte count. */
    int read(long fh, ByteBuffer dst, long offset) {
        readBytes.record(dst.remaining());
        int length = dst.remaining();
        return call("read", () -> handleName(fh) + " at " + offset + " +" + length, () -> {
            ByteBuf b = join(handle(fh).readAsync(offset, dst.remaining()), ioBound);
            try {
                int n = b.readableBytes();
                if (n > 0) {
                    b.getBytes(b.readerIndex(), dst.duplicate().limit(dst.position() + n));
                }
                return n;
            } finally {
                b.release();
            }
        });
    }

    /** Writes {@code src} (libfuse's buffer, borrowed: wrapped without a copy while this thread waits) at {@code offset}. */
    int write(long fh, ByteBuffer src, long offset) {
        writeBytes.record(src.remaining());
        int length = src.remaining();
        return call("write", () -> handleName(fh) + " at " + offset + " +" + length, () -> {
            StrataFile h = handle(fh);
            int n = src.remaining();
            join(h.writeAsync(offset, Unpooled.wrappedBuffer(src)), ioBound);
            return n;
        });
    }

    int flush(long fh) {
        return call("flush", () -> {
            StrataFile h = handle(fh);
            if (h.isWritable()) {
                notJustCreated(fh); // the publish moves its times
                join(h.publishAsync(), ioBound);
                pageCacheVersion.remove(h.inode()); // published: the data version moved on
            }
            return 0;
        });
    }

    int fsync(long fh) {
        return call("fsync", () -> {
            StrataFile h = handle(fh);
            notJustCreated(fh);
            join(h.fsyncAsync(), ioBound);
            if (h.isWritable()) {
                pageCacheVersion.remove(h.inode());
            }
            return 0;
        });
    }

    /** {@code fh}'s create answer no longer answers for its path ({@link #createdFiles}). */
    private void notJustCreated(long fh) {
        String path = createdPathOf.remove(fh);
        if (path != null) {
            createdFiles.asMap().remove(path, fh);
        }
    }

    int release(long fh) {
        return call("release", () -> {
            StrataFile h = open.remove(fh);
            justCreated.remove(fh);
            notJustCreated(fh);
            if (h != null) {
                if (h.isWritable()) {
                    forgetFile(h.inode()); // kept before this handle opened; nothing is kept while it is open
                }
                join(h.closeAsync(), ioBound);
                if (h.isWritable()) {
                    pageCacheVersion.remove(h.inode());
                    forgetFile(h.inode());
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
     * How getxattr and listxattr answer with {@code v}: its length when {@code buf} is empty (the
     * caller asks how much room it needs), ERANGE when it does not fit, else its length once
     * copied into {@code buf}.
     */
    private static int copyOut(byte[] v, ByteBuffer buf) {
        if (buf.capacity() == 0) {
            return v.length;
        }
        if (buf.capacity() < v.length) {
            return -FuseErrors.ERANGE;
        }
        buf.put(0, v);
        return v.length;
    }

    /** {@code value}'s capacity is the caller's size (0: it asks how much room it needs). */
    int getxattr(Who w, String path, String name, ByteBuffer value) {
        if (unsupportedNamespace(name)) {
            return -Status.Errno.ENODATA;
        }
        return call("getxattr", () -> {
            StrataFileSystem as = as(w);
            if (CacheXattrs.handles(name)) {
                // statistics change between the size probe and the read: the probe leaves room
                byte[] v = cache.get(as, p(path), "/".equals(path), name);
                return value.capacity() == 0 ? v.length + 256 : copyOut(v, value);
            }
            if (CheckpointXattrs.handles(name)) {
                // a status changes between the size probe and the read: the probe leaves room
                byte[] v = checkpoints.get(as, p(path), name);
                return value.capacity() == 0 ? v.length + 256 : copyOut(v, value);
            }
            byte[] v = join(PolicyXattrs.handles(name) ? PolicyXattrs.get(as, p(path), name) : as.getXattrAsync(p(path), name), metaBound);
            return copyOut(v, value);
        });
    }

    int setxattr(Who w, String path, String name, ByteBuffer value, int flags) {
        if (unsupportedNamespace(name)) {
            return -Status.Errno.ENOTSUP;
        }
        return mutation("setxattr", path, () -> {
            byte[] v = new byte[value.remaining()];
            value.get(value.position(), v);
            StrataFileSystem as = as(w);
            if (CacheXattrs.handles(name)) {
                if (!name.equals(CacheXattrs.DROP)) {
                    return -Status.Errno.EPERM; // user.strata.cache is read-only
                }
                cache.drop(as, p(path), "/".equals(path));
                return 0;
            }
            if (CheckpointXattrs.handles(name)) {
                checkpoints.set(as, p(path), name, v);
                return 0;
            }
            join(PolicyXattrs.handles(name) ? PolicyXattrs.set(as, p(path), name, v) : as.setXattrAsync(p(path), name, v, flags), metaBound);
            return 0;
        });
    }

    int listxattr(Who w, String path, ByteBuffer list) {
        return call("listxattr", () -> {
            // only stored attributes: the virtual ones (user.strata.policy, .layout, .cache) are
            // read by name; listed, cp -a / rsync -X would copy them onto other files (setting a
            // directory's whole effective policy as overrides, or failing on read-only names)
            List<String> names = join(as(w).listXattrsAsync(p(path)), metaBound);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (String n : names) {
                out.writeBytes(n.getBytes(StandardCharsets.UTF_8));
                out.write(0);
            }
            return copyOut(out.toByteArray(), list);
        });
    }

    int removexattr(Who w, String path, String name) {
        if (unsupportedNamespace(name)) {
            return -Status.Errno.ENODATA;
        }
        return mutation("removexattr", path, () -> {
            StrataFileSystem as = as(w);
            if (CacheXattrs.handles(name) || CheckpointXattrs.handles(name)) {
                return -Status.Errno.EPERM;
            }
            join(PolicyXattrs.handles(name) ? PolicyXattrs.remove(as, p(path), name) : as.removeXattrAsync(p(path), name), metaBound);
            return 0;
        });
    }
}
