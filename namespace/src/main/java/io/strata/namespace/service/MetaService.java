package io.strata.namespace.service;

import io.strata.namespace.MetaStore;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.MetaMessage.CkptReply;
import java.util.List;
import io.strata.core.rpc.Reply;
import io.strata.core.rpc.Request;
import io.strata.protocol.meta.Caller;
import io.strata.core.rpc.RpcServer;
import io.strata.protocol.meta.DirPage;
import io.strata.protocol.meta.Meta;
import io.strata.protocol.meta.PolicyInfo;
import io.strata.protocol.meta.MetaMessage.Attrs;
import io.strata.protocol.meta.MetaMessage.Done;
import io.strata.protocol.meta.MetaMessage.LinkTarget;
import io.strata.protocol.meta.MetaMessage.Listing;
import io.strata.protocol.meta.MetaMessage;
import io.strata.protocol.meta.MetaMessage.Opened;
import io.strata.protocol.meta.MetaMessage.OpenedIn;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.MetaMessage.PolicyReply;
import io.strata.protocol.meta.MetaMessage.StagingList;
import io.strata.protocol.meta.MetaMessage.StagingReply;
import io.strata.protocol.meta.MetaMessage.StatFsReply;
import io.strata.protocol.meta.MetaMessage.XattrNames;
import io.strata.protocol.meta.MetaMessage.XattrValue;
import java.util.concurrent.CompletableFuture;

/**
 * Serves {@link MetaMessage}s from a {@link MetaStore}, as the user each request's connection
 * token lets it act for ({@link Identity}).
 * Stateless: every request is one namespace transaction, so any number of service instances may
 * serve one FoundationDB cluster and a client may send any request to any of them. Handlers run
 * on the event loop and only start the operation, which runs on the store's worker pool.
 */
public final class MetaService {
    private MetaService() {
    }

