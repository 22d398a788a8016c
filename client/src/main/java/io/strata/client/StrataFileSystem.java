package io.strata.client;

import io.strata.protocol.meta.MetaMessages;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.RpcClient;
import io.strata.core.tier.Tier;
import io.strata.core.util.Futures;
import io.strata.l1.L1Tier;
import io.strata.l2.pool.L2Tier;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.DeviceNumber;
import io.strata.protocol.meta.DirPage;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.Meta;
import io.strata.protocol.meta.Names;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.PolicyInfo;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.StatFs;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaDiscovery;
import io.strata.placement.RoutingSource;
import io.strata.placement.StaticRoutingSource;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.config.policy.Policy;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The Strata file system for Java programs (dataloaders, trainers, tools) without FUSE: the
 * namespace through the meta service, file data through the tier stack (L1 when configured and
 * the file's policy allows it, over L3 chains).
 *
 * <pre>{@code
 * try (StrataFileSystem fs = StrataFileSystem.connect(ClientConfig.read(ConfigNode.load(file)))) {
 *     try (StrataFile f = fs.create("/data/a.bin")) {
 *         f.write(0, bytes, 0, bytes.length);
 *     }                                                   // close publishes length and data version
 *     try (StrataFile f = fs.open("/data/a.bin", EnumSet.of(OpenFlag.READ), 0)) {
 *         f.read(0, buffer);
 *     }
 * }
 * }</pre>
 *
 * <p>Every operation has an asynchronous form ({@code xxxAsync}, failing its future with a
 * {@link StrataException} whose status maps to an errno) and a blocking one that waits at most
 * the configured timeout. Operations run as one {@link Caller} (uid, gid, groups) checked by the
 * namespace: the current process's by default, another through {@link #as}. Paths are absolute;
 * operations on a path act on the entry itself ({@code lstat}, {@code chmod} of a symlink is the
 * symlink's) except {@link #stat} and {@link #open}, which follow symlinks.
 *
 * <p>Consistency follows each file's directory policy: {@code close-to-open} (an open sees every
 * write published by a close or fsync before it; data caches are keyed by the data version
 * checked at open), {@code strict} (no client data cache, no readahead, writes go straight to
 * the chain), {@code immutable} (cached without revalidation; a file already written cannot be
 * opened for writing again: READ_ONLY).
 */
public final class StrataFileSystem implements AutoCloseable {
    private static final int READDIR_PAGE = 1000;

    private final ClientCore core;
    private final Caller caller;
    private final boolean owner;

    private record CachedCapacity(Capacity value, long atNanos) {
    }

    /** The last {@link #capacityAsync} answer and when it came. */
    private volatile CachedCapacity capacity;

    private StrataFileSystem(ClientCore core, Caller caller, boolean owner) {
        this.core = core;
        this.caller = caller;
        this.owner = owner;
    }

    // ---- construction ----

    /** Connects with a context of its own (closed with the file system). */
    public static StrataFileSystem connect(ClientConfig config) {
        NodeContext ctx = NodeContext.builder(config.name()).build();
        try {
            return connect(ctx, config, List.of(ctx));
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
    }

    /** Connects within {@code ctx} (which stays the caller's). */
    public static StrataFileSystem connect(NodeContext ctx, ClientConfig config) {
        return connect(ctx, config, List.of());
    }

    private static StrataFileSystem connect(NodeContext ctx, ClientConfig config, List<AutoCloseable> extra) {
        List<AutoCloseable> closeables = new ArrayList<>();
        try {
            RoutingSource routing;
            List<InetSocketAddress> metaAddrs = config.meta();
            if (!config.mgmtd().isEmpty()) {
                MgmtdClient mgmtd = new MgmtdClient(ctx, config.mgmtd());
                closeables.add(mgmtd);
                if (config.staticRouting().isPresent()) {
                    routing = new StaticRoutingSource(config.staticRouting().get());
                } else {
                    ManagerRoutingSource m = ManagerRoutingSource.start(ctx, mgmtd);
                    closeables.add(0, m);
                    Futures.join(m.refreshAsync(0), config.metaTimeout());
                    routing = m;
                }
                if (metaAddrs.isEmpty()) {
                    metaAddrs = MetaDiscovery.find(mgmtd, config.metaTimeout());
                }
            } else {
                routing = new StaticRoutingSource(config.staticRouting().orElseThrow());
            }
            RpcClient metaRpc = new RpcClient(ctx, MetaMessages.PROTOCOL, config.rpc());
            closeables.add(0, metaRpc);
            Duration attempt = config.metaTimeout().compareTo(Duration.ofSeconds(10)) < 0 ? config.metaTimeout() : Duration.ofSeconds(10);
            long attempts = Math.max(1, config.metaTimeout().toMillis() / Math.max(1, attempt.toMillis()));
            Meta meta = new MetaClient(ctx, metaRpc, metaAddrs, attempt, (int) Math.max(attempts, 2L * metaAddrs.size()));
            closeables.addAll(extra);
            return create(ctx, config, meta, routing, closeables);
        } catch (RuntimeException e) {
            for (AutoCloseable a : closeables) {
                try {
                    a.close();
                } catch (Exception ignored) {
                    // best effort
                }
            }
            throw e;
        }
    }

    /**
     * A file system over a given namespace ({@code meta}: an in-process {@code MetaStore} or a
     * {@code MetaClient}) and routing, building the tier stack from {@code config}.
     * {@code closeables} are closed with it, after the tiers.
     */
    public static StrataFileSystem create(NodeContext ctx, ClientConfig config, Meta meta, RoutingSource routing,
                                          List<AutoCloseable> closeables) {
        return create(ctx, config, meta, routing, closeables, t -> t);
    }

    /** As above, with the L3 tier wrapped by {@code wrapL3} (tests that count or delay tier calls). */
    static StrataFileSystem create(NodeContext ctx, ClientConfig config, Meta meta, RoutingSource routing,
                                   List<AutoCloseable> closeables, java.util.function.UnaryOperator<Tier> wrapL3) {
        Tier l3 = wrapL3.apply(new StorageClient(ctx, routing, config.rpc(), StorageClientOptions.DEFAULTS
                .withAttemptTimeout(config.attemptTimeout()).withReadPolicy(config.readPolicy()).withInFlight(config.inFlight())));
        TierStack.Builder stack = TierStack.over(l3);
        // Every file passes L2: a staged file's chunks live there, and any file may have been
        // prefetched there for a job (its open says where); other calls go straight below.
        stack.layer(below -> new L2Tier(ctx, below, meta, routing, config.rpc()), p -> true);
        config.l1().ifPresent(l1 -> stack.layer(below -> new L1Tier(ctx, l1, below), Policy::l1));
        ClientCore core = new ClientCore(ctx, config, meta, stack.build(), closeables);
        return new StrataFileSystem(core, defaultCaller(), true);
    }

    /** The client's internals (this package's tests). */
    ClientCore core() {
        return core;
    }

    /** The same file system acting as {@code c} (shares everything; closing the view closes nothing). */
    public StrataFileSystem as(Caller c) {
        return new StrataFileSystem(core, c, false);
    }

    /** Checkpoint generations (commit, wait, latest, verify) as this file system's caller. */
    public Checkpoints checkpoints() {
        return new Checkpoints(this, core, caller);
    }

    public Caller caller() {
        return caller;
    }

    /** The slow operations of this client's process (its calls; a mount's FUSE requests). */
    public io.strata.core.trace.SlowOps slowOps() {
        return core.ctx().slowOps();
    }

    public ClientConfig config() {
        return core.config();
    }

    /** The namespace this client talks to (tools that need operations by inode). */
    public Meta meta() {
        return core.meta();
    }

    /** The L3 tier (tools, the garbage collector's reclaimer). */
    public Tier l3() {
        return core.tiers().l3();
    }

    /**
     * An optional capability of this client's tier stack, from the top-most tier that has it:
     * {@code facet(CacheControl.class)} is the L1 cache when the config has one
     * ({@code strata cache stat|drop} through a mount).
     */
    public <T> Optional<T> facet(Class<T> type) {
        return core.tiers().facet(type);
    }

    /** The process's own uid and gid (root when they cannot be read). */
    static Caller defaultCaller() {
        try {
            com.sun.security.auth.module.UnixSystem u = new com.sun.security.auth.module.UnixSystem();
            long[] groups = u.getGroups();
            int n = groups == null ? 0 : Math.min(groups.length, Caller.MAX_GROUPS);
            int[] g = new int[n];
            for (int i = 0; i < n; i++) {
                g[i] = (int) groups[i];
            }
            return new Caller((int) u.getUid(), (int) u.getGid(), g);
        } catch (Throwable t) {
            return Caller.ROOT;
        }
    }

    private <T> T metaJoin(CompletableFuture<T> f) {
        return Futures.join(f, core.config().metaTimeout().plusSeconds(1));
    }

    private <T> T ioJoin(CompletableFuture<T> f) {
        return Futures.join(f, core.config().metaTimeout().plus(core.config().ioTimeout()).plusSeconds(1));
    }

    // ---- attributes ----

    /** The entry at {@code path} itself (a symlink is not followed). */
    public CompletableFuture<FileStatus> lstatAsync(String path) {
        return lookup(path).thenApply(a -> FileStatus.of(a, core.sizeOf(a)));
    }

    public FileStatus lstat(String path) {
        return metaJoin(lstatAsync(path));
    }

    /** As {@link #lstatAsync}, with a device's number (what {@code stat(2)} fills in for any type). */
    public CompletableFuture<EntryStatus> lstatEntryAsync(String path) {
        return lookup(path).thenApply(a -> new EntryStatus(FileStatus.of(a, core.sizeOf(a)), a.rdev()));
    }

    public EntryStatus lstatEntry(String path) {
        return metaJoin(lstatEntryAsync(path));
    }

    /**
     * Whether a handle of this client has the file open for writing: its size and times here
     * then move with every write, so attributes fetched before are not an answer (a mount that
     * keeps attributes asks again).
     */
    public boolean writingHere(InodeId inode) {
        return core.writingHere(inode);
    }

    /** The file or directory {@code path} names, symlinks followed. */
    public CompletableFuture<FileStatus> statAsync(String path) {
        return resolve(path).thenApply(a -> FileStatus.of(a, core.sizeOf(a)));
    }

    public FileStatus stat(String path) {
        return metaJoin(statAsync(path));
    }

    /** Whether {@code path} exists (symlinks followed). */
    public boolean exists(String path) {
        try {
            stat(path);
            return true;
        } catch (StrataException e) {
            if (e.status() == Status.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    /**
     * Sets mode, owner or times (not a size) of the file {@code path} named as inode
     * {@code known} a moment ago (a FUSE setattr by path follows the kernel's lookup or the create
     * of the same path): one Setattr call, no path walk. If that inode is gone or has no name
     * left, the path is walked as {@link #setAttrAsync} does. With {@code known} null, or a size,
     * it is {@link #setAttrAsync}.
     */
    public CompletableFuture<FileStatus> setAttrKnownAsync(String path, InodeId known, SetAttr attrs) {
        if (known == null || attrs.size() != null) {
            return setAttrAsync(path, attrs);
        }
        return core.publishBeforeTimes(known, attrs).thenCompose(v -> core.meta().setattrAsync(caller, known, attrs, null)).handle((a, e) -> {
            if (e == null && a.nlink() > 0) {
                return CompletableFuture.completedFuture(FileStatus.of(a, core.sizeOf(a)));
            }
            StrataException se = e == null ? null : StrataException.wrap(e);
            if (se == null || se.status() == Status.NOT_FOUND || se.status() == Status.STALE_HANDLE) {
                return setAttrAsync(path, attrs);
            }
            return CompletableFuture.<FileStatus>failedFuture(se);
        }).thenCompose(x -> x);
    }

    /** Sets mode, owner, size or times of the entry at {@code path}; a size truncates (see {@link #truncateAsync}). */
    public CompletableFuture<FileStatus> setAttrAsync(String path, SetAttr attrs) {
        return lookup(path).thenCompose(a -> {
            CompletableFuture<InodeAttrs> sized = attrs.size() == null ? CompletableFuture.completedFuture(a)
                    : core.truncate(caller, a, attrs.size());
            SetAttr rest = new SetAttr(attrs.mode(), attrs.uid(), attrs.gid(), null, attrs.atimeNanos(), attrs.mtimeNanos());
            if (rest.equals(SetAttr.NONE)) {
                return sized;
            }
            return sized.thenCompose(x -> core.publishBeforeTimes(a.id(), rest)).thenCompose(x -> core.meta().setattrAsync(caller, a.id(), rest, null));
        }).thenApply(a -> FileStatus.of(a, core.sizeOf(a)));
    }

    public void chmod(String path, int mode) {
        metaJoin(setAttrAsync(path, SetAttr.mode(mode)));
    }

    public void chown(String path, Integer uid, Integer gid) {
        metaJoin(setAttrAsync(path, SetAttr.owner(uid, gid)));
    }

    /** Sets times (ns since the epoch; {@link SetAttr#NOW} for now; null leaves one). */
    public void setTimes(String path, Long atimeNanos, Long mtimeNanos) {
        metaJoin(setAttrAsync(path, SetAttr.times(atimeNanos, mtimeNanos)));
    }

    /** Sets a file's length: bytes past it are dropped (a later extension reads zeros). */
    public CompletableFuture<Void> truncateAsync(String path, long size) {
        return resolve(path).thenCompose(a -> core.truncate(caller, a, size)).thenAccept(a -> { });
    }

    public void truncate(String path, long size) {
        ioJoin(truncateAsync(path, size));
    }

    // ---- directories ----

    public CompletableFuture<FileStatus> mkdirAsync(String path, int mode) {
        return mkdirInAsync(path, mode).thenApply(Made::entry);
    }

    /** {@link #mkdirAsync}, answering its parent directory after the change too. */
    public CompletableFuture<Made> mkdirInAsync(String path, int mode) {
        List<String> parts = PathNames.components(path);
        return core.inParent(caller, parts, (p, n) -> core.meta().mkdirInAsync(caller, p, n, mode, null)).thenApply(StrataFileSystem::made);
    }

    private static Made made(io.strata.protocol.meta.InDir m) {
        return new Made(FileStatus.of(m.attrs()), FileStatus.of(m.dir()));
    }

    public FileStatus mkdir(String path, int mode) {
        return metaJoin(mkdirAsync(path, mode));
    }

    /** Creates {@code path} and any missing parents (mode 0755); existing directories are fine. */
    public void mkdirs(String path) {
        List<String> parts = PathNames.components(path);
        for (int i = 1; i <= parts.size(); i++) {
            String p = PathNames.join(parts, 0, i);
            try {
                mkdir(p, 0755);
            } catch (StrataException e) {
                if (e.status() != Status.ALREADY_EXISTS || !lstat(p).isDirectory()) {
                    throw e;
                }
            }
        }
    }

    /** Every entry of the directory (symlinks followed to it), in name order; pages internally. */
    public CompletableFuture<List<DirEntry>> listAsync(String path, boolean withAttrs) {
        return listAsync(path, withAttrs ? Integer.MAX_VALUE : 0);
    }

    /**
     * Every entry of the directory {@code path} (symlinks followed to it), in name order; the
     * first {@code attrsFor} entries (rounded up to a page) come with their attributes
     * ({@link DirEntry#attrs}), the rest without: a huge directory's attributes are not all read
     * and held at once.
     */
    public CompletableFuture<List<DirEntry>> listAsync(String path, int attrsFor) {
        return resolve(path).thenCompose(d -> {
            if (!d.isDirectory()) {
                throw new StrataException(Status.NOT_A_DIRECTORY, "\"" + path + "\" is not a directory");
            }
            List<DirEntry> out = new ArrayList<>();
            return page(d.id(), null, attrsFor, out).thenApply(v -> out);
        });
    }

    private CompletableFuture<Void> page(InodeId dir, String after, int attrsFor, List<DirEntry> out) {
        return core.meta().readdirAsync(caller, dir, after, READDIR_PAGE, out.size() < attrsFor).thenCompose((DirPage p) -> {
            out.addAll(p.entries());
            return p.next() == null ? CompletableFuture.completedFuture(null) : page(dir, p.next(), attrsFor, out);
        });
    }

    /**
     * What {@link #lstatEntryAsync} answers for an entry whose attributes a listing returned. A
     * listing may answer late: it is not taken as the latest word on a file open here (its
     * length there stays what the latest open, publish or lookup said).
     */
    public EntryStatus entryStatus(InodeAttrs a) {
        FileState s = a.isFile() ? core.open(a.id()) : null;
        return new EntryStatus(s == null ? FileStatus.of(a) : FileStatus.of(a, Math.max(a.length(), s.length())), a.rdev());
    }

    public List<DirEntry> list(String path) {
        return Futures.join(listAsync(path, false), core.config().metaTimeout().multipliedBy(4));
    }

    /**
     * Removes a file or symlink ({@code unlink}); IS_A_DIRECTORY for a directory. Answers the
     * directory it was removed from, as the namespace answered right after the removal (its new
     * times), so that a caller keeping directory attributes need not ask again.
     */
    public CompletableFuture<FileStatus> unlinkAsync(String path) {
        List<String> parts = PathNames.components(path);
        return core.inParent(caller, parts, (p, n) -> pinIfOpen(p, n).thenCompose(v -> core.meta().unlinkAsync(caller, p, n, null)))
                .thenApply(dir -> removed(path, dir));
    }

    /**
     * Before a name goes: when {@code parent/name} is a file this client reads without a
     * session, a session keeps it for those readers ({@link ClientCore#pin}), so that a file
     * unlinked here while open here stays readable until closed. Costs a lookup only while some
     * handle here reads without a session.
     */
    private CompletableFuture<Void> pinIfOpen(InodeId parent, String name) {
        if (!core.readsUntracked()) {
            return CompletableFuture.completedFuture(null);
        }
        return core.meta().lookupAsync(caller, parent, name).handle((a, e) -> a)
                .thenCompose(a -> a == null || !a.isFile() ? CompletableFuture.completedFuture(null) : core.pin(a.id()));
    }

    /** Removes an empty directory; answers its parent as {@link #unlinkAsync} does (one link fewer). */
    public CompletableFuture<FileStatus> rmdirAsync(String path) {
        List<String> parts = PathNames.components(path);
        return core.inParent(caller, parts, (p, n) -> core.meta().rmdirAsync(caller, p, n, null))
                .thenApply(dir -> removed(path, dir));
    }

    private FileStatus removed(String path, InodeAttrs dir) {
        core.forget(PathNames.normalize(path));
        return FileStatus.of(dir);
    }

    /** Removes a file, symlink or empty directory. */
    public CompletableFuture<Void> deleteAsync(String path) {
        return lookup(path).thenCompose(a -> a.isDirectory() ? rmdirAsync(path) : unlinkAsync(path)).thenRun(() -> { });
    }

    public void delete(String path) {
        metaJoin(deleteAsync(path));
    }

    /** Moves {@code src} to {@code dst} atomically, replacing a file there (rename(2)). */
    public CompletableFuture<Void> renameAsync(String src, String dst) {
        List<String> s = PathNames.components(src);
        List<String> d = PathNames.components(dst);
        // a file renamed over loses its name; one libfuse hides (renames to .fuse_hidden*, unlinked
        // while open through the mount) keeps it, but only for as long as it is open
        boolean hiding = PathNames.name(d).startsWith(Names.LIBFUSE_HIDDEN);
        return core.dir(caller, PathNames.parent(s), true).thenCompose(sp -> core.dir(caller, PathNames.parent(d), true)
                .thenCompose(dp -> pinIfOpen(dp, PathNames.name(d))
                        .thenCompose(v -> hiding ? pinIfOpen(sp, PathNames.name(s)) : CompletableFuture.completedFuture(null))
                        .thenCompose(v -> core.meta().renameAsync(caller, sp, PathNames.name(s), dp, PathNames.name(d), false, null))))
                .thenRun(() -> {
                    core.forget(PathNames.normalize(src));
                    core.forget(PathNames.normalize(dst));
                });
    }

    public void rename(String src, String dst) {
        metaJoin(renameAsync(src, dst));
    }

    // ---- special files ----

    /**
     * mknod(2): a FIFO, socket, character or block device at {@code path} (a name with a type,
     * mode, owner and, for a device, its number {@code rdev} as {@link DeviceNumber} encodes it;
     * 0 for the others), or an empty regular file for {@link InodeType#FILE}. Devices need root
     * (NOT_PERMITTED). The namespace stores no data for special files and the client never opens
     * them: through a mount the kernel serves a FIFO's, socket's or device's I/O itself.
     */
    public CompletableFuture<FileStatus> mknodAsync(String path, InodeType type, int mode, long rdev) {
        List<String> parts;
        try {
            parts = PathNames.components(path);
            if (type != InodeType.FILE && (type == null || !type.isSpecial())) {
                throw new StrataException(Status.INVALID_ARGUMENT, "mknod makes files, FIFOs, sockets and devices, not a " + type);
            }
            if (type == InodeType.FILE && rdev != 0) {
                throw new StrataException(Status.INVALID_ARGUMENT, "mknod: a regular file has no device number (got " + rdev + ")");
            }
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return core.inParent(caller, parts, (p, n) -> type == InodeType.FILE
                ? core.meta().createAsync(caller, p, n, mode, true, null)
                : core.meta().mknodAsync(caller, p, n, type, mode, rdev, null)).thenApply(FileStatus::of);
    }

    public FileStatus mknod(String path, InodeType type, int mode, long rdev) {
        return metaJoin(mknodAsync(path, type, mode, rdev));
    }

    // ---- links ----

    public CompletableFuture<FileStatus> symlinkAsync(String target, String linkPath) {
        return symlinkInAsync(target, linkPath).thenApply(Made::entry);
    }

    /** {@link #symlinkAsync}, answering the link's directory after the change too. */
    public CompletableFuture<Made> symlinkInAsync(String target, String linkPath) {
        List<String> parts = PathNames.components(linkPath);
        return core.inParent(caller, parts, (p, n) -> core.meta().symlinkInAsync(caller, p, n, target, null)).thenApply(StrataFileSystem::made);
    }

    public void symlink(String target, String linkPath) {
        metaJoin(symlinkAsync(target, linkPath));
    }

    public CompletableFuture<String> readlinkAsync(String path) {
        return lookup(path).thenCompose(a -> core.meta().readlinkAsync(caller, a.id()));
    }

    public String readlink(String path) {
        return metaJoin(readlinkAsync(path));
    }

    /** A new name {@code newPath} for the file at {@code existing} (hard link). */
    public CompletableFuture<FileStatus> linkAsync(String existing, String newPath) {
        List<String> parts = PathNames.components(newPath);
        return lookup(existing).thenCompose(a -> core.inParent(caller, parts, (p, n) -> core.meta().linkAsync(caller, a.id(), p, n, null)))
                .thenApply(a -> FileStatus.of(a, core.sizeOf(a)));
    }

    public void link(String existing, String newPath) {
        metaJoin(linkAsync(existing, newPath));
    }

    // ---- files ----

    /**
     * Opens a file. With CREATE the file is created (with {@code mode}) or found and opened in one
     * namespace operation, as open(2) with O_CREAT: a file this call created opens as asked
     * whatever {@code mode} says (mode 0 included); an existing one is checked against its mode.
     * WRITE of a file in an {@code immutable} directory that was already written fails with
     * READ_ONLY.
     *
     * <p>The handle acts through its session ({@link Caller#session}): its truncate is allowed by
     * the write access checked at open, as ftruncate(2) of a descriptor is, whatever the file's
     * mode became since.
     */
    public CompletableFuture<StrataFile> openAsync(String path, Set<OpenFlag> flags, int mode) {
        boolean write = flags.contains(OpenFlag.WRITE);
        boolean read = flags.contains(OpenFlag.READ) || !write;
        int f = (read ? OpenFlags.READ : 0) | (write ? OpenFlags.WRITE : 0);
        CompletableFuture<OpenResult> opened;
        if (flags.contains(OpenFlag.CREATE)) {
            List<String> parts = PathNames.components(path);
            boolean exclusive = flags.contains(OpenFlag.EXCLUSIVE);
            opened = core.inParent(caller, parts, (p, n) -> core.meta().createOpenAsync(caller, p, n, mode, exclusive, f, core.clientId(), null));
        } else {
            opened = resolve(path).thenCompose(a -> {
                if (a.isDirectory()) {
                    throw new StrataException(Status.IS_A_DIRECTORY, "\"" + path + "\" is a directory");
                }
                if (!a.isFile()) {
                    throw new StrataException(Status.INVALID_ARGUMENT, "\"" + path + "\" is not a regular file");
                }
                return core.meta().openAsync(caller, a.id(), f, core.clientId(), null);
            });
        }
        return opened.thenCompose(o -> handle(o, read, write, flags.contains(OpenFlag.TRUNCATE), path));
    }

    /** The handle over session {@code o}: every namespace call it makes acts through that session. */
    private CompletableFuture<StrataFile> handle(OpenResult o, boolean read, boolean write, boolean truncate, String path) {
        Caller through = caller.through(o.sessionId());
        InodeAttrs now = o.attrs();
        if (write && FilePolicy.writtenImmutable(now)) {
            core.meta().closeAsync(through, now.id(), o.sessionId(), 0, false, null);
            throw new StrataException(Status.READ_ONLY, "\"" + path + "\" is in an immutable directory and was already written");
        }
        FileState s = core.acquire(now);
        s.cached(o.cached());
        StrataFile h = new StrataFile(core, s, through, o.sessionId(), read, write);
        h.opened(now, o.dir());
        if (!write || !truncate || (now.length() == 0 && now.chunkHighWater() == 0 && s.length() == 0)) {
            return CompletableFuture.completedFuture(h);
        }
        return core.truncate(through, s, 0).handle((x, e) -> {
            if (e != null) {
                h.closeAsync();
                throw StrataException.wrap(e);
            }
            h.truncatedAtOpen(x.dataVersion());
            return h;
        });
    }

    /**
     * Opens (without CREATE) the file {@code path} named a moment ago as inode {@code known}
     * (a FUSE open follows the kernel's lookup of the same path): one Open call, no path walk.
     * The Open answers the file's current attributes and data version, so what the handle reads
     * is as fresh as with {@link #openAsync}; only the name-to-inode step is the caller's, as the
     * kernel's dentry cache is. When that inode is gone or is no longer a regular file, the path
     * is opened as {@link #openAsync} does.
     */
    public CompletableFuture<StrataFile> openKnownAsync(String path, InodeId known, Set<OpenFlag> flags) {
        if (known == null || flags.contains(OpenFlag.CREATE)) {
            return openAsync(path, flags, 0);
        }
        boolean write = flags.contains(OpenFlag.WRITE);
        boolean read = flags.contains(OpenFlag.READ) || !write;
        int f = (read ? OpenFlags.READ : 0) | (write ? OpenFlags.WRITE : 0);
        return core.meta().openAsync(caller, known, f, core.clientId(), null).handle((o, e) -> {
            if (e == null && o.attrs().isFile() && o.attrs().nlink() > 0) {
                return handle(o, read, write, flags.contains(OpenFlag.TRUNCATE), path);
            }
            if (e == null) { // unlinked since, or not a regular file: end the session, go by the path
                if (o.sessionId() != 0) {
                    core.meta().closeAsync(caller.through(o.sessionId()), o.attrs().id(), o.sessionId(), 0, false, null);
                }
                return openAsync(path, flags, 0);
            }
            StrataException se = StrataException.wrap(e);
            if (se.status() == Status.NOT_FOUND || se.status() == Status.STALE_HANDLE) {
                return openAsync(path, flags, 0);
            }
            return CompletableFuture.<StrataFile>failedFuture(se);
        }).thenCompose(x -> x);
    }

    public StrataFile open(String path, Set<OpenFlag> flags, int mode) {
        return ioJoin(openAsync(path, flags, mode));
    }

    /** Opens for reading. */
    public StrataFile openRead(String path) {
        return open(path, EnumSet.of(OpenFlag.READ), 0);
    }

    /** Creates or truncates {@code path} (mode 0644) and opens it for reading and writing. */
    public StrataFile create(String path) {
        return open(path, EnumSet.of(OpenFlag.READ, OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE), 0644);
    }

    /**
     * Reads many {@code (file, offset, length)} at once within {@code budgetBytes} of memory; see
     * {@link BatchRead}.
     */
    public BatchRead readBatch(List<ReadRequest> requests, long budgetBytes) {
        return new BatchRead(core, caller, requests, budgetBytes);
    }

    // ---- extended attributes, policies, usage ----

    public CompletableFuture<byte[]> getXattrAsync(String path, String name) {
        return lookup(path).thenCompose(a -> core.meta().getxattrAsync(caller, a.id(), name));
    }

    /** {@code flags}: 0, {@link OpenFlags#XATTR_CREATE} or {@link OpenFlags#XATTR_REPLACE}. */
    public CompletableFuture<Void> setXattrAsync(String path, String name, byte[] value, int flags) {
        return lookup(path).thenCompose(a -> core.meta().setxattrAsync(caller, a.id(), name, value, flags, null));
    }

    public CompletableFuture<List<String>> listXattrsAsync(String path) {
        return lookup(path).thenCompose(a -> core.meta().listxattrAsync(caller, a.id()));
    }

    public CompletableFuture<Void> removeXattrAsync(String path, String name) {
        return lookup(path).thenCompose(a -> core.meta().removexattrAsync(caller, a.id(), name, null));
    }

    /** A directory's own policy overrides and every field's effective value and source. */
    public CompletableFuture<PolicyInfo> policyAsync(String dir) {
        return resolve(dir).thenCompose(a -> core.meta().policyGetAsync(caller, a.id()));
    }

    public PolicyInfo policy(String dir) {
        return metaJoin(policyAsync(dir));
    }

    /** Changes a directory's policy ("key=value", "key=inherit"); applies to files created afterwards. */
    public CompletableFuture<PolicyInfo> setPolicyAsync(String dir, List<String> assignments) {
        return resolve(dir).thenCompose(a -> core.meta().policySetAsync(caller, a.id(), assignments, null));
    }

    public PolicyInfo setPolicy(String dir, String... assignments) {
        return metaJoin(setPolicyAsync(dir, List.of(assignments)));
    }

    public CompletableFuture<StatFs> statfsAsync() {
        return core.meta().statfsAsync(caller);
    }

    /** How long a capacity answer is reused: {@code df} and programs that poll statfs must not load the manager. */
    private static final long CAPACITY_TTL_NANOS = TimeUnit.SECONDS.toNanos(1);

    /**
     * What the cluster can still hold for files ({@link Capacity}): the cluster manager's sum of
     * the storage nodes' disks, divided by the root policy's replica count. Empty when the
     * client follows no cluster manager (a static chain table: nothing reports space). Answers
     * are reused for a second.
     */
    public CompletableFuture<Optional<Capacity>> capacityAsync() {
        Optional<MgmtdClient> m = core.mgmtd();
        if (m.isEmpty()) {
            return CompletableFuture.completedFuture(Optional.empty());
        }
        CachedCapacity c = capacity;
        long now = core.ctx().clock().nanoTime();
        if (c != null && now - c.atNanos() < CAPACITY_TTL_NANOS) {
            return CompletableFuture.completedFuture(Optional.of(c.value()));
        }
        Duration t = core.config().metaTimeout();
        CompletableFuture<MgmtdMessage.Space> space = m.get().call(new MgmtdMessage.GetSpace(), MgmtdMessage.Space.class, t, t);
        CompletableFuture<PolicyInfo> root = core.meta().policyGetAsync(caller, InodeId.ROOT);
        return space.thenCombine(root, (s, p) -> {
            int replicas = p.value("replicas").map(Integer::parseInt).orElse(1);
            Capacity v = new Capacity(s.capacityBytes() / replicas, s.freeBytes() / replicas, replicas, s.reporting(), s.targets());
            capacity = new CachedCapacity(v, now);
            return Optional.of(v);
        });
    }

    // ---- plumbing ----

    private CompletableFuture<InodeAttrs> lookup(String path) {
        List<String> parts;
        try {
            parts = PathNames.components(path);
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (parts.isEmpty()) {
            return core.meta().getattrAsync(caller, InodeId.ROOT);
        }
        return core.inParent(caller, parts, (p, n) -> core.meta().lookupAsync(caller, p, n), false);
    }

    private CompletableFuture<InodeAttrs> resolve(String path) {
        try {
            return core.meta().resolveAsync(caller, PathNames.normalize(path));
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Whether {@code type} names a directory (for callers mapping entries to modes). */
    public static boolean isDirectory(InodeType type) {
        return type == InodeType.DIRECTORY;
    }

    /** Closes the client (only the owner; views close nothing). Files left open are not published. */
    @Override
    public void close() {
        if (owner) {
            core.close();
        }
    }
}
