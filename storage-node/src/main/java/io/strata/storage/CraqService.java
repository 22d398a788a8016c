package io.strata.storage;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.TargetId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.trace.Trace;
import io.strata.core.fault.FaultPoint;
import io.strata.core.fault.FaultScope;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Reply;
import io.strata.core.rpc.Request;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.QosClass;
import io.strata.storage.engine.ChunkEngine;
import io.strata.storage.engine.ChunkMeta;
import io.strata.storage.engine.ChunkVersion;
import io.strata.core.util.Crc32c;
import io.strata.protocol.storage.Applied;
import io.strata.protocol.storage.RequestId;
import io.strata.storage.engine.Update;
import io.strata.protocol.storage.UpdateKind;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import io.strata.protocol.storage.StorageMessage.ForwardUpdate;
import io.strata.protocol.storage.StorageMessage.QueryVersion;
import io.strata.protocol.storage.StorageMessage.ReadChunk;
import io.strata.protocol.storage.StorageMessage.ReadDone;
import io.strata.protocol.storage.StorageMessage.StatChunk;
import io.strata.protocol.storage.StorageMessage.UpdateAcked;
import io.strata.protocol.storage.StorageMessage.VersionIs;
import io.strata.protocol.storage.StorageMessage.WriteChunk;
import io.strata.protocol.storage.StorageMessage.WriteDone;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

/**
 * The CRAQ protocol on one storage node (docs/internals/craq.md).
 *
 * <p><b>Writes</b> enter at the head, which serialises them per chunk ({@link ChunkLocks}),
 * stores the update durably as the pending version v+1, forwards it to the successor and, once
 * the acknowledgement comes back, acknowledges the client and records the commit. Every other
 * node does the same with a forwarded update; the tail stores and commits in one durable step
 * and acknowledges. A version's content is decided once, at the head: an update is only ever
 * forwarded with that same content (a retry, or a roll-forward of a pending version left by a
 * crash, sent as REPLACE), so duplicates and late deliveries are harmless.
 *
 * <p><b>Request ids</b>: the head keeps in-flight writes by request id (a duplicate joins the
 * original) and every replica remembers, per chunk, the last request ids it applied (a retry
 * after completion, or after a restart, gets the original answer instead of a second write).
 *
 * <p><b>Reads</b> go to any serving replica. A clean chunk is served from the local committed
 * version. A dirty one (pending version present) makes the replica ask the tail which version is
 * committed and serve exactly that one (its committed or its pending version).
 */
final class CraqService {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(CraqService.class);
    /** How often a read retries when the chunk moved on while it asked the tail. */
    private static final int READ_ATTEMPTS = 8;
    /** A tail's answer to QueryVersion when it cannot tell (a syncing tail that has not seen the chunk yet). */
    static final long VERSION_UNKNOWN = -1;
    /**
     * Fires before a chunk that fell behind fetches the tail's copy ({@link #catchUp}); scope
     * detail: target and chunk. A test arms it to make the catch-up fail as an unreachable tail
     * would (the fault injector does nothing unless armed).
     */
    static final FaultPoint CATCH_UP = FaultPoint.of("craq.catch-up");

    private final StorageNode node;
    private final Replicator replicator;
    private final ChunkLocks locks;
    private final StorageMetrics metrics;
    private final ResyncReceiver receiver;
    private final ConcurrentHashMap<RequestId, CompletableFuture<WriteDone>> inflight = new ConcurrentHashMap<>();
    /** Whether a replica forwards an update while it stores it ({@code [storage] pipeline}). */
    private final boolean pipeline;
    /** Chunks with a pipelined update being stored here: reads treat them as dirty until it is. */
    private final ConcurrentHashMap<ChunkKey, CompletableFuture<Void>> storing = new ConcurrentHashMap<>();
    /**
     * Chunks whose copy here fell behind its successor's (a pipelined local store failed), with
     * the update that failed; memory only, see {@link #catchUp}.
     */
    private final ConcurrentHashMap<ChunkKey, Missed> behind = new ConcurrentHashMap<>();

    /** Pipelined updates started on this node: a read that saw none start around its snapshot needs no tail check. */
    private final java.util.concurrent.atomic.AtomicLong pipelinedStarts = new java.util.concurrent.atomic.AtomicLong();

    private record ChunkKey(TargetId target, ChunkId chunk) {
    }

    /**
     * The pipelined update whose local store failed on a chunk now {@link #behind}: its request,
     * the version it was to become and the chain version it travelled under.
     */
    private record Missed(RequestId request, long version, long chainVersion) {
    }

    CraqService(StorageNode node, Replicator replicator, StorageMetrics metrics) {
        this.node = node;
        this.replicator = replicator;
        this.metrics = metrics;
        this.receiver = node.receiver();
        this.locks = node.locks();
        this.pipeline = node.config().pipeline();
    }

    private long deadline(Request<?> req, long capNanos) {
        return Math.min(req.deadlineNanos(), node.context().clock().nanoTime() + capNanos);
    }

    private long writeDeadline(Request<?> req) {
        return deadline(req, TimeUnit.SECONDS.toNanos(60));
    }

    /** Range and payload checks shared by client writes and forwarded updates. */
    private static void checkUpdate(ChunkAddress a, UpdateKind kind, long offset, long length, int crc, ByteBuf payload) {
        long end = kind == UpdateKind.WRITE ? offset + length : kind == UpdateKind.REMOVE ? 0 : length;
        if (offset < 0 || length < 0 || end < 0 || end > a.chunkSize() || (kind != UpdateKind.WRITE && offset != 0)
                || (kind == UpdateKind.REMOVE && length != 0)) {
            throw new StrataException(Status.OFFSET_OUT_OF_RANGE, kind + " at offset " + offset + " length " + length
                    + " does not fit chunk " + a.id() + " of " + a.chunkSize() + " bytes");
        }
        boolean hasData = kind == UpdateKind.WRITE || kind == UpdateKind.REPLACE;
        if (hasData ? payload.readableBytes() != length : payload.isReadable()) {
            throw new StrataException(Status.INVALID_ARGUMENT, kind + " of " + length + " bytes came with a payload of "
                    + payload.readableBytes() + " bytes");
        }
        if (hasData && Crc32c.of(payload) != crc) {
            throw new StrataException(Status.CHECKSUM_MISMATCH, "payload of " + kind + " to chunk " + a.id()
                    + " does not match its CRC32C (sent " + Integer.toHexString(crc) + ", got "
                    + Integer.toHexString(Crc32c.of(payload)) + ")");
        }
    }