    public static RpcServer.Builder register(RpcServer.Builder server, MetaStore meta) {
        return server
                .handle(MetaMessages.LOOKUP, r -> attrs(meta.lookupAsync(who(r, r.message().caller()), r.message().parent(), r.message().name())))
                .handle(MetaMessages.GET_ATTR, r -> attrs(meta.getattrAsync(who(r, r.message().caller()), r.message().inode())))
                .handle(MetaMessages.RESOLVE, r -> attrs(meta.resolveAsync(who(r, r.message().caller()), r.message().path())))
                .handle(MetaMessages.SET_ATTRS, r -> {
                    var m = r.message();
                    return attrs(meta.setattrAsync(who(r, m.caller()), m.inode(), m.attrs(), m.req()));
                })
                .handle(MetaMessages.SET_ATTRS_THROUGH, r -> {
                    var m = r.message();
                    return attrs(meta.setattrAsync(who(r, m.caller()), m.inode(), m.attrs(), m.req()));
                })
                .handle(MetaMessages.CREATE, r -> {
                    var m = r.message();
                    return attrs(meta.createAsync(who(r, m.caller()), m.parent(), m.name(), m.mode(), m.exclusive(), m.req()));
                })
                .handle(MetaMessages.MKDIR, r -> {
                    var m = r.message();
                    return attrs(meta.mkdirAsync(who(r, m.caller()), m.parent(), m.name(), m.mode(), m.req()));
                })
                .handle(MetaMessages.SYMLINK, r -> {
                    var m = r.message();
                    return attrs(meta.symlinkAsync(who(r, m.caller()), m.parent(), m.name(), m.target(), m.req()));
                })
                .handle(MetaMessages.MKDIR_IN, r -> {
                    var m = r.message().request();
                    return inDir(meta.mkdirInAsync(who(r, m.caller()), m.parent(), m.name(), m.mode(), m.req()));
                })
                .handle(MetaMessages.SYMLINK_IN, r -> {
                    var m = r.message().request();
                    return inDir(meta.symlinkInAsync(who(r, m.caller()), m.parent(), m.name(), m.target(), m.req()));
                })
                .handle(MetaMessages.MKNOD, r -> {
                    var m = r.message();
                    return attrs(meta.mknodAsync(who(r, m.caller()), m.parent(), m.name(), m.type(), m.mode(), m.rdev(), m.req()));
                })
                .handle(MetaMessages.READ_LINK, r -> meta.readlinkAsync(who(r, r.message().caller()), r.message().inode())
                        .thenApply(t -> Reply.of(new LinkTarget(t))))
                .handle(MetaMessages.LINK, r -> {
                    var m = r.message();
                    return attrs(meta.linkAsync(who(r, m.caller()), m.inode(), m.newParent(), m.newName(), m.req()));
                })
                .handle(MetaMessages.UNLINK, r -> {
                    var m = r.message();
                    return done(meta.unlinkAsync(who(r, m.caller()), m.parent(), m.name(), m.req()).thenRun(() -> { }));
                })
                .handle(MetaMessages.RMDIR, r -> {
                    var m = r.message();
                    return done(meta.rmdirAsync(who(r, m.caller()), m.parent(), m.name(), m.req()).thenRun(() -> { }));
                })
                .handle(MetaMessages.REMOVE, r -> {
                    var m = r.message();
                    Caller who = who(r, m.caller());
                    return attrs(m.directory() ? meta.rmdirAsync(who, m.parent(), m.name(), m.req())
                            : meta.unlinkAsync(who, m.parent(), m.name(), m.req()));
                })
                .handle(MetaMessages.RENAME, r -> {
                    var m = r.message();
                    return done(meta.renameAsync(who(r, m.caller()), m.srcParent(), m.srcName(), m.dstParent(), m.dstName(), m.noReplace(), m.req()));
                })
                .handle(MetaMessages.READ_DIR, r -> {
                    var m = r.message();
                    return meta.readdirAsync(who(r, m.caller()), m.dir(), m.after().isEmpty() ? null : m.after(), m.limit(), m.withAttrs())
                            .thenApply(MetaService::listing);
                })
                .handle(MetaMessages.OPEN, r -> {
                    var m = r.message();
                    return meta.openAsync(who(r, m.caller()), m.inode(), m.flags(), m.clientId(), m.req())
                            .thenApply(o -> Reply.of(opened(o)));
                })
                .handle(MetaMessages.CREATE_OPEN, r -> createOpen(meta, r, r.message()).thenApply(o -> Reply.of(opened(o))))
                .handle(MetaMessages.CREATE_OPEN_IN, r -> createOpen(meta, r, r.message().request())
                        .thenApply(o -> Reply.of(new OpenedIn(opened(o), o.dir()))))
                .handle(MetaMessages.CLOSE, r -> {
                    var m = r.message();
                    return attrs(meta.closeAsync(who(r, m.caller()), m.inode(), m.session(), m.writtenLength(), m.wrote(), m.contentCrc(), m.crcLength(), m.req()));
                })
                .handle(MetaMessages.FSYNC, r -> {
                    var m = r.message();
                    return attrs(meta.fsyncAsync(who(r, m.caller()), m.inode(), m.session(), m.writtenLength(), m.req()));
                })
                .handle(MetaMessages.KEEP_ALIVE, r -> meta.keepAliveAsync(who(r, r.message().caller()), r.message().clientId())
                        .thenApply(lease -> Reply.of(new io.strata.protocol.meta.MetaMessage.LeaseReply(lease.toMillis()))))
                .handle(MetaMessages.STAT_FS, r -> meta.statfsAsync(who(r, r.message().caller()))
                        .thenApply(s -> Reply.of(new StatFsReply(s.inodes(), s.bytes()))))
                .handle(MetaMessages.GET_XATTR, r -> meta.getxattrAsync(who(r, r.message().caller()), r.message().inode(), r.message().name())
                        .thenApply(v -> Reply.of(new XattrValue(v))))
                .handle(MetaMessages.SET_XATTR, r -> {
                    var m = r.message();
                    return done(meta.setxattrAsync(who(r, m.caller()), m.inode(), m.name(), m.value(), m.flags(), m.req()));
                })
                .handle(MetaMessages.LIST_XATTR, r -> meta.listxattrAsync(who(r, r.message().caller()), r.message().inode())
                        .thenApply(n -> Reply.of(new XattrNames(n))))
                .handle(MetaMessages.REMOVE_XATTR, r -> {
                    var m = r.message();
                    return done(meta.removexattrAsync(who(r, m.caller()), m.inode(), m.name(), m.req()));
                })
                .handle(MetaMessages.POLICY_GET, r -> policy(meta.policyGetAsync(who(r, r.message().caller()), r.message().dir())))
                .handle(MetaMessages.POLICY_SET, r -> {
                    var m = r.message();
                    return policy(meta.policySetAsync(who(r, m.caller()), m.dir(), m.assignments(), m.req(), Identity.operator(r.caller().orElse(null))));
                })
                .handle(MetaMessages.STAGE_OPEN, r -> {
                    var m = r.message();
                    return staging(meta.stageOpenAsync(who(r, m.caller()), m.inode(), m.placementVersion(), m.replicas(), m.proposed(), m.req()));
                })
                .handle(MetaMessages.GET_STAGING, r -> meta.stagingAsync(who(r, r.message().caller()), r.message().inode())
                        .thenApply(s -> Reply.of(new StagingReply(s.orElse(null)))))
                .handle(MetaMessages.STAGE_PUBLISH, r -> {
                    var m = r.message();
                    return staging(meta.stagePublishAsync(who(r, m.caller()), m.inode(), m.epoch(), m.delta(), m.req()));
                })
                .handle(MetaMessages.DRAIN_REPORT, r -> {
                    var m = r.message();
                    return staging(meta.drainReportAsync(who(r, m.caller()), m.inode(), m.epoch(), m.version(), m.durable(), m.req()));
                })
                .handle(MetaMessages.STAGE_LOST, r -> {
                    var m = r.message();
                    return staging(meta.stageLostAsync(who(r, m.caller()), m.inode(), m.why(), m.req()));
                })
                .handle(MetaMessages.LIST_STAGING, r -> {
                    var m = r.message();
                    return meta.listStagingAsync(who(r, m.caller()), m.pendingOnly(), m.after(), m.limit())
                            .thenApply(l -> Reply.of(new StagingList(l, l.size() >= m.limit())));
                })
                .handle(MetaMessages.CKPT, r -> checkpoint(meta, who(r, r.message().caller()), r.message()))
                .handle(MetaMessages.CACHE, r -> cache(meta, who(r, r.message().caller()), r.message()));
    }

