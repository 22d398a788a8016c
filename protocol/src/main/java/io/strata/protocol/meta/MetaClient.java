package io.strata.protocol.meta;

import io.micrometer.core.instrument.Counter;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.RpcClient;
import io.strata.protocol.meta.MetaMessage.Attrs;
import io.strata.protocol.meta.MetaMessage.Done;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The namespace seen through the meta service: a {@link Meta} whose operations are RPCs to one
 * of several stateless service instances. A call that fails with a retryable status (the
 * instance is unreachable or shutting down, a timeout, overload, a transaction conflict that
 * outlived the service's own retries) is sent again, after a short backoff, to the next
 * instance, up to {@code attempts} times. The request keeps its {@link RequestId}, so a retry of
 * an operation that did commit returns the first result instead of acting twice.
 *
 * <p>Metrics: {@code strata.meta.client.retries}.
 */
public final class MetaClient implements Meta {
    private final NodeContext ctx;
    private final RpcClient rpc;
    private final List<InetSocketAddress> instances;
    private final Duration timeout;
    private final int attempts;
    private final AtomicInteger current = new AtomicInteger();
    private final Counter retries;

    /** {@code rpc} must speak {@link MetaMessages#TYPES}; it stays owned by the caller. */
    public MetaClient(NodeContext ctx, RpcClient rpc, List<InetSocketAddress> instances, Duration timeout, int attempts) {
        if (instances.isEmpty()) {
            throw new IllegalArgumentException("a meta client needs at least one service address");
        }
        this.ctx = ctx;
        this.rpc = rpc;
        this.instances = List.copyOf(instances);
        this.timeout = timeout;
        this.attempts = Math.max(1, attempts);
        this.retries = Counter.builder("strata.meta.client.retries").register(ctx.meters());
    }

    public MetaClient(NodeContext ctx, RpcClient rpc, List<InetSocketAddress> instances) {
        this(ctx, rpc, instances, Duration.ofSeconds(30), 3 * instances.size() + 2);
    }

    /** The instance calls go to now (it changes after a retryable failure). */
    public InetSocketAddress currentInstance() {
        return instances.get(Math.floorMod(current.get(), instances.size()));
    }

    private <R extends Message> CompletableFuture<R> call(Message m, Class<R> reply) {
        CompletableFuture<R> out = new CompletableFuture<>();
        attempt(m, reply, 1, io.strata.core.trace.Trace.current(), out);
        return out;
    }

    /** Attempt {@code n} of a call made for the user operation {@code trace}; retries run on the scheduler's thread and keep it. */
    private <R extends Message> void attempt(Message m, Class<R> reply, int n, long trace, CompletableFuture<R> out) {
        int slot = current.get();
        InetSocketAddress to = instances.get(Math.floorMod(slot, instances.size()));
        rpc.call(to, m, io.strata.core.rpc.Payload.NONE, timeout, io.strata.core.rpc.RpcClient.Lane.FOREGROUND, trace).whenComplete((r, e) -> {
            if (e == null) {
                try (r) {
                    out.complete(r.message(reply));
                } catch (RuntimeException ex) {
                    out.completeExceptionally(ex);
                }
                return;
            }
            StrataException se = StrataException.wrap(e);
            if (!se.retryable() || n >= attempts) {
                out.completeExceptionally(n > 1 && se.retryable()
                        ? new StrataException(se.status(), "meta service: " + n + " attempts failed, last: " + se.getMessage(), se) : se);
                return;
            }
            retries.increment();
            current.compareAndSet(slot, slot + 1); // move on to the next instance
            long backoffMs = Math.min(500, 10L << Math.min(6, n - 1));
            ctx.scheduler().schedule(() -> attempt(m, reply, n + 1, trace, out), backoffMs, TimeUnit.MILLISECONDS);
        });
    }

    private CompletableFuture<InodeAttrs> attrs(Message m) {
        return call(m, Attrs.class).thenApply(Attrs::attrs);
    }

    private CompletableFuture<Void> done(Message m) {
        return call(m, Done.class).thenApply(d -> null);
    }

    private RequestId id(RequestId req) {
        return req != null ? req : RequestId.create(ctx.clock().now().toEpochMilli(), ctx.random());
    }

    @Override
    public CompletableFuture<InodeAttrs> lookupAsync(Caller c, InodeId parent, String name) {
        return attrs(new MetaMessage.Lookup(c, parent, name));
    }

    @Override
    public CompletableFuture<InodeAttrs> getattrAsync(Caller c, InodeId inode) {
        return attrs(new MetaMessage.GetAttr(c, inode));
    }

    @Override
    public CompletableFuture<InodeAttrs> resolveAsync(Caller c, String path) {
        return attrs(new MetaMessage.Resolve(c, path));
    }

    @Override
    public CompletableFuture<InodeAttrs> setattrAsync(Caller c, InodeId inode, SetAttr a, RequestId req) {
        return attrs(c.session() == 0 ? new MetaMessage.SetAttrs(c, inode, a, id(req))
                : new MetaMessage.SetAttrsThrough(c, inode, a, id(req)));
    }

    @Override
    public CompletableFuture<InodeAttrs> createAsync(Caller c, InodeId parent, String name, int mode, boolean exclusive, RequestId req) {
        return attrs(new MetaMessage.Create(c, parent, name, mode, exclusive, id(req)));
    }

    @Override
    public CompletableFuture<InDir> mkdirInAsync(Caller c, InodeId parent, String name, int mode, RequestId req) {
        return inDir(new MetaMessage.MkdirIn(new MetaMessage.Mkdir(c, parent, name, mode, id(req))));
    }

    @Override
    public CompletableFuture<InDir> symlinkInAsync(Caller c, InodeId parent, String name, String target, RequestId req) {
        return inDir(new MetaMessage.SymlinkIn(new MetaMessage.Symlink(c, parent, name, target, id(req))));
    }

    private CompletableFuture<InDir> inDir(Message m) {
        return call(m, MetaMessage.AttrsIn.class).thenApply(a -> new InDir(a.attrs(), a.dir()));
    }

    @Override
    public CompletableFuture<InodeAttrs> mknodAsync(Caller c, InodeId parent, String name, InodeType type, int mode, long rdev,
                                                    RequestId req) {
        return attrs(new MetaMessage.Mknod(c, parent, name, type, mode, rdev, id(req)));
    }

    @Override
    public CompletableFuture<String> readlinkAsync(Caller c, InodeId inode) {
        return call(new MetaMessage.ReadLink(c, inode), MetaMessage.LinkTarget.class).thenApply(MetaMessage.LinkTarget::target);
    }

    @Override
    public CompletableFuture<InodeAttrs> linkAsync(Caller c, InodeId inode, InodeId newParent, String newName, RequestId req) {
        return attrs(new MetaMessage.Link(c, inode, newParent, newName, id(req)));
    }

    @Override
    public CompletableFuture<InodeAttrs> unlinkAsync(Caller c, InodeId parent, String name, RequestId req) {
        return attrs(new MetaMessage.Remove(c, parent, name, false, id(req)));
    }

    @Override
    public CompletableFuture<InodeAttrs> rmdirAsync(Caller c, InodeId parent, String name, RequestId req) {
        return attrs(new MetaMessage.Remove(c, parent, name, true, id(req)));
    }

    @Override
    public CompletableFuture<Void> renameAsync(Caller c, InodeId srcParent, String srcName, InodeId dstParent, String dstName,
                                               boolean noReplace, RequestId req) {
        return done(new MetaMessage.Rename(c, srcParent, srcName, dstParent, dstName, noReplace, id(req)));
    }

    @Override
    public CompletableFuture<DirPage> readdirAsync(Caller c, InodeId dir, String after, int limit, boolean withAttrs) {
        if (limit < 1 || limit > MetaMessages.MAX_ENTRIES) {
            return CompletableFuture.failedFuture(new StrataException(Status.INVALID_ARGUMENT,
                    "readdir limit must be 1.." + MetaMessages.MAX_ENTRIES + ", got " + limit));
        }
        return call(new MetaMessage.ReadDir(c, dir, after == null ? "" : after, limit, withAttrs), MetaMessage.Listing.class)
                .thenApply(l -> new DirPage(l.entries(), l.next().isEmpty() ? null : l.next()));
    }

    @Override
    public CompletableFuture<OpenResult> openAsync(Caller c, InodeId inode, int flags, long clientId, RequestId req) {
        return call(new MetaMessage.Open(c, inode, flags, clientId, id(req)), MetaMessage.Opened.class)
                .thenApply(o -> new OpenResult(o.session(), o.attrs(), o.cached()));
    }

    @Override
    public CompletableFuture<OpenResult> createOpenAsync(Caller c, InodeId parent, String name, int mode, boolean exclusive, int flags,
                                                         long clientId, RequestId req) {
        MetaMessage.CreateOpen m = new MetaMessage.CreateOpen(c, parent, name, mode, exclusive, flags, clientId, id(req));
        return call(new MetaMessage.CreateOpenIn(m), MetaMessage.OpenedIn.class)
                .thenApply(o -> new OpenResult(o.opened().session(), o.opened().attrs(), o.opened().cached(), o.dir()));
    }

    @Override
    public CompletableFuture<InodeAttrs> closeAsync(Caller c, InodeId inode, long session, long writtenLength, boolean wrote,
                                                    long contentCrc, long crcLength, RequestId req) {
        return attrs(new MetaMessage.Close(c, inode, session, writtenLength, wrote, contentCrc, crcLength, id(req)));
    }

    @Override
    public CompletableFuture<InodeAttrs> fsyncAsync(Caller c, InodeId inode, long session, long writtenLength, RequestId req) {
        return attrs(new MetaMessage.Fsync(c, inode, session, writtenLength, id(req)));
    }

    @Override
    public CompletableFuture<Duration> keepAliveAsync(Caller c, long clientId) {
        return call(new MetaMessage.KeepAlive(c, clientId), MetaMessage.LeaseReply.class).thenApply(r -> Duration.ofMillis(r.leaseMillis()));
    }

    @Override
    public CompletableFuture<StatFs> statfsAsync(Caller c) {
        return call(new MetaMessage.StatFsRequest(c), MetaMessage.StatFsReply.class).thenApply(s -> new StatFs(s.inodes(), s.bytes()));
    }

    @Override
    public CompletableFuture<byte[]> getxattrAsync(Caller c, InodeId inode, String name) {
        return call(new MetaMessage.GetXattr(c, inode, name), MetaMessage.XattrValue.class).thenApply(MetaMessage.XattrValue::value);
    }

    @Override
    public CompletableFuture<Void> setxattrAsync(Caller c, InodeId inode, String name, byte[] value, int flags, RequestId req) {
        return done(new MetaMessage.SetXattr(c, inode, name, value, flags, id(req)));
    }

    @Override
    public CompletableFuture<List<String>> listxattrAsync(Caller c, InodeId inode) {
        return call(new MetaMessage.ListXattr(c, inode), MetaMessage.XattrNames.class).thenApply(MetaMessage.XattrNames::names);
    }

    @Override
    public CompletableFuture<Void> removexattrAsync(Caller c, InodeId inode, String name, RequestId req) {
        return done(new MetaMessage.RemoveXattr(c, inode, name, id(req)));
    }

    @Override
    public CompletableFuture<PolicyInfo> policyGetAsync(Caller c, InodeId dir) {
        return call(new MetaMessage.PolicyGet(c, dir), MetaMessage.PolicyReply.class)
                .thenApply(p -> new PolicyInfo(p.path(), p.overrides(), p.effective()));
    }

    @Override
    public CompletableFuture<PolicyInfo> policySetAsync(Caller c, InodeId dir, List<String> assignments, RequestId req) {
        return call(new MetaMessage.PolicySet(c, dir, assignments, id(req)), MetaMessage.PolicyReply.class)
                .thenApply(p -> new PolicyInfo(p.path(), p.overrides(), p.effective()));
    }

    @Override
    public CompletableFuture<Staging> stageOpenAsync(Caller c, InodeId inode, int placementVersion, int replicas,
                                                     List<Staging.Candidate> proposed, RequestId req) {
        return staging(new MetaMessage.StageOpen(c, inode, placementVersion, replicas, proposed, id(req)));
    }

    @Override
    public CompletableFuture<java.util.Optional<Staging>> stagingAsync(Caller c, InodeId inode) {
        return call(new MetaMessage.GetStaging(c, inode), MetaMessage.StagingReply.class)
                .thenApply(r -> java.util.Optional.ofNullable(r.staging()));
    }

    @Override
    public CompletableFuture<Staging> stagePublishAsync(Caller c, InodeId inode, long epoch, Staging.Delta delta, RequestId req) {
        return staging(new MetaMessage.StagePublish(c, inode, epoch, delta, id(req)));
    }

    @Override
    public CompletableFuture<Staging> drainReportAsync(Caller c, InodeId inode, long epoch, long version, boolean durable, RequestId req) {
        return staging(new MetaMessage.DrainReport(c, inode, epoch, version, durable, id(req)));
    }

    @Override
    public CompletableFuture<Staging> stageLostAsync(Caller c, InodeId inode, String why, RequestId req) {
        return staging(new MetaMessage.StageLost(c, inode, why, id(req)));
    }

    @Override
    public CompletableFuture<List<Staging>> listStagingAsync(Caller c, boolean pendingOnly, long after, int limit) {
        return call(new MetaMessage.ListStaging(c, pendingOnly, after, limit), MetaMessage.StagingList.class)
                .thenApply(MetaMessage.StagingList::records);
    }

    private CompletableFuture<Staging> staging(MetaMessage request) {
        return call(request, MetaMessage.StagingReply.class).thenApply(r -> {
            if (r.staging() == null) {
                throw new io.strata.core.StrataException(io.strata.core.Status.NOT_FOUND, "no staging record");
            }
            return r.staging();
        });
    }

    // ---- checkpoint generations ----

    @Override
    public CompletableFuture<Checkpoint.Generation> ckptCommitAsync(Caller c, InodeId gen, Checkpoint.Level level,
                                                                    List<Checkpoint.Expected> expected, RequestId req) {
        return generation(new MetaMessage.Ckpt(c, Checkpoint.Op.COMMIT, gen, level, expected, "", 0, id(req)));
    }

    @Override
    public CompletableFuture<Checkpoint.Generation> ckptStatusAsync(Caller c, InodeId gen) {
        return generation(new MetaMessage.Ckpt(c, Checkpoint.Op.STATUS, gen, null, List.of(), "", 0, id(null)));
    }

    @Override
    public CompletableFuture<List<Checkpoint.Generation>> ckptListAsync(Caller c, InodeId root) {
        return call(new MetaMessage.Ckpt(c, Checkpoint.Op.LIST, root, null, List.of(), "", 0, id(null)), MetaMessage.CkptReply.class)
                .thenApply(MetaMessage.CkptReply::generations);
    }

    @Override
    public CompletableFuture<Checkpoint.ManifestPage> ckptManifestAsync(Caller c, InodeId gen, String after, int limit) {
        return call(new MetaMessage.Ckpt(c, Checkpoint.Op.MANIFEST, gen, null, List.of(), after == null ? "" : after, limit, id(null)),
                MetaMessage.CkptReply.class).thenApply(r -> new Checkpoint.ManifestPage(r.entries(), r.more()));
    }

    @Override
    public CompletableFuture<Checkpoint.Generation> ckptPinAsync(Caller c, InodeId gen, boolean pin, RequestId req) {
        return generation(new MetaMessage.Ckpt(c, pin ? Checkpoint.Op.PIN : Checkpoint.Op.UNPIN, gen, null, List.of(), "", 0, id(req)));
    }

    private CompletableFuture<Checkpoint.Generation> generation(MetaMessage.Ckpt request) {
        return call(request, MetaMessage.CkptReply.class).thenApply(r -> {
            if (r.generations().size() != 1) {
                throw new StrataException(Status.INTERNAL, "a checkpoint reply with " + r.generations().size() + " generations, expected one");
            }
            return r.generations().get(0);
        });
    }

    @Override
    public CompletableFuture<Cached.Marked> cacheMarkAsync(Caller c, long owner, List<Integer> agents, List<Cached.File> files, RequestId req) {
        return call(new MetaMessage.Cache(c, Cached.Op.MARK, owner, agents, files, id(req)), MetaMessage.CacheReply.class)
                .thenApply(r -> new Cached.Marked(r.records(), r.stale()));
    }

    @Override
    public CompletableFuture<Void> cacheUnmarkAsync(Caller c, long owner, List<InodeId> files, RequestId req) {
        return call(new MetaMessage.Cache(c, Cached.Op.UNMARK, owner, List.of(), asFiles(files), id(req)), MetaMessage.CacheReply.class)
                .thenApply(r -> null);
    }

    @Override
    public CompletableFuture<List<Cached.Record>> cachedAsync(Caller c, List<InodeId> files) {
        return call(new MetaMessage.Cache(c, Cached.Op.GET, 0, List.of(), asFiles(files), id(null)), MetaMessage.CacheReply.class)
                .thenApply(MetaMessage.CacheReply::records);
    }

    private static List<Cached.File> asFiles(List<InodeId> files) {
        return files.stream().map(f -> new Cached.File(f, 0)).toList();
    }
}
