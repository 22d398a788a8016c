package io.strata.storage;

import io.netty.buffer.ByteBuf;
import io.strata.core.ChainId;
import io.strata.core.InodeId;
import io.strata.core.ChunkId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.rpc.Reply;
import io.strata.core.rpc.Request;
import io.strata.core.tier.ChunkAddress;
import io.strata.storage.engine.ChunkEngine;
import io.strata.storage.engine.ChunkMeta;
import io.strata.storage.engine.ChunkVersion;
import io.strata.protocol.storage.ChunkSummary;
import io.strata.protocol.storage.StorageMessage.ChunkList;
import io.strata.protocol.storage.StorageMessage.InodeChunks;
import io.strata.protocol.storage.StorageMessage.ListChunks;
import io.strata.protocol.storage.StorageMessage.ListInodeChunks;
import io.strata.protocol.storage.StorageMessage.SyncChunk;
import io.strata.protocol.storage.StorageMessage.SyncChunkDone;
import io.strata.protocol.storage.StorageMessage.SyncDone;
import io.strata.protocol.storage.StorageMessage.SyncDoneAck;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The syncing side of resync (docs/internals/resync.md): answers chunk listings, applies the
 * predecessor's full-chunk copies and removals, and takes its sync-done.
 *
 * <p><b>What a syncing target trusts.</b> While one of this node's targets is {@code syncing}
 * it is the tail of its chain's write path, so every write committed from then on passes
 * through it; but what it held before may come from an earlier epoch (it missed writes, or it
 * holds versions that were never committed). Per target it keeps, in memory, the chunks it is
 * <em>current</em> on: those a copy from the predecessor or a write stored here has brought up
 * to date during this continuous stretch of syncing. For the others it is no base for a partial
 * update (the predecessor sends whole chunks), cannot tell which version is committed (it
 * answers {@link CraqService#VERSION_UNKNOWN}), and takes the predecessor's copy whatever its
 * version numbers say. The stretch ends (and the set is dropped) when routing shows the target
 * anything but syncing, or when the chain version jumps by more than one between two routings
 * this node saw (it might have been off the write path in between). After the predecessor's
 * sync-done the target is current on every chunk. The set is memory only: a restarted node
 * registers as a new incarnation and is synced from scratch.
 */
final class ResyncReceiver {
    private static final Logger LOG = LoggerFactory.getLogger(ResyncReceiver.class);

    /** One continuous stretch of syncing of one target. */
    static final class Stretch {
        final TargetId target;
        final ChainId chain;
        long chainVersion;
        final Set<ChunkId> current = ConcurrentHashMap.newKeySet();
        volatile boolean complete;

        Stretch(TargetId target, ChainId chain, long chainVersion) {
            this.target = target;
            this.chain = chain;
            this.chainVersion = chainVersion;
        }
    }

    private final StorageNode node;
    private final StorageMetrics metrics;
    private final Map<TargetId, Stretch> stretches = new ConcurrentHashMap<>();

    ResyncReceiver(StorageNode node, StorageMetrics metrics) {
        this.node = node;
        this.metrics = metrics;
    }

    // ---- the stretch of syncing ----

    /** Follows routing: starts, extends or ends each own target's stretch of syncing. */
    void observe(RoutingInfo r) {
        for (ChainInfo c : r.chains().values()) {
            ChainView v = node.viewOrNull(r, c);
            if (v != null) {
                stretch(v);
            }
        }
    }

    /** The stretch {@code view} belongs to, updated by it; null when the view shows the target not syncing. */
    private Stretch stretch(ChainView view) {
        TargetId t = view.self();
        if (view.state() != TargetState.SYNCING) {
            Stretch old = stretches.remove(t);
            if (old != null) {
                LOG.info("{}: {} is {} in {} v{}: its sync stretch ends", node.context().name(), t, view.state().publicName(),
                        view.chain().id(), view.version());
            }
            return null;
        }
        synchronized (this) {
            Stretch s = stretches.get(t);
            long cv = view.version();
            if (s != null && s.chain.equals(view.chain().id()) && cv >= s.chainVersion && cv <= s.chainVersion + 1) {
                s.chainVersion = cv;
                return s;
            }
            if (s != null && s.chain.equals(view.chain().id()) && cv < s.chainVersion) {
                return s; // an old view (a request routed by an older version): the stretch stands
            }
            Stretch fresh = new Stretch(t, view.chain().id(), cv);
            stretches.put(t, fresh);
            LOG.info("{}: {} is syncing in {} v{}{}", node.context().name(), t, view.chain().id(), cv,
                    s == null ? "" : " (a new stretch: v" + s.chainVersion + " -> v" + cv + ")");
            return fresh;
        }
    }

    /**
     * Whether {@code view}'s target is syncing and not yet current on {@code chunk}: what it holds
     * for the chunk is then no base for updates or version answers.
     */
    boolean untrusted(ChainView view, ChunkId chunk) {
        if (view.state() != TargetState.SYNCING) {
            return false;
        }
        Stretch s = stretch(view);
        return s != null && !s.complete && !s.current.contains(chunk);
    }

    /** A write was stored here for {@code chunk}: a syncing target is current on it from now on. */
    void stored(ChainView view, ChunkId chunk) {
        if (view.state() == TargetState.SYNCING) {
            Stretch s = stretch(view);
            if (s != null) {
                s.current.add(chunk);
            }
        }
    }

    // ---- handlers ----

    /** ListChunks: a page of this replica's chunk summaries on the chain (any state: tools use it too). */
    CompletableFuture<Reply> list(Request<ListChunks> req) {
        ListChunks m = req.message();
        return node.gate().serve(() -> node.view(ChainId.of(m.chain()), m.chainVersion()).thenApplyAsync(view -> {
            Optional<ChunkId> after = m.first() ? Optional.empty() : Optional.of(ChunkId.of(m.afterInode(), m.afterIndex()));
            List<ChunkMeta> page = view.engine().scan(after, m.max() + 1);
            List<ChunkSummary> out = new ArrayList<>(Math.min(page.size(), m.max()));
            for (int i = 0; i < page.size() && i < m.max(); i++) {
                out.add(page.get(i).summary());
            }
            return Reply.of(new ChunkList(out, page.size() > m.max()));
        }, node.io()));
    }

    /** ListInodeChunks: the indexes of one inode's chunks this replica holds (the garbage collector, truncate). */
    CompletableFuture<Reply> listInode(Request<ListInodeChunks> req) {
        ListInodeChunks m = req.message();
        return node.gate().serve(() -> node.view(ChainId.of(m.chain()), m.chainVersion()).thenApplyAsync(view -> {
            List<Integer> page = view.engine().indexesOf(InodeId.of(m.inode()), m.fromIndex(), m.max() + 1);
            boolean more = page.size() > m.max();
            return Reply.of(new InodeChunks(more ? page.subList(0, m.max()) : page, more));
        }, node.io()));
    }

    /** SyncChunk: make the chunk a copy of the predecessor's (or forget it), unless this target already holds newer. */
    CompletableFuture<Reply> syncChunk(Request<SyncChunk> req) {
        long start = node.context().clock().nanoTime();
        SyncChunk m = req.message();
        return node.gate().serve(() -> {
            ChunkAddress a = m.chunk().address();
            if (!m.absent() && (m.version() <= 0 || m.length() < 0 || m.length() > a.chunkSize()
                    || (!m.removed() && req.payload().readableBytes() != m.length()) || (m.removed() && req.payload().isReadable()))) {
                throw new StrataException(Status.INVALID_ARGUMENT, "resync copy of chunk " + a.id() + ": version " + m.version()
                        + ", length " + m.length() + ", payload " + req.payload().readableBytes() + " bytes");
            }
            ByteBuf owned = req.takePayload();
            return node.view(a.chain(), m.chainVersion()).thenCompose(view -> {
                view.requireFromPredecessor(req, "SyncChunk");
                if (view.state() != TargetState.SYNCING || !view.isTail()) {
                    throw new StrataException(Status.NOT_SERVING, view.self() + " is " + view.state().publicName()
                            + " in " + a.chain() + " v" + view.version() + ", not syncing");
                }
                Stretch s = stretch(view);
                return node.locks().withLock(view.self(), a.id(), () -> apply(view, s, a, m, owned));
            }).whenComplete((r, e) -> owned.release()).thenApply(applied -> {
                metrics.bytes("resync-in", m.absent() ? 0 : m.length());
                return Reply.of(new SyncChunkDone(applied));
            });
        }).whenComplete((r, e) -> metrics.done("sync-chunk", start, e));
    }

    /** Under the chunk lock. Completes with whether the copy was applied. */
    private CompletableFuture<Boolean> apply(ChainView view, Stretch s, ChunkAddress a, SyncChunk m, ByteBuf data) {
        ChunkEngine engine = view.engine();
        Optional<ChunkMeta> held = engine.find(a.id());
        boolean current = s.complete || s.current.contains(a.id());
        if (m.absent()) {
            if (current || held.isEmpty()) {
                // current: a write reached this chunk after the predecessor's listing (a late duplicate)
                return CompletableFuture.completedFuture(false);
            }
            return engine.dropAsync(held.get()).thenApply(x -> true);
        }
        if (current && held.isPresent() && held.get().committedVersion() > m.version()) {
            return CompletableFuture.completedFuture(false); // a live write got here first
        }
        ChunkMeta base = held.orElse(ChunkMeta.absent(a.id(), a.chunkSize()));
        ChunkVersion like = new ChunkVersion(m.version(), 0, m.removed() ? 0 : (int) m.length(), m.removed() ? 0 : m.crc32c(),
                new int[ChunkEngine.blocks(m.removed() ? 0 : m.length())], m.removed(), m.request());
        return engine.installAsync(base, a.chunkSize(), like, data, m.recent(), view.version()).thenApply(x -> {
            s.current.add(a.id());
            return true;
        });
    }

    /** SyncDone: every chunk was compared and copied under the chain version; report the target up to date. */
    CompletableFuture<Reply> syncDone(Request<SyncDone> req) {
        SyncDone m = req.message();
        return node.gate().serve(() -> node.view(ChainId.of(m.chain()), m.chainVersion()).thenApply(view -> {
            view.requireFromPredecessor(req, "SyncDone");
            if (view.state() != TargetState.SYNCING) {
                throw new StrataException(Status.NOT_SERVING, view.self() + " is " + view.state().publicName() + ", not syncing");
            }
            Stretch s = stretch(view);
            s.complete = true;
            LOG.info("{}: resync of {} in {} v{} done ({} chunks copied, {} removed, {} bytes)", node.context().name(),
                    view.self(), view.chain().id(), view.version(), m.copied(), m.removed(), m.bytes());
            node.synced(view.self(), view.version());
            return Reply.of(new SyncDoneAck(view.version()));
        }));
    }
}