    private static CompletableFuture<Reply> cache(Meta meta, Caller c, io.strata.protocol.meta.MetaMessage.Cache m) {
        List<io.strata.core.InodeId> files = m.files().stream().map(io.strata.protocol.meta.Cached.File::inode).toList();
        return switch (m.op()) {
            case MARK -> meta.cacheMarkAsync(c, m.owner(), m.agents(), m.files(), m.req())
                    .thenApply(x -> Reply.of(new io.strata.protocol.meta.MetaMessage.CacheReply(x.records(), x.stale())));
            case UNMARK -> meta.cacheUnmarkAsync(c, m.owner(), files, m.req())
                    .thenApply(x -> Reply.of(new io.strata.protocol.meta.MetaMessage.CacheReply(List.of(), List.of())));
            case GET -> meta.cachedAsync(c, files)
                    .thenApply(x -> Reply.of(new io.strata.protocol.meta.MetaMessage.CacheReply(x, List.of())));
        };
    }

    private static CompletableFuture<Reply> checkpoint(Meta meta, Caller c, io.strata.protocol.meta.MetaMessage.Ckpt m) {
        return switch (m.op()) {
            case COMMIT -> m.level() == null
                    ? CompletableFuture.failedFuture(new io.strata.core.StrataException(io.strata.core.Status.INVALID_ARGUMENT,
                            "a checkpoint commit needs a level (l2 or l3)"))
                    : generations(meta.ckptCommitAsync(c, m.inode(), m.level(), m.expected(), m.req()).thenApply(List::of));
            case STATUS -> generations(meta.ckptStatusAsync(c, m.inode()).thenApply(List::of));
            case LIST -> generations(meta.ckptListAsync(c, m.inode()));
            case PIN, UNPIN -> generations(meta.ckptPinAsync(c, m.inode(), m.op() == Checkpoint.Op.PIN, m.req()).thenApply(List::of));
            case MANIFEST -> meta.ckptManifestAsync(c, m.inode(), m.after(), m.limit() == 0 ? 1000 : m.limit())
                    .thenApply(p -> Reply.of(new CkptReply(List.of(), p.entries(), p.more())));
        };
    }

    /**
     * The caller a request acts as: the one it claims, checked against its connection's token
     * ({@link Identity}).
     */
    private static Caller who(Request<?> r, Caller claimed) {
        return Identity.check(r.caller().orElse(null), claimed);
    }

    private static CompletableFuture<Reply> generations(CompletableFuture<List<Checkpoint.Generation>> f) {
        return f.thenApply(g -> Reply.of(new CkptReply(g, List.of(), false)));
    }

    private static CompletableFuture<OpenResult> createOpen(Meta meta, Request<?> r, MetaMessage.CreateOpen m) {
        return meta.createOpenAsync(who(r, m.caller()), m.parent(), m.name(), m.mode(), m.exclusive(), m.flags(), m.clientId(), m.req());
    }

    private static CompletableFuture<Reply> inDir(CompletableFuture<io.strata.protocol.meta.InDir> f) {
        return f.thenApply(m -> Reply.of(new MetaMessage.AttrsIn(m.attrs(), m.dir())));
    }

    private static Opened opened(OpenResult o) {
        return new Opened(o.sessionId(), o.attrs(), o.cached());
    }

    private static CompletableFuture<Reply> attrs(CompletableFuture<io.strata.protocol.meta.InodeAttrs> f) {
        return f.thenApply(a -> Reply.of(new Attrs(a)));
    }

    private static CompletableFuture<Reply> staging(CompletableFuture<io.strata.protocol.meta.Staging> f) {
        return f.thenApply(s -> Reply.of(new StagingReply(s)));
    }

    private static CompletableFuture<Reply> done(CompletableFuture<Void> f) {
        return f.thenApply(v -> Reply.of(new Done()));
    }

    private static CompletableFuture<Reply> policy(CompletableFuture<PolicyInfo> f) {
        return f.thenApply(p -> Reply.of(new PolicyReply(p.path(), p.overrides(), p.effective())));
    }

    private static Reply listing(DirPage p) {
        return Reply.of(new Listing(p.entries(), p.next() == null ? "" : p.next()));
    }
}
