package io.strata.client;

import io.netty.buffer.ByteBufAllocator;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.Tier;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Meta;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.SetAttr;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import io.strata.protocol.mgmtd.MgmtdClient;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything one client shares across its views ({@link StrataFileSystem#as}) and open files:
 * the namespace, the tier stack, the registry of open files ({@link FileState} per inode), the
 * write budget, the directory cache, metrics, and what it must close.
 */
final class ClientCore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ClientCore.class);

    private final NodeContext ctx;
    private final ClientConfig config;
    private final Meta meta;
    private final TierStack tiers;
    private final List<AutoCloseable> closeables;
    private final long clientId;
    private final ByteBufAllocator alloc = ByteBufAllocator.DEFAULT;
    private final WriteBudget writeBudget;
    /** The bytes open handles may keep of what they wrote, for the cache tier ({@link WrittenCopy}). */
    private final WriteBudget keptBudget = new WriteBudget(KEPT_WRITTEN_TOTAL);
    private final DirCache dirs;
    private final ImmutableAttrs immutables = new ImmutableAttrs();
    private final ClientMetrics metrics;
    private final ConcurrentHashMap<InodeId, FileState> files = new ConcurrentHashMap<>();
    /** Handles open here for reading without a namespace session (see {@link #pin}). */
    private final AtomicInteger untracked = new AtomicInteger();
    /** The cluster manager the client follows, if any (among {@code closeables}: it asks it for capacity). */
    private final Optional<MgmtdClient> mgmtd;
    private final SessionKeeper keeper;

    /** {@code closeables} are closed in order after the tiers (meta RPC client, routing, context...). */
    ClientCore(NodeContext ctx, ClientConfig config, Meta meta, TierStack tiers, List<AutoCloseable> closeables) {
        this.ctx = ctx;
        this.config = config;
        this.meta = meta;
        this.tiers = tiers;
        this.closeables = new ArrayList<>(closeables);
        this.mgmtd = closeables.stream().filter(MgmtdClient.class::isInstance).map(MgmtdClient.class::cast).findFirst();
        this.clientId = ctx.random().nextLong() & Long.MAX_VALUE | 1L;
        this.writeBudget = new WriteBudget(config.writeBufferTotal().bytes());
        this.dirs = new DirCache(config.dentryTtl(), ctx.clock());
        this.metrics = new ClientMetrics(ctx.meters(), config.name(), files::size, writeBudget::used);
        this.keeper = new SessionKeeper(ctx, meta, clientId, StrataFileSystem.defaultCaller(), () -> !files.isEmpty(), config.name());
        keeper.start();
    }

    NodeContext ctx() {
        return ctx;
    }

    ClientConfig config() {
        return config;
    }

    Meta meta() {
        return meta;
    }

    Optional<MgmtdClient> mgmtd() {
        return mgmtd;
    }

    TierStack tiers() {
        return tiers;
    }

    long clientId() {
        return clientId;
    }

    SessionKeeper keeper() {
        return keeper;
    }

    ByteBufAllocator alloc() {
        return alloc;
    }

    WriteBudget writeBudget() {
        return writeBudget;
    }

    /**
     * What all handles of this client may keep of the files they write whole, to hand the new
     * versions to L1 (a handle that cannot get more stops keeping its copy): 64 MiB, so that at
     * most that much heap goes to copies, whatever number of files are open for writing.
     */
    static final long KEPT_WRITTEN_TOTAL = 64L << 20;

    WriteBudget keptBudget() {
        return keptBudget;
    }

    ClientMetrics metrics() {
        return metrics;
    }

    DirCache dirs() {
        return dirs;
    }

    ImmutableAttrs immutables() {
        return immutables;
    }

    /** A path's entry changed here (rename, removal): forget what the caches hold under it. */
    void forget(String path) {
        dirs.invalidate(path);
        immutables.invalidate(path);
    }

    // ---- open files ----

    /** The shared state of an opened file, created on its first open here. */
    FileState acquire(InodeAttrs a) {
        FilePolicy policy = FilePolicy.of(a.policy());
        Tier tier = tiers.tierFor(policy);
        while (true) {
            FileState s = files.computeIfAbsent(a.id(), id -> new FileState(a, policy, tier, this));
            synchronized (s) {
                if (s.ref() > 0 && files.get(a.id()) == s) {
                    s.seen(a);
                    keeper.opened();
                    return s;
                }
                s.unref();
            }
        }
    }

    /** One handle of {@code s} closed; the last one removes it from the registry, ends its pin and drops its failed writes. */
    void release(FileState s) {
        FileState.Pin pin = null;
        boolean last;
        synchronized (s) {
            last = s.unref() == 0;
            if (last) {
                files.remove(s.inode, s);
                pin = s.takePin();
            }
        }
        if (pin != null) {
            endPin(s.inode, pin);
        }
        if (last) {
            s.writes.discard();
        }
    }

    void untrackedOpened() {
        untracked.incrementAndGet();
    }

    void untrackedClosed() {
        untracked.decrementAndGet();
    }

    /** Whether any handle open here reads without a namespace session. */
    boolean readsUntracked() {
        return untracked.get() > 0;
    }

    /**
     * Before this client removes a name of {@code inode} (unlink, rename over it, libfuse's
     * rename to a hidden name): if it reads the file through handles the namespace does not
     * track, one tracked session (an open with {@link OpenFlags#TRACK}) keeps the file and its
     * data until the last of its handles here closes, as for a file open for writing. Best
     * effort: a failed pin leaves the removal to go on (the readers then see the file as another
     * client's removal leaves it).
     */
    CompletableFuture<Void> pin(InodeId inode) {
        FileState s = files.get(inode);
        Caller reader = s == null ? null : s.pinnable();
        if (reader == null) {
            return CompletableFuture.completedFuture(null);
        }
        return meta.openAsync(reader, inode, OpenFlags.READ | OpenFlags.TRACK, clientId(), null).handle((o, e) -> {
            if (e != null) {
                LOG.debug("{}: could not pin {} for its readers here: {}", config.name(), inode, e.toString());
                return null;
            }
            FileState.Pin pin = new FileState.Pin(reader.through(o.sessionId()), o.sessionId());
            if (!s.pin(pin)) {
                endPin(inode, pin); // closed meanwhile, or pinned by another removal
            }
            return null;
        });
    }

    private void endPin(InodeId inode, FileState.Pin pin) {
        meta.closeAsync(pin.caller(), inode, pin.session(), 0, false, null).whenComplete((a, e) -> {
            if (e != null) {
                LOG.warn("{}: could not end the session that kept {} for its readers (its client's lease ends it): {}", config.name(),
                        inode, e.toString());
            }
        });
    }

    /** The state of a file open here, or null. */
    FileState open(InodeId inode) {
        return files.get(inode);
    }

    /**
     * Before {@code attrs} changes {@code inode}'s times: what handles here wrote and have not
     * published is published first ({@link FileState#publishWrites}), so the times set stand.
     */
    CompletableFuture<Void> publishBeforeTimes(InodeId inode, io.strata.protocol.meta.SetAttr attrs) {
        FileState s = attrs.atimeNanos() == null && attrs.mtimeNanos() == null ? null : files.get(inode);
        return s == null ? CompletableFuture.completedFuture(null) : s.publishWrites();
    }

    /** Whether a handle of this client has {@code inode} open for writing. */
    boolean writingHere(InodeId inode) {
        FileState s = files.get(inode);
        return s != null && s.hasWriter();
    }

    /** {@code a}'s size as this client sees it (its own unpublished writes included). */
    long sizeOf(InodeAttrs a) {
        FileState s = files.get(a.id());
        if (s == null || !a.isFile()) {
            return FileStatus.of(a).size();
        }
        s.seen(a);
        return s.length();
    }

    // ---- truncate ----

    /**
     * Truncates an open file: sends its pending writes, reads the current length (another client
     * may have published more since this one opened it), drops the bytes past
     * {@code min(current, size)} from the tiers, then records {@code size} in the namespace.
     */
    CompletableFuture<InodeAttrs> truncate(Caller c, FileState s, long size) {
        if (size < 0) {
            return CompletableFuture.failedFuture(new StrataException(Status.INVALID_ARGUMENT, "negative size " + size));
        }
        return s.writes.flush(false)
                .thenCompose(v -> meta.getattrAsync(c, s.inode))
                .thenCompose(a -> {
                    s.seen(a);
                    return ChunkIo.cut(s.tier, s.inode, s.layout, Math.min(s.length(), size), s.io());
                })
                .thenCompose(v -> meta.setattrAsync(c, s.inode, SetAttr.size(size), null))
                .thenApply(a -> {
                    s.seen(a);
                    s.truncated(size);
                    return a;
                });
    }

    /**
     * Truncates a file by name (truncate(2), not through a handle of the caller's): opens it for
     * writing first, so the namespace checks the caller's write access before any chunk is cut
     * (a refused truncate loses nothing), truncates through that session and ends it.
     */
    CompletableFuture<InodeAttrs> truncate(Caller c, InodeAttrs a, long size) {
        if (!a.isFile()) {
            return CompletableFuture.failedFuture(new StrataException(a.isDirectory() ? Status.IS_A_DIRECTORY : Status.INVALID_ARGUMENT,
                    "truncate: " + a.id() + " is not a regular file"));
        }
        if (size < 0) {
            return CompletableFuture.failedFuture(new StrataException(Status.INVALID_ARGUMENT, "negative size " + size));
        }
        if (FilePolicy.writtenImmutable(a)) {
            // as an open for writing is refused (StrataFileSystem.handle)
            return CompletableFuture.failedFuture(new StrataException(Status.READ_ONLY,
                    "truncate: " + a.id() + " is in an immutable directory and was already written"));
        }
        return meta.openAsync(c, a.id(), OpenFlags.WRITE, clientId(), null).thenCompose(o -> {
            Caller through = c.through(o.sessionId());
            FileState s = acquire(o.attrs());
            CompletableFuture<InodeAttrs> t;
            try {
                t = truncate(through, s, size);
            } catch (RuntimeException e) {
                t = CompletableFuture.failedFuture(e);
            }
            return t.handle((attrs, e) -> meta.closeAsync(through, a.id(), o.sessionId(), 0, false, null).handle((x, closeError) -> {
                release(s);
                if (e != null) {
                    throw StrataException.wrap(e);
                }
                return attrs;
            })).thenCompose(f -> f);
        });
    }

    // ---- paths ----

    /** The directory at {@code path} (symlinks followed), through the directory cache. */
    CompletableFuture<InodeId> dir(Caller c, String path, boolean useCache) {
        if (path.equals("/")) {
            return CompletableFuture.completedFuture(InodeId.ROOT);
        }
        InodeId cached = useCache ? dirs.get(c.uid(), path) : null;
        if (cached != null) {
            return CompletableFuture.completedFuture(cached);
        }
        return meta.resolveAsync(c, path).thenApply(a -> {
            if (!a.isDirectory()) {
                throw new StrataException(Status.NOT_A_DIRECTORY, "\"" + path + "\" is not a directory");
            }
            dirs.put(c.uid(), path, a.id());
            return a.id();
        });
    }

    /** {@code op(parent, name)} for the last component of {@code parts}, retried once without the cache if the cached parent failed. */
    <T> CompletableFuture<T> inParent(Caller c, List<String> parts, ParentOp<T> op) {
        return inParent(c, parts, op, true);
    }

    /**
     * As {@link #inParent(Caller, List, ParentOp)}; with {@code retryNotFound} false a NOT_FOUND
     * from {@code op} in a cached parent is the answer (a lookup of a missing name: the usual
     * reason is that the name is missing, and a create follows at once). A parent removed by
     * another client within the cache's ttl then reads as "no such name" until the ttl ends, as
     * a kernel's entry cache would answer; NOT_A_DIRECTORY and STALE_HANDLE still retry.
     */
    <T> CompletableFuture<T> inParent(Caller c, List<String> parts, ParentOp<T> op, boolean retryNotFound) {
        String parentPath = PathNames.parent(parts);
        String name = PathNames.name(parts);
        boolean cached = dirs.get(c.uid(), parentPath) != null;
        CompletableFuture<T> first = dir(c, parentPath, true).thenCompose(p -> op.apply(p, name));
        if (!cached) {
            return first;
        }
        return first.handle((v, e) -> {
            if (e == null) {
                return CompletableFuture.completedFuture(v);
            }
            StrataException se = StrataException.wrap(e);
            boolean parentMayBeStale = (retryNotFound && se.status() == Status.NOT_FOUND) || se.status() == Status.NOT_A_DIRECTORY
                    || se.status() == Status.STALE_HANDLE;
            if (!parentMayBeStale) {
                return CompletableFuture.<T>failedFuture(se);
            }
            dirs.invalidate(parentPath);
            return dir(c, parentPath, false).thenCompose(p -> op.apply(p, name));
        }).thenCompose(f -> f);
    }

    @FunctionalInterface
    interface ParentOp<T> {
        CompletableFuture<T> apply(InodeId parent, String name);
    }

    @Override
    public void close() {
        keeper.close();
        if (!files.isEmpty()) {
            LOG.warn("{}: closing with {} files still open (their unpublished writes are not published)", config.name(), files.size());
        }
        try {
            tiers.close();
        } catch (RuntimeException e) {
            LOG.warn("{}: closing the tiers: {}", config.name(), e.toString());
        }
        for (AutoCloseable a : closeables) {
            try {
                a.close();
            } catch (Exception e) {
                LOG.warn("{}: closing {}: {}", config.name(), a, e.toString());
            }
        }
    }
}