    private static ChunkMeta checkSize(ChunkMeta meta, ChunkAddress a) {
        if (meta.chunkSize() != a.chunkSize()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "chunk " + a.id() + " has chunk size " + meta.chunkSize()
                    + ", request says " + a.chunkSize());
        }
        return meta;
    }

    private static WriteDone done(ChunkMeta m, long version) {
        return new WriteDone(version, m.committedLength(), m.committed() == null ? 0 : m.committed().crc());
    }

    // ---- client write, at the head ----

    CompletableFuture<Reply> write(Request<WriteChunk> req) {
        long start = node.context().clock().nanoTime();
        WriteChunk m = req.message();
        CompletableFuture<WriteDone> result;
        try {
            node.gate().check();
            ChunkAddress a = m.chunk().address();
            checkUpdate(a, m.kind(), m.offset(), m.length(), m.crc32c(), req.payload());
            if (m.minAck() < 1 || m.minAck() > io.strata.core.tier.IoOptions.MAX_MIN_ACK) {
                throw new StrataException(Status.INVALID_ARGUMENT, "min-ack replicas must be in 1.."
                        + io.strata.core.tier.IoOptions.MAX_MIN_ACK + ", got " + m.minAck());
            }
            metrics.bytes("write", req.payload().readableBytes());
            CompletableFuture<WriteDone> mine = new CompletableFuture<>();
            CompletableFuture<WriteDone> earlier = inflight.putIfAbsent(m.request(), mine);
            if (earlier != null) {
                result = earlier; // a duplicate or a retry of a write still in flight: same outcome
            } else {
                ByteBuf owned = req.takePayload();
                long deadline = writeDeadline(req);
                node.view(a.chain(), m.chainVersion()).thenCompose(view -> {
                    if (!view.isHead()) {
                        throw new StrataException.StaleRouting("writes to " + a.chain() + " enter at its head, not "
                                + view.self() + " (routing v" + view.routing().version() + ")", view.version());
                    }
                    if (!view.state().writable()) {
                        throw new StrataException(Status.NOT_SERVING, view.self() + " is " + view.state().publicName());
                    }
                    // hold for most of the request's time, and answer before the caller gives up on it
                    long at = node.context().clock().nanoTime();
                    long holdUntil = at + (deadline - at) * 4 / 5;
                    return enoughReplicas(view, a, m.minAck(), holdUntil)
                            .thenCompose(now -> locks.withLock(now.self(), a.id(), () -> headUpdate(now, a, m, owned, deadline, mine)));
                }).whenComplete((x, err) -> {
                    owned.release();
                    inflight.remove(m.request(), mine);
                    if (err != null) {
                        mine.completeExceptionally(StrataException.wrap(err));
                    }
                });
                result = mine;
            }
        } catch (RuntimeException e) {
            result = CompletableFuture.failedFuture(e);
        }
        // a node fenced while the write was in flight does not acknowledge it (the client retries
        // with the same request id elsewhere and learns the outcome there)
        return result.thenApply(d -> {
            node.gate().check();
            return d;
        }).whenComplete((r, e) -> metrics.done("write", start, e)).thenApply(Reply::of);
    }

    /** Under the chunk lock: the returned future completes when the lock may be released. */
    private CompletableFuture<?> headUpdate(ChainView view, ChunkAddress a, WriteChunk m, ByteBuf payload, long deadline,
                                            CompletableFuture<WriteDone> reply) {
        checkTailCurrent(view);
        if (behind.containsKey(new ChunkKey(view.self(), a.id()))) {
            return catchUp(view, a, deadline).thenCompose(x -> headUpdate(view, a, m, payload, deadline, reply));
        }
        ChunkEngine engine = view.engine();
        ChunkMeta meta = checkSize(engine.meta(a.id(), a.chunkSize()), a);
        Optional<Long> applied = meta.versionOf(m.request());
        if (applied.isPresent() && applied.get() <= meta.committedVersion()) {
            return completeApplied(view, a, m, meta, applied.get(), deadline, reply);
        }
        CompletableFuture<ChunkMeta> clean = meta.dirty() ? resolvePending(view, a, meta, deadline) : CompletableFuture.completedFuture(meta);
        return clean.thenCompose(base -> {
            Optional<Long> now = base.versionOf(m.request());
            if (now.isPresent() && now.get() <= base.committedVersion()) {
                // it was the pending version we just completed
                return completeApplied(view, a, m, base, now.get(), deadline, reply);
            }
            long version = base.committedVersion() + 1;
            Update update = new Update(m.kind(), m.offset(), m.length(), m.request());
            ForwardUpdate fwd = new ForwardUpdate(m.chunk(), view.version(), m.request(), version, m.kind(), m.offset(), m.length(),
                    m.crc32c(), m.qos());
            return store(view, a, base, update, payload, fwd, deadline).thenApply(stored -> {
                int need = minAck(view, m.minAck());
                if (stored.replicas < need) {
                    // committed where it is stored, but not acknowledged: a retry (same request id) is
                    // acknowledged once the chain has enough serving replicas again
                    reply.completeExceptionally(tooFew(view, a, need, stored.replicas + " stored it"));
                } else {
                    reply.complete(done(stored.meta, version));
                }
                return stored;
            }).thenCompose(stored -> stored.commit).thenAccept(x -> { });
        });
    }

    /** The replicas a write must reach before it is acknowledged: its minimum, capped at the chain's replicas. */
    private static int minAck(ChainView view, int asked) {
        return Math.min(asked, view.chain().replicas());
    }

    private static StrataException tooFew(ChainView view, ChunkAddress a, int need, String have) {
        return new StrataException(Status.TOO_FEW_REPLICAS, "write to chunk " + a.id() + " not acknowledged: " + view.chain().id()
                + " needs " + need + " replicas (replicas.min-ack) and " + have + " (write path " + view.writePath()
                + " in routing v" + view.routing().version() + ")");
    }

    /**
     * Holds a write at the head until the chain's write path has at least the write's minimum
     * of targets (a routing change wakes it), or until {@code deadline}: then
     * {@code TOO_FEW_REPLICAS}. Completes with the view to write under (the newest).
     */
    private CompletableFuture<ChainView> enoughReplicas(ChainView view, ChunkAddress a, int asked, long deadline) {
        int need = minAck(view, asked);
        if (view.writePath().size() >= need) {
            return CompletableFuture.completedFuture(view);
        }
        long left = deadline - node.context().clock().nanoTime();
        if (left <= 0) {
            return CompletableFuture.failedFuture(tooFew(view, a, need, "only " + view.writePath().size() + " can take writes"));
        }
        CompletableFuture<Void> timer = new CompletableFuture<>();
        java.util.concurrent.ScheduledFuture<?> t = node.context().scheduler().schedule(() -> timer.complete(null),
                Math.min(left, TimeUnit.SECONDS.toNanos(1)), TimeUnit.NANOSECONDS);
        return CompletableFuture.anyOf(timer, node.routingChanged()).thenComposeAsync(x -> {
            t.cancel(false);
            node.gate().check(); // a node shutting down answers a held write at once
            ChainView now = node.viewOf(a.chain(), view.self());
            if (!now.isHead()) {
                throw new StrataException.StaleRouting("writes to " + a.chain() + " enter at its head, not " + now.self()
                        + " (routing v" + now.routing().version() + ")", now.version());
            }
            return enoughReplicas(now, a, asked, deadline);
        }, node.io());
    }

    /**
     * Under the chunk lock, a write whose request id this chunk already applied (a retry; the
     * head holds {@code version} committed, and the tail committed it before the head did):
     * acknowledged with the original answer only when at least the write's minimum of replicas
     * hold the version, else refused with {@code TOO_FEW_REPLICAS} like a new write. The returned
     * future completes when the lock may be released.
     *
     * <p>Serving replicas need not hold it: one whose pipelined store of the version failed
     * ({@link #behind}) and whose catch-up keeps failing serves the chain without it, and the
     * head's forward gave up on it at the attempt's deadline. So what the head knows is this: it
     * holds the version and, when it is not the tail, so does the tail. When the minimum is more
     * than that, the head rolls its committed version forward down the chain (as REPLACE, or
     * REMOVE, of the same version: {@link #confirm}), which is how a new write proves its copies
     * too ({@code UpdateAcked} counts the replicas from the sender to the tail). A replica that
     * has the version answers at once; one that is behind catches up from the tail first, or
     * fails and is retried until the deadline; one that lost it stores it again. The default
     * minimum of 2 never pays for this: the head's and the tail's copies are enough.
     */
    private CompletableFuture<Void> completeApplied(ChainView view, ChunkAddress a, WriteChunk m, ChunkMeta meta, long version,
                                                    long deadline, CompletableFuture<WriteDone> reply) {
        int need = minAck(view, m.minAck());
        long serving = view.writePath().stream().filter(t -> view.routing().target(t).state() == TargetState.SERVING).count();
        if (serving < need) {
            reply.completeExceptionally(tooFew(view, a, need, "only " + serving + " serving ones can hold it"));
            return CompletableFuture.completedFuture(null);
        }
        int known = view.isTail() ? 1 : 2;
        if (need <= known) {
            reply.complete(done(meta, version));
            return CompletableFuture.completedFuture(null);
        }
        // confirm for most of the request's time, and answer before the caller gives up on it
        long at = node.context().clock().nanoTime();
        return confirm(view, a, meta, m.qos(), at + (deadline - at) * 4 / 5).handle((held, err) -> {
            if (err != null) {
                reply.completeExceptionally(tooFew(view, a, need, "only the head's and the tail's copies are confirmed (rolling v"
                        + meta.committedVersion() + " forward down the chain failed: " + StrataException.unwrapCompletion(err) + ")"));
            } else if (held < need) {
                reply.completeExceptionally(tooFew(view, a, need, "only " + held + " hold it"));
            } else {
                reply.complete(done(meta, version));
            }
            return (Void) null;
        });
    }

    /**
     * Under the chunk lock, at the head: forwards its committed version down the chain again, the
     * whole content as a REPLACE (a REMOVE for a removal) of the same version, and completes with
     * how many replicas from here to the tail hold it (or a newer version). Every copy of a
     * version is the same bytes (its content was decided once, here), so a successor that holds
     * it only acknowledges, one that is behind catches up from the tail first, and one without
     * it stores it.
     */
    private CompletableFuture<Integer> confirm(ChainView view, ChunkAddress a, ChunkMeta meta, QosClass qos, long deadline) {
        ChunkVersion c = meta.committed();
        ByteBuf content;
        try {
            content = readWhole(view.engine(), a.id(), c);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        UpdateKind kind = c.removed() ? UpdateKind.REMOVE : UpdateKind.REPLACE;
        ForwardUpdate fwd = new ForwardUpdate(ChunkRef.of(a), view.version(), c.request(), c.version(), kind, 0,
                c.removed() ? 0 : c.length(), Crc32c.of(content), qos);
        return passOn(view, a, meta, fwd, content, deadline)
                .whenComplete((s, e) -> content.release())
                .thenApply(s -> s.replicas);
    }

    /**
     * Under the chunk lock, before a tail stores anything: refuses with {@code StaleRouting}
     * (the sender retries under the new routing) when this node's routing moved past
     * {@code view} while the update waited for the lock. A tail commits without forwarding, and a
     * newer chain version may have put a syncing target behind this one: its resync session
     * scans this target once the lock holders it found have finished (ResyncWorker), so an
     * update committed here later under the old version would reach neither the session nor
     * the syncing target.
     */
    private void checkTailCurrent(ChainView view) {
        if (!view.isTail()) {
            return;
        }
        long now = node.routing().current().chain(view.chain().id()).version();
        if (now != view.version()) {
            throw new StrataException.StaleRouting(view.chain().id() + " moved from v" + view.version() + " to v" + now
                    + " while an update waited for its chunk at " + view.self(), now);
        }
    }

    /**
     * A stored-and-acknowledged version: its meta once committed, the future of the commit
     * record, and how many targets from this one to the tail store it.
     */
    private record Stored(ChunkMeta meta, CompletableFuture<?> commit, int replicas) {
    }

    /**
     * Stores {@code update} as version {@code fwd.version()} on this replica, forwards it to the
     * successor and waits for the acknowledgement (at the tail: stores it committed). Completes
     * when the version is committed from here to the tail; the local commit record follows.
     */
    private CompletableFuture<Stored> store(ChainView view, ChunkAddress a, ChunkMeta base, Update update, ByteBuf payload,
                                            ForwardUpdate fwd, long deadline) {
        ChunkEngine engine = view.engine();
        boolean tail = view.isTail();
        long trace = Trace.current(); // the request's (its handler runs under it): the forward below carries it
        Optional<TargetId> succ = view.successor();
        boolean pipelined = !tail && pipeline && succ.isPresent()
                && view.routing().target(succ.get()).state() == TargetState.SERVING;
        ChunkKey key = new ChunkKey(view.self(), a.id());
        CompletableFuture<Void> storing = new CompletableFuture<>();
        if (pipelined) {
            // reads of this chunk here treat it as dirty until the local copy is stored (see readClean)
            this.storing.put(key, storing);
            pipelinedStarts.incrementAndGet();
        }
        // only the local write takes a slot: a slot held across the forward could wait on a
        // successor whose slots wait on this node (two chains with heads on each other's disks)
        CompletableFuture<ChunkMeta> applied = node.scheduler(view.self()).submit(fwd.qos(), payload.readableBytes(),
                () -> engine.applyAsync(base, update, payload, fwd.version(), view.version(), tail));
        // a damaged base is repaired from another replica first; when pipelined, the chain is ahead
        // of this replica by then, so it catches up from the tail instead (below), which also
        // keeps two replicas repairing from each other from waiting on each other's stores
        CompletableFuture<ChunkMeta> local = (pipelined ? applied : applied.exceptionallyCompose(err -> repairedBase(view, a, err)
                        .thenCompose(fixed -> node.scheduler(view.self()).submit(fwd.qos(), payload.readableBytes(),
                                () -> engine.applyAsync(fixed, update, payload, fwd.version(), view.version(), tail)))))
                .whenComplete((w, e) -> {
                    if (e == null) {
                        receiver.stored(view, a.id());
                    } else if (pipelined) {
                        // the forward may have put the chain ahead of this copy already (the tail may
                        // have committed the version): from now on no read is served from it. Marked
                        // before the storing mark goes, so no read finds the chunk clean in between
                        // (the forward's answer may be seconds away; see below)
                        behind.put(key, new Missed(fwd.request(), fwd.version(), view.version()));
                    }
                    this.storing.remove(key, storing);
                    storing.complete(null);
                });
        if (!pipelined) {
            return local.thenCompose(written -> {
                if (tail) {
                    return CompletableFuture.completedFuture(new Stored(written, CompletableFuture.completedFuture(null), 1));
                }
                try (Trace.Scope scope = Trace.open(trace)) {
                    return passOn(view, a, written, fwd, payload, deadline);
                }
            });
        }
        // pipelined: the update goes to the successor while it is stored here (docs/internals/craq.md)
        metrics.bytes("forward", payload.readableBytes());
        CompletableFuture<Optional<UpdateAcked>> remote = replicator.forward(a.chain(), view.self(), fwd, payload, () -> {
            // the successor turned syncing meanwhile and needs the whole version: only once it is stored here
            if (!local.isDone() || local.isCompletedExceptionally()) {
                throw new StrataException(Status.CHUNK_BUSY, "version " + fwd.version() + " of chunk " + a.id()
                        + " is not stored on " + view.self() + " yet");
            }
            return readWhole(engine, a.id(), local.join().version(fwd.version()).orElse(null));
        }, deadline);
        return both(local, remote).thenCompose(r -> {
            if (r.localError() != null) {
                // the successor may hold (and the tail may have committed) a version this replica does
                // not: even when the forward failed, its answer may have been lost after the tail
                // committed. Never serve or build on the copy here (the chunk is marked behind since
                // the store failed): catch up from the tail first.
                LOG.warn("{}: storing v{} of chunk {} failed while it was forwarded to {} ({}; the forward {}); catching the "
                                + "chunk up from the tail", node.context().name(), fwd.version(), a.id(), succ.get(),
                        r.localError().toString(), r.remoteError() == null ? "succeeded" : "failed: " + r.remoteError());
                if (r.remoteError() != null) {
                    return CompletableFuture.failedFuture(r.localError());
                }
                // the version is committed from the successor to the tail: the tail's copy is this
                // update's result, and once installed here the update is stored on this replica too
                return catchUp(view, a, deadline).thenApply(caught -> {
                    if (caught.committedVersion() != fwd.version()) {
                        throw new CompletionException(r.localError());
                    }
                    return new Stored(caught, CompletableFuture.completedFuture(null), r.ack().map(x -> x.replicas() + 1).orElse(1));
                });
            }
            if (r.remoteError() != null) {
                return CompletableFuture.failedFuture(r.remoteError());
            }
            ChunkMeta written = r.written();
            if (r.ack().isEmpty()) { // routing made this replica the tail meanwhile: its commit is the commit point
                return engine.commitAsync(written, fwd.version(), true).thenApply(c -> new Stored(c, CompletableFuture.completedFuture(null), 1));
            }
            CompletableFuture<ChunkMeta> commit = engine.commitAsync(written, fwd.version(), false);
            return CompletableFuture.completedFuture(new Stored(written.commitPending(), commit, r.ack().get().replicas() + 1));
        });
    }

    /** Both halves of a pipelined update, each with its outcome. */
    private record Both(ChunkMeta written, Throwable localError, Optional<UpdateAcked> ack, Throwable remoteError) {
    }

    private static CompletableFuture<Both> both(CompletableFuture<ChunkMeta> local, CompletableFuture<Optional<UpdateAcked>> remote) {
        return local.handle((w, le) -> new Both(w, le == null ? null : StrataException.wrap(StrataException.unwrapCompletion(le)), null, null))
                .thenCombine(remote.handle((ack, re) -> new Both(null, null, ack,
                                re == null ? null : StrataException.wrap(StrataException.unwrapCompletion(re)))),
                        (l, r) -> new Both(l.written(), l.localError(), r.ack(), r.remoteError()));
    }

    /**
     * Under the chunk lock, at a replica whose pipelined local store failed after its successor
     * stored the version ({@link #behind}): replaces the local copy with the tail's committed
     * version, whole, so this replica neither serves an older version than the chain committed
     * nor reuses a version number the chain already holds. The tail itself is never behind (it
     * forwards nothing).
     *
     * <p>The copy keeps the request ids this replica remembers, and adds the failed update's
     * ({@link Missed}) when the tail holds exactly the version that update was to become, under
     * the chain version it travelled under: a version's content is decided once, by the chain's
     * head, and with the chain unchanged (same head) nothing else can have been decided for it,
     * so the tail's copy is that update's result. Without the id, the client's retry of a write
     * the tail committed would be applied a second time (a new version, and its bytes written
     * again over any write that came between). After a chain change the id is left out: the
     * retry then reaches a head that holds the version with its id, or applies it anew.
     */
    private CompletableFuture<ChunkMeta> catchUp(ChainView view, ChunkAddress a, long deadline) {
        ChunkKey key = new ChunkKey(view.self(), a.id());
        ChunkEngine engine = view.engine();
        Missed missed = behind.get(key);
        if (missed == null) {
            return CompletableFuture.completedFuture(checkSize(engine.meta(a.id(), a.chunkSize()), a));
        }
        if (view.isTail()) {
            behind.remove(key, missed);
            return CompletableFuture.completedFuture(checkSize(engine.meta(a.id(), a.chunkSize()), a));
        }
        try {
            node.context().faults().fire(CATCH_UP, FaultScope.detail(view.self() + " " + a.id()));
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        ReadChunk ask = new ReadChunk(ChunkRef.of(a), view.version(), 0, a.chunkSize(), QosClass.BACKGROUND);
        long left = Math.max(TimeUnit.MILLISECONDS.toNanos(1), deadline - node.context().clock().nanoTime());
        return node.rpc().call(view.nodeOf(view.tail()).address(), ask, Payload.NONE, java.time.Duration.ofNanos(left))
                .thenCompose(resp -> {
                    ReadDone d;
                    ByteBuf data;
                    try (resp) {
                        d = resp.message(ReadDone.class);
                        data = resp.takePayload();
                    }
                    if (d.checked() && Crc32c.of(data) != d.crc32c()) {
                        data.release();
                        throw new StrataException(Status.CHECKSUM_MISMATCH, "catching up chunk " + a.id() + " from the tail: bytes "
                                + "do not match their CRC32C");
                    }
                    CompletableFuture<ChunkMeta> installed;
                    try {
                        ChunkMeta meta = checkSize(engine.meta(a.id(), a.chunkSize()), a);
                        boolean same = d.version() == missed.version() && view.version() == missed.chainVersion();
                        RequestId request = same ? missed.request() : RequestId.NONE;
                        if (d.removed() && data.isReadable()) {
                            throw new StrataException(Status.INTERNAL, "catching up chunk " + a.id() + " from the tail: v"
                                    + d.version() + " is a removal but came with " + data.readableBytes() + " bytes");
                        }
                        if (d.version() == 0) {
                            // the tail never stored the chunk (its first version failed everywhere)
                            installed = engine.dropAsync(meta);
                        } else {
                            // a removal is installed as one: an empty version would make this replica list
                            // and stat the chunk as existing while its peers hold a tombstone
                            ChunkVersion like = d.removed() ? ChunkVersion.tombstone(d.version(), request)
                                    : ChunkEngine.versionOf(d.version(), data, request);
                            installed = engine.installAsync(meta, a.chunkSize(), like, data,
                                    same ? remembering(meta.recent(), missed) : meta.recent(), view.version());
                        }
                    } catch (RuntimeException e) {
                        installed = CompletableFuture.failedFuture(e);
                    }
                    return installed.whenComplete((m, e) -> {
                        data.release();
                        if (e == null) {
                            behind.remove(key, missed);
                        }
                    });
                });
    }

    /** {@code recent} with the missed update first (the newest), as many as a chunk remembers. */
    private static java.util.List<Applied> remembering(java.util.List<Applied> recent, Missed missed) {
        java.util.List<Applied> out = new java.util.ArrayList<>(ChunkMeta.RECENT);
        out.add(new Applied(missed.request(), missed.version()));
        for (Applied r : recent) {
            if (out.size() < ChunkMeta.RECENT && !r.request().equals(missed.request())) {
                out.add(r);
            }
        }
        return out;
    }

    /**
     * An update failed on {@code err}: when that is a corrupt base version (the engine checks the
     * bytes it keeps), repairs the chunk from another replica (we hold its lock) and returns the
     * repaired metadata to apply the update on; otherwise, or when no replica has a good copy,
     * fails with {@code err}.
     */
    private CompletableFuture<ChunkMeta> repairedBase(ChainView view, ChunkAddress a, Throwable err) {
        StrataException se = StrataException.wrap(StrataException.unwrapCompletion(err));
        if (se.status() != Status.CHUNK_CORRUPT) {
            return CompletableFuture.failedFuture(se);
        }
        return node.scrubber().repairLocked(view.self(), a.id(), a.chunkSize()).thenCompose(r -> r.outcome() == Scrubber.Outcome.REPAIRED
                ? CompletableFuture.completedFuture(r.meta()) : CompletableFuture.failedFuture(se));
    }

    /**
     * Forwards a stored pending version and, once acknowledged, records its commit here (not
     * flushed: see craq.md). When routing made this replica the tail meanwhile, its own commit is
     * the commit point, so it is flushed before anyone is acknowledged.
     */
    private CompletableFuture<Stored> passOn(ChainView view, ChunkAddress a, ChunkMeta written, ForwardUpdate fwd, ByteBuf payload,
                                             long deadline) {
        metrics.bytes("forward", payload.readableBytes());
        ChunkVersion stored = written.version(fwd.version()).orElse(null);
        return replicator.forward(a.chain(), view.self(), fwd, payload, () -> readWhole(view.engine(), a.id(), stored), deadline)
                .thenCompose(ack -> {
                    if (ack.isEmpty()) {
                        return view.engine().commitAsync(written, fwd.version(), true)
                                .thenApply(c -> new Stored(c, CompletableFuture.completedFuture(null), 1));
                    }
                    CompletableFuture<ChunkMeta> commit = view.engine().commitAsync(written, fwd.version(), false);
                    return CompletableFuture.completedFuture(new Stored(written.commitPending(), commit, ack.get().replicas() + 1));
                });
    }

    /**
     * A pending version that no write in flight owns (its head crashed, its client gave up):
     * ask the tail. Committed there: record the commit here. Not committed (or the tail cannot
     * tell: a syncing tail that has not seen the chunk yet): roll it forward.
     */
    private CompletableFuture<ChunkMeta> resolvePending(ChainView view, ChunkAddress a, ChunkMeta meta, long deadline) {
        ChunkVersion p = meta.pending();
        ChunkEngine engine = view.engine();
        if (view.isTail()) {
            return engine.commitAsync(meta, p.version(), true);
        }
        return replicator.committedAtTail(a.chain(), view.self(), ChunkRef.of(a), deadline).thenCompose(committed -> {
            if (committed >= p.version()) {
                return engine.commitAsync(meta, p.version(), false);
            }
            return rollForward(view, a, meta, deadline);
        });
    }

    /**
     * Rolls a pending version forward: forwards its content as REPLACE of the same version (so
     * every replica after this one ends with the same version v, whatever it held), then commits
     * it here. Safe whether or not the version was committed somewhere before: its content was
     * decided once, at the head. Call under the chunk lock.
     */
    CompletableFuture<ChunkMeta> rollForward(ChainView view, ChunkAddress a, ChunkMeta meta, long deadline) {
        ChunkVersion p = meta.pending();
        ChunkEngine engine = view.engine();
        if (view.isTail()) {
            return engine.commitAsync(meta, p.version(), true);
        }
        ByteBuf content = readWhole(engine, a.id(), p);
        UpdateKind kind = p.removed() ? UpdateKind.REMOVE : UpdateKind.REPLACE;
        ForwardUpdate fwd = new ForwardUpdate(ChunkRef.of(a), view.version(), p.request(), p.version(), kind, 0,
                p.removed() ? 0 : p.length(), Crc32c.of(content), QosClass.BACKGROUND);
        return passOn(view, a, meta, fwd, content, deadline)
                .whenComplete((s, e) -> content.release())
                .thenCompose(s -> s.commit.thenApply(x -> s.meta));
    }

    /** The whole content of {@code v} (an owned buffer). */
    static ByteBuf readWhole(ChunkEngine engine, ChunkId id, ChunkVersion v) {
        if (v == null || v.removed() || v.length() == 0) {
            return Unpooled.EMPTY_BUFFER;
        }
        try (FileChannel ch = engine.openData(id, v)) {
            return engine.read(id, v, ch, 0, v.length(), ByteBufAllocator.DEFAULT);
        } catch (IOException e) {
            throw new CompletionException(StrataException.wrap(e));
        }
    }

    // ---- forwarded update, at every node after the head ----

    CompletableFuture<Reply> forward(Request<ForwardUpdate> req) {
        long start = node.context().clock().nanoTime();
        ForwardUpdate m = req.message();
        CompletableFuture<UpdateAcked> reply = new CompletableFuture<>();
        try {
            node.gate().check();
            ChunkAddress a = m.chunk().address();
            checkUpdate(a, m.kind(), m.offset(), m.length(), m.crc32c(), req.payload());
            if (m.version() <= 0) {
                throw new StrataException(Status.INVALID_ARGUMENT, "update version must be positive, got " + m.version());
            }
            ByteBuf owned = req.takePayload();
            long deadline = writeDeadline(req);
            node.view(a.chain(), m.chainVersion()).thenCompose(view -> {
                if (view.position() <= 0) {
                    throw new StrataException.StaleRouting(view.self() + " is not a successor on the write path of " + a.chain()
                            + " in routing v" + view.routing().version(), view.version());
                }
                view.requireFromPredecessor(req, "ForwardUpdate");
                return locks.withLock(view.self(), a.id(), () -> successorUpdate(view, a, m, owned, deadline, reply));
            }).whenComplete((x, err) -> {
                owned.release();
                if (err != null) {
                    reply.completeExceptionally(StrataException.wrap(err));
                }
            });
        } catch (RuntimeException e) {
            reply.completeExceptionally(e);
        }
        return reply.whenComplete((r, e) -> metrics.done("forward", start, e)).thenApply(Reply::of);
    }

    private CompletableFuture<?> successorUpdate(ChainView view, ChunkAddress a, ForwardUpdate m, ByteBuf payload, long deadline,
                                                 CompletableFuture<UpdateAcked> reply) {
        checkTailCurrent(view);
        if (receiver.untrusted(view, a.id())) {
            return syncingUpdate(view, a, m, payload, reply);
        }
        if (behind.containsKey(new ChunkKey(view.self(), a.id()))) {
            return catchUp(view, a, deadline).thenCompose(x -> successorUpdate(view, a, m, payload, deadline, reply));
        }
        ChunkEngine engine = view.engine();
        ChunkMeta meta = checkSize(engine.meta(a.id(), a.chunkSize()), a);
        long u = m.version();
        ChunkVersion p = meta.pending();
        if (meta.committedVersion() >= u || (p != null && p.version() > u)) {
            // a duplicate or late delivery of an update this replica already has committed
            // committed at the tail before: every target from here on the path stores it or is being synced
            reply.complete(new UpdateAcked(u, meta.committedLength(), meta.committed() == null ? 0 : meta.committed().crc(),
                    view.writePath().size() - view.position()));
            return CompletableFuture.completedFuture(null);
        }
        boolean alreadyStored = p != null && p.version() == u && p.request().equals(m.request());
        CompletableFuture<ChunkMeta> base = CompletableFuture.completedFuture(meta);
        if (p != null && p.version() < u) {
            // the predecessor only sends v+1 after v committed at the tail: our record of that commit was lost or is late
            base = engine.commitAsync(meta, p.version(), false);
        }
        return base.thenCompose(b -> {
            if (m.kind() != UpdateKind.REPLACE && m.kind() != UpdateKind.REMOVE && !alreadyStored && b.committedVersion() != u - 1) {
                throw new StrataException(Status.CHUNK_BUSY, view.self() + " holds v" + b.committedVersion() + " of chunk " + a.id()
                        + " and cannot apply v" + u + " on top (out of sync; resync brings it back)");
            }
            CompletableFuture<Stored> stored;
            if (alreadyStored) {
                stored = view.isTail()
                        ? engine.commitAsync(b, u, true).thenApply(c -> new Stored(c, CompletableFuture.completedFuture(null), 1))
                        : passOn(view, a, b, m, payload, deadline);
            } else {
                Update update = new Update(m.kind(), m.offset(), m.length(), m.request());
                stored = store(view, a, b, update, payload, m, deadline);
            }
            return stored.thenCompose(s -> {
                ChunkMeta c = s.meta;
                reply.complete(new UpdateAcked(u, c.committedLength(), c.committed() == null ? 0 : c.committed().crc(), s.replicas));
                return s.commit;
            });
        });
    }

    /**
     * A forwarded update at a syncing target for a chunk it has not been brought up to date on
     * yet (docs/internals/resync.md): what it holds may come from an earlier epoch and is no
     * base for anything. A full replace or a removal is stored as given (committed: a syncing
     * target is the tail); anything else is refused with CHUNK_BUSY, and the predecessor's retry
     * sends the whole chunk.
     */
    private CompletableFuture<?> syncingUpdate(ChainView view, ChunkAddress a, ForwardUpdate m, ByteBuf payload,
                                               CompletableFuture<UpdateAcked> reply) {
        if ((m.kind() != UpdateKind.REPLACE && m.kind() != UpdateKind.REMOVE) || !view.isTail()) {
            throw new StrataException(Status.CHUNK_BUSY, view.self() + " is syncing and has no base for " + m.kind() + " v"
                    + m.version() + " of chunk " + a.id() + " yet (the predecessor sends whole chunks)");
        }
        ChunkEngine engine = view.engine();
        ChunkMeta held = engine.find(a.id()).orElse(ChunkMeta.absent(a.id(), a.chunkSize()));
        ChunkMeta base = new ChunkMeta(a.id(), a.chunkSize(), held.chainVersion(), held.committed(), held.pending(), held.recent());
        Update update = new Update(m.kind(), 0, m.length(), m.request());
        return engine.applyAsync(base, update, payload, m.version(), view.version(), true).thenApply(c -> {
            receiver.stored(view, a.id());
            reply.complete(new UpdateAcked(m.version(), c.committedLength(), c.committed() == null ? 0 : c.committed().crc(), 1));
            return c;
        });
    }

    // ---- reads, at any serving replica ----

    CompletableFuture<Reply> read(Request<ReadChunk> req) {
        long start = node.context().clock().nanoTime();
        ReadChunk m = req.message();
        return node.gate().serve(() -> {
            ChunkAddress a = m.chunk().address();
            if (m.offset() < 0 || m.length() < 0 || m.offset() + m.length() > a.chunkSize()) {
                throw new StrataException(Status.OFFSET_OUT_OF_RANGE, "read of " + m.length() + " bytes at offset " + m.offset()
                        + " does not fit chunk " + a.id() + " of " + a.chunkSize() + " bytes");
            }
            long deadline = deadline(req, TimeUnit.SECONDS.toNanos(30));
            return node.view(a.chain(), m.chainVersion()).thenCompose(view -> {
                if (!view.state().readable()) {
                    throw new StrataException(Status.NOT_SERVING, view.self() + " is " + view.state().publicName() + ", not serving reads");
                }
                // a clean chunk is read in a slot of the target's QoS scheduler; a dirty one (a write
                // in flight) is read outside it, as settling may wait for that write's own slot
                // a corrupt version fails the read (the client asks another replica) and is repaired behind it
                return node.scheduler(view.self()).submit(m.qos(), m.length(), () -> readClean(view, a, m))
                        .thenCompose(r -> r != null ? CompletableFuture.completedFuture(r) : readAttempt(view, a, m, deadline, 1))
                        .whenComplete((r, e) -> {
                            if (e != null) {
                                node.scrubber().suspect(view.self(), a, e);
                            }
                        });
            });
        }).whenComplete((r, e) -> {
            if (r != null) {
                metrics.bytes("read", r.payload().length());
            }
            metrics.done("read", start, e);
        });
    }

    /** Serves the read when the chunk has no pending version here; null otherwise. */
    /**
     * A snapshot of the chunk, and whether it must be read as dirty: a pending version, or a
     * pipelined update of it in flight here (the tail may have committed a version this replica
     * has not stored yet). A pipelined update that started on this node around the snapshot
     * counts as in flight too (it may have come and gone between two looks at {@link #storing}).
     */
    private record Look(Snapshot snap, boolean dirty) {
    }

    private Look look(ChainView view, ChunkAddress a) {
        ChunkKey key = new ChunkKey(view.self(), a.id());
        if (behind.containsKey(key)) {
            // kick the catch-up off; readers go to another replica meanwhile
            locks.withLock(view.self(), a.id(), () -> catchUp(view, a, node.context().clock().nanoTime() + TimeUnit.SECONDS.toNanos(30)));
            throw new StrataException(Status.CHUNK_BUSY, view.self() + " is catching up chunk " + a.id() + " from the tail");
        }
        long started = pipelinedStarts.get();
        boolean inFlight = storing.containsKey(key);
        Snapshot snap = Snapshot.open(view.engine(), a);
        inFlight |= storing.containsKey(key) || pipelinedStarts.get() != started;
        if (behind.containsKey(key)) {
            // a pipelined store failed since the first look (it marks the chunk behind before it
            // clears its storing mark, so a second look that found no storing mark sees this)
            snap.close();
            throw new StrataException(Status.CHUNK_BUSY, view.self() + " is catching up chunk " + a.id() + " from the tail");
        }
        return new Look(snap, snap.meta.dirty() || inFlight);
    }

    private CompletableFuture<Reply> readClean(ChainView view, ChunkAddress a, ReadChunk m) {
        return CompletableFuture.supplyAsync(() -> {
            Look l = look(view, a);
            if (l.dirty()) {
                l.snap().close();
                return null;
            }
            return serve(view.engine(), a, m, l.snap(), l.snap().meta.committed());
        }, node.io());
    }

    private CompletableFuture<Reply> readAttempt(ChainView view, ChunkAddress a, ReadChunk m, long deadline, int attempt) {
        return CompletableFuture.supplyAsync(() -> look(view, a), node.io()).thenCompose(l -> {
            Snapshot snap = l.snap();
            if (!l.dirty()) {
                return CompletableFuture.completedFuture(serve(view.engine(), a, m, snap, snap.meta.committed()));
            }
            if (view.isTail()) {
                snap.close();
                return settleThenRead(view, a, m, deadline, attempt);
            }
            return replicator.committedAtTail(a.chain(), view.self(), ChunkRef.of(a), deadline).handleAsync((committed, err) -> {
                if (err != null) {
                    snap.close();
                    throw new CompletionException(StrataException.wrap(err));
                }
                if (committed == VERSION_UNKNOWN) {
                    snap.close();
                    return settleThenRead(view, a, m, deadline, attempt);
                }
                if (committed == snap.meta.committedVersion()) {
                    return CompletableFuture.completedFuture(serve(view.engine(), a, m, snap, snap.meta.committed()));
                }
                ChunkVersion pending = snap.meta.pending();
                if (pending != null && committed == pending.version()) {
                    return CompletableFuture.completedFuture(serve(view.engine(), a, m, snap, pending));
                }
                snap.close();
                // the chunk moved on while we asked: look again
                if (attempt >= READ_ATTEMPTS || node.context().clock().nanoTime() > deadline) {
                    throw new StrataException(Status.CHUNK_BUSY, "chunk " + a.id() + " keeps changing under the read (tail has v"
                            + committed + ", this replica " + snap.meta.committedVersion() + "/"
                            + (pending == null ? "-" : pending.version()) + ")");
                }
                // the tail committed a version whose pipelined store here is still running: wait for it
                CompletableFuture<Void> running = storing.get(new ChunkKey(view.self(), a.id()));
                return running == null ? readAttempt(view, a, m, deadline, attempt + 1)
                        : running.thenCompose(x -> readAttempt(view, a, m, deadline, attempt + 1));
            }, node.io()).thenCompose(f -> f);
        });
    }

    /**
     * A dirty chunk whose committed version the tail cannot tell: this node is the tail itself
     * (a pending version left over from before it became the tail), or the tail is a syncing
     * target that has not seen the chunk in this sync. Waits for any write in flight on the
     * chunk (takes its lock), resolves a pending version still left by rolling it forward
     * (committing it at the tail), and reads again. The read then returns a version committed
     * within its own interval.
     */
    private CompletableFuture<Reply> settleThenRead(ChainView view, ChunkAddress a, ReadChunk m, long deadline, int attempt) {
        if (attempt >= READ_ATTEMPTS || node.context().clock().nanoTime() > deadline) {
            return CompletableFuture.failedFuture(new StrataException(Status.CHUNK_BUSY, "chunk " + a.id()
                    + " stays dirty on " + view.self() + " and its tail cannot tell which version is committed"));
        }
        return locks.withLock(view.self(), a.id(), () -> {
            ChainView now = node.viewOf(a.chain(), view.self());
            ChunkMeta meta = checkSize(now.engine().meta(a.id(), a.chunkSize()), a);
            if (!meta.dirty()) {
                return CompletableFuture.completedFuture(meta);
            }
            return rollForward(now, a, meta, deadline);
        }).thenCompose(x -> readAttempt(view, a, m, deadline, attempt + 1));
    }

    /** Serves version {@code v} from the snapshot (closing the snapshot's other file). */
    private Reply serve(ChunkEngine engine, ChunkAddress a, ReadChunk m, Snapshot snap, ChunkVersion v) {
        FileChannel ch = snap.take(v);
        snap.close();
        try {
            long version = v == null ? 0 : v.version();
            boolean removed = v != null && v.removed();
            long length = removed ? 0 : v == null ? 0 : v.length();
            int n = (int) Math.max(0, Math.min(m.length(), length - m.offset()));
            // the payload's CRC32C from the stored block CRCs when the range is block-aligned (whole chunks are)
            long stored = ChunkEngine.rangeCrc(v, m.offset(), n);
            if (!engine.options().verifyReads() && ch != null && n > 0) {
                // zero-copy: sendfile from the chunk file; the client checks the bytes against the stored CRC
                FileChannel give = ch;
                ch = null;
                return Reply.of(new ReadDone(version, length, stored >= 0, (int) stored, removed), Payload.ofFile(give, m.offset(), n));
            }
            ByteBuf data = engine.read(a.id(), v, ch, m.offset(), m.length(), ByteBufAllocator.DEFAULT);
            int crc = stored >= 0 ? (int) stored : Crc32c.of(data);
            return Reply.of(new ReadDone(version, length, true, crc, removed), Payload.of(data));
        } finally {
            closeQuietly(ch);
        }
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // read-only
            }
        }
    }

    /** A chunk's metadata with its versions' data files already open (so neither can vanish under the read). */
    private static final class Snapshot implements AutoCloseable {
        final ChunkMeta meta;
        private FileChannel committed;
        private FileChannel pending;

        private Snapshot(ChunkMeta meta, FileChannel committed, FileChannel pending) {
            this.meta = meta;
            this.committed = committed;
            this.pending = pending;
        }

        static Snapshot open(ChunkEngine engine, ChunkAddress a) {
            for (int i = 0; ; i++) {
                ChunkMeta meta = checkSize(engine.meta(a.id(), a.chunkSize()), a);
                FileChannel c = null;
                try {
                    c = engine.openData(a.id(), meta.committed());
                    FileChannel p = engine.openData(a.id(), meta.pending());
                    return new Snapshot(meta, c, p);
                } catch (StrataException e) {
                    closeQuietly(c);
                    // a file can vanish between reading the metadata and opening it (superseded); look again
                    if (e.status() != Status.CHUNK_CORRUPT || i >= 3 || engine.meta(a.id(), a.chunkSize()).equals(meta)) {
                        throw e;
                    }
                } catch (IOException e) {
                    closeQuietly(c);
                    throw StrataException.wrap(e);
                }
            }
        }

        /** The open file of {@code v}, handed over (the snapshot no longer closes it). */
        FileChannel take(ChunkVersion v) {
            FileChannel out = null;
            if (v != null && meta.committed() != null && v.version() == meta.committed().version()) {
                out = committed;
                committed = null;
            } else if (v != null && meta.pending() != null && v.version() == meta.pending().version()) {
                out = pending;
                pending = null;
            }
            return out;
        }

        @Override
        public void close() {
            closeQuietly(committed);
            closeQuietly(pending);
            committed = null;
            pending = null;
        }
    }

    // ---- version queries and stats ----

    CompletableFuture<Reply> query(Request<QueryVersion> req) {
        QueryVersion m = req.message();
        return inspect("query", m.chunk(), m.chainVersion(), (view, a) -> {
            if (!view.isTail()) {
                throw new StrataException.StaleRouting(view.self() + " is not the tail of " + a.chain(), view.version());
            }
            if (receiver.untrusted(view, a.id())) {
                return Reply.of(new VersionIs(VERSION_UNKNOWN)); // a syncing tail that has not seen this chunk yet
            }
            ChunkMeta meta = view.engine().meta(a.id(), a.chunkSize());
            return Reply.of(new VersionIs(meta.committedVersion()));
        });
    }

    CompletableFuture<Reply> stat(Request<StatChunk> req) {
        StatChunk m = req.message();
        return inspect("stat", m.chunk(), m.chainVersion(), (view, a) -> {
            ChunkMeta meta = view.engine().meta(a.id(), a.chunkSize());
            ChunkVersion c = meta.committed();
            return Reply.of(new ChunkStat(meta.committedVersion(), meta.pending() == null ? 0 : meta.pending().version(),
                    meta.committedLength(), c == null ? 0 : c.crc(), c != null && c.removed()));
        });
    }

    /**
     * A question about one chunk that changes nothing (query, stat): through the serving gate,
     * answered from the chain view on the I/O pool, counted and timed as {@code op}.
     */
    private CompletableFuture<Reply> inspect(String op, ChunkRef chunk, long chainVersion,
                                             BiFunction<ChainView, ChunkAddress, Reply> answer) {
        long start = node.context().clock().nanoTime();
        return node.gate().serve(() -> {
            ChunkAddress a = chunk.address();
            return node.view(a.chain(), chainVersion).thenApplyAsync(view -> answer.apply(view, a), node.io());
        }).whenComplete((r, e) -> metrics.done(op, start, e));
    }
}
