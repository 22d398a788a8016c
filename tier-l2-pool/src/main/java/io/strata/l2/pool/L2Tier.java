package io.strata.l2.pool;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.micrometer.core.instrument.Counter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.CachedCopies;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.FileChunks;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.StagingControl;
import io.strata.core.tier.Tier;
import io.strata.core.tier.TierKind;
import io.strata.core.util.Crc32c;
import io.strata.l2.Holders;
import io.strata.placement.L2Placement;
import io.strata.placement.RoutingSource;
import io.strata.protocol.l2.L2Message;
import io.strata.protocol.l2.L2Messages;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Meta;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.Staging;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.UpdateKind;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The L2 tier as a client sees it: the pool of L2 agents over the tier below (L3), for files
 * whose policy stages them ({@code tiers.l2 = stage}, carried in {@link IoOptions#stage()});
 * every other call passes through untouched. The protocol is docs/internals/l2.md.
 *
 * <p><b>Writes.</b> The first write of a file opens (or joins) its staging epoch at the meta
 * service, which fixes the candidate agents; each chunk's update goes to the chunk's first
 * holder ({@link Holders}), which answers once every holder stored it. When a holder is down or
 * full, the chunk moves: the surviving holders stay, the next agents of the ranking replace the
 * others, and the new holders are recorded as an override; a chunk never written in L2 in the
 * epoch is written through to L3 when no agent can take it (never ENOSPC while L3 has room); a
 * chunk whose every copy is gone fails with DATA_LOST.
 *
 * <p><b>fsync and close</b> ({@link #flushAsync}): every agent written to fdatasyncs the file's
 * copies, then the client publishes what it wrote (chunks, overrides). With
 * {@code durability = l2} that is all; otherwise (or when a copy could not be synced) it waits
 * until the staging record says the publish is durable in L3. When every chunk the record lists
 * was written through to L3 (the pool was full or down), no agent holds anything of the file to
 * drain and report: the client reports the publish durable itself (L3 acknowledged the writes).
 *
 * <p><b>Reads.</b> A chunk the record says was written in the epoch is read from its holders;
 * a holder that drained and evicted its copy sends the reader below; any other chunk is read
 * below. A chunk no holder has, while the record is not durable, is lost: the read fails with
 * DATA_LOST naming the file and chunk, and the record is marked lost.
 *
 * <p><b>Prefetched copies.</b> A file that is not staged but has copies a prefetch put in L2
 * ({@link CachedCopies} in its stage hints) is read from the agent its chunk ranks first among
 * the copies' agents ({@link Holders#cachedRanking}), or the next, of those that serve: a copy
 * at the file's data version whose bytes match their CRC is returned; anything else (no copy,
 * another version, an error) reads below. L2 never fails such a read.
 */
public final class L2Tier implements Tier, StagingControl {
    private static final Logger LOG = LoggerFactory.getLogger(L2Tier.class);
    private static final int ATTEMPTS = 4;
    /** Warm calls a restore's staging keeps in flight. */
    private static final int WARM_WINDOW = 32;
    /** Agents a read of a prefetched chunk tries before it reads below. */
    private static final int CACHED_TRIES = 2;
    /** The longest a read waits for an agent's prefetched copy before it reads below. */
    private static final Duration CACHED_TIMEOUT = Duration.ofSeconds(5);

    private final NodeContext ctx;
    private final Tier below;
    private final Meta meta;
    private final RoutingSource routing;
    private final RpcClient rpc;
    private final long clientId;
    private final AtomicLong seq = new AtomicLong();
    private final ConcurrentHashMap<InodeId, Staged> staged = new ConcurrentHashMap<>();
    private final Cache<InodeId, Seen> records = Caffeine.newBuilder().maximumSize(16_384).expireAfterWrite(Duration.ofSeconds(30))
            .executor(Runnable::run).build();
    private final Counter writeThrough;
    private final Counter moved;
    private final Counter shortOfCopies;
    private final Counter cachedHit;
    private final Counter cachedMiss;

    /** A record this client read, at the file's data version then. */
    private record Seen(long dataVersion, Optional<Staging> record) {
    }

    /** What this client has staged of one file in the current epoch. */
    private static final class Staged {
        final InodeId inode;
        final CompletableFuture<Staging> opened;
        volatile Staging record;
        /** Holders this client chose off the placement for chunks (empty: written through to L3). */
        final Map<Integer, List<Integer>> overrides = new ConcurrentHashMap<>();
        final Set<Integer> unpublished = new ConcurrentSkipListSet<>();
        final Set<Integer> writtenHere = ConcurrentHashMap.newKeySet();
        final Set<Integer> agents = ConcurrentHashMap.newKeySet();
        /** No agent served when the file was opened: every chunk goes below. */
        final boolean through;
        int inflight;
        boolean retired;
        /** Whether this client logged that a chunk of the file has too few L2 copies for durability = l2 (in this epoch). */
        final java.util.concurrent.atomic.AtomicBoolean warnedShort = new java.util.concurrent.atomic.AtomicBoolean();

        Staged(InodeId inode, CompletableFuture<Staging> opened, boolean through) {
            this.inode = inode;
            this.opened = opened;
            this.through = through;
        }

        boolean inL2(int index) {
            Staging r = record;
            return writtenHere.contains(index) || (r != null && r.wasWritten(index));
        }

        List<Integer> holders(int index) {
            if (through) {
                return List.of();
            }
            List<Integer> mine = overrides.get(index);
            return mine != null ? mine : Holders.of(record, index);
        }
    }

    /** {@code below} stays the caller's; {@code meta} records staging, {@code routing} finds agents. */
    public L2Tier(NodeContext ctx, Tier below, Meta meta, RoutingSource routing, RpcOptions rpcOptions) {
        this.ctx = ctx;
        this.below = below;
        this.meta = meta;
        this.routing = routing;
        this.rpc = new RpcClient(ctx, L2Messages.PROTOCOL, rpcOptions);
        this.clientId = ctx.random().nextLong() & Long.MAX_VALUE | 1L;
        this.writeThrough = Counter.builder("strata.l2.client.write.through")
                .description("first writes of a staged chunk no L2 agent could take, written to L3 instead").register(ctx.meters());
        this.moved = Counter.builder("strata.l2.client.moved")
                .description("staged chunks moved to other agents because a holder was down or full").register(ctx.meters());
        this.shortOfCopies = Counter.builder("strata.l2.client.fsync.short.of.copies")
                .description("fsyncs and closes under durability = l2 that waited for L3 because a staged chunk had fewer L2 copies"
                        + " than the file's l2.replicas (too few agents serving, or a holder lost)").register(ctx.meters());
        this.cachedHit = Counter.builder("strata.l2.client.cached.hit")
                .description("reads of a file's prefetched chunks served by an L2 agent").register(ctx.meters());
        this.cachedMiss = Counter.builder("strata.l2.client.cached.miss")
                .description("reads of a file's prefetched chunks that found no copy at its data version in L2 and read L3").register(ctx.meters());
    }

    @Override
    public <T> Optional<T> facet(Class<T> type) {
        return type == StagingControl.class ? Optional.of(type.cast(this)) : Optional.empty();
    }

    @Override
    public TierKind kind() {
        return TierKind.L2;
    }

    // ---- writes ----

    @Override
    public CompletableFuture<Void> writeAsync(ChunkAddress chunk, long offset, ByteBuf data, IoOptions io) {
        if (!io.stage().stage()) {
            return below.writeAsync(chunk, offset, data, io);
        }
        try {
            chunk.checkRange(offset, data.readableBytes());
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return update(chunk, UpdateKind.WRITE, offset, data.readableBytes(), data, io);
    }

    @Override
    public CompletableFuture<Void> truncateAsync(ChunkAddress chunk, long length, IoOptions io) {
        if (!io.stage().stage()) {
            return below.truncateAsync(chunk, length, io);
        }
        return cut(chunk, UpdateKind.TRUNCATE, length, io);
    }

    @Override
    public CompletableFuture<Void> removeAsync(ChunkAddress chunk, IoOptions io) {
        if (!io.stage().stage()) {
            return below.removeAsync(chunk, io);
        }
        return cut(chunk, UpdateKind.REMOVE, 0, io);
    }

    /** A truncate or removal: through L2 when the chunk was staged in this epoch (then published at once), else below. */
    private CompletableFuture<Void> cut(ChunkAddress chunk, UpdateKind kind, long length, IoOptions io) {
        return open(chunk.id().inode(), io).thenCompose(st -> {
            int index = chunk.id().index();
            if (!st.inL2(index) || st.holders(index).isEmpty()) {
                return kind == UpdateKind.REMOVE ? below.removeAsync(chunk, io) : below.truncateAsync(chunk, length, io);
            }
            return update(chunk, kind, 0, length, Unpooled.EMPTY_BUFFER, io).thenCompose(v -> publish(st));
        });
    }

    private CompletableFuture<Void> update(ChunkAddress chunk, UpdateKind kind, long offset, long length, ByteBuf data, IoOptions io) {
        InodeId inode = chunk.id().inode();
        return open(inode, io).thenCompose(st -> {
            synchronized (st) {
                if (st.retired) {
                    return update(chunk, kind, offset, length, data, io); // published and let go meanwhile: open it again
                }
                st.inflight++;
            }
            int index = chunk.id().index();
            List<Integer> holders = st.holders(index);
            CompletableFuture<Void> f;
            if (holders.isEmpty()) {
                f = belowUpdate(chunk, kind, offset, length, data, io);
            } else {
                io.strata.protocol.storage.RequestId id = new io.strata.protocol.storage.RequestId(clientId, seq.incrementAndGet());
                f = attempt(st, chunk, id, kind, offset, length, data, io, holders, st.inL2(index), 1, Set.of());
            }
            return f.whenComplete((v, e) -> {
                synchronized (st) {
                    st.inflight--;
                    if (e == null && !st.through) {
                        st.unpublished.add(index);
                        st.writtenHere.add(index);
                    }
                }
            });
        });
    }

    private CompletableFuture<Void> belowUpdate(ChunkAddress chunk, UpdateKind kind, long offset, long length, ByteBuf data, IoOptions io) {
        return switch (kind) {
            case WRITE -> below.writeAsync(chunk, offset, data, io);
            case TRUNCATE -> below.truncateAsync(chunk, length, io);
            case REMOVE -> below.removeAsync(chunk, io);
            case REPLACE -> below.replaceAsync(chunk, data, io);
        };
    }

    private CompletableFuture<Void> attempt(Staged st, ChunkAddress chunk, io.strata.protocol.storage.RequestId id, UpdateKind kind,
                                            long offset, long length, ByteBuf data, IoOptions io, List<Integer> holders,
                                            boolean inL2, int n, Set<Integer> excluded) {
        int crc = kind == UpdateKind.WRITE ? Crc32c.of(data) : 0;
        L2Message.Write m = new L2Message.Write(ChunkRef.of(chunk), st.record.epoch(), id, kind, offset, length, crc, inL2, holders,
                io.qos());
        CompletableFuture<Void> sent;
        try {
            java.net.InetSocketAddress to = address(holders.get(0)); // before the payload exists: nothing to release if it fails
            Payload p = kind == UpdateKind.WRITE && data.isReadable() ? Payload.of(data.retainedDuplicate()) : Payload.NONE;
            sent = rpc.call(to, m, p, io.timeout(), io.qos().lane(p.length()), io.trace()).thenAccept(resp -> {
                try (resp) {
                    resp.message(L2Message.Written.class);
                }
            });
        } catch (RuntimeException e) {
            sent = CompletableFuture.failedFuture(e);
        }
        return sent.handle((v, e) -> {
            if (e == null) {
                st.agents.addAll(holders);
                return CompletableFuture.<Void>completedFuture(null);
            }
            StrataException se = StrataException.wrap(e);
            if (n >= ATTEMPTS || !movable(se.status())) {
                return CompletableFuture.<Void>failedFuture(se);
            }
            return probe(holders, se.status() == Status.NO_SPACE || se.status() == Status.NOT_FOUND ? holders.get(0) : -1)
                    .thenCompose(dead -> retry(st, chunk, id, kind, offset, length, data, io, holders, inL2, n, excluded, dead, se));
        }).thenCompose(f -> f);
    }

    private CompletableFuture<Void> retry(Staged st, ChunkAddress chunk, io.strata.protocol.storage.RequestId id, UpdateKind kind,
                                          long offset, long length, ByteBuf data, IoOptions io, List<Integer> holders, boolean inL2,
                                          int n, Set<Integer> excluded, Set<Integer> newlyDead, StrataException why) {
        int index = chunk.id().index();
        if (newlyDead.isEmpty()) {
            // every holder answers: a passing failure; try the same holders again shortly
            return delay(Duration.ofMillis(50L * n))
                    .thenCompose(v -> attempt(st, chunk, id, kind, offset, length, data, io, holders, inL2, n + 1, excluded));
        }
        Set<Integer> dead = new java.util.HashSet<>(excluded);
        dead.addAll(newlyDead);
        List<Integer> next = new ArrayList<>();
        for (int h : holders) {
            if (!dead.contains(h)) {
                next.add(h);
            }
        }
        if (next.isEmpty() && inL2) {
            return CompletableFuture.failedFuture(new StrataException(Status.DATA_LOST, st.inode + ": chunk " + index
                    + ": every L2 copy is unreachable (agents " + holders + ") and its newest bytes are not yet in L3: " + why.getMessage()));
        }
        RoutingInfo r = routing.current();
        for (int h : Holders.ranking(st.record, index)) {
            if (next.size() >= st.record.replicas()) {
                break;
            }
            if (!dead.contains(h) && !next.contains(h) && Holders.serving(r, h)) {
                next.add(h);
            }
        }
        moved.increment();
        if (next.isEmpty()) {
            writeThrough.increment();
            LOG.info("{}: no L2 agent can take chunk {} of {} ({}); writing it through to L3", ctx.name(), index, st.inode, why.getMessage());
            st.overrides.put(index, List.of());
            return belowUpdate(chunk, kind, offset, length, data, io);
        }
        LOG.debug("{}: chunk {} of {} moves from agents {} to {} ({})", ctx.name(), index, st.inode, holders, next, why.getMessage());
        st.overrides.put(index, List.copyOf(next));
        return attempt(st, chunk, id, kind, offset, length, data, io, List.copyOf(next), inL2, n + 1, Set.copyOf(dead));
    }

    private static boolean movable(Status s) {
        return s.retryable() || s == Status.NO_SPACE || s == Status.NOT_FOUND || s == Status.IO_ERROR;
    }

    /** The holders that do not answer, are fenced, lost their disk, or ({@code suspect}) refused the update itself. */
    private CompletableFuture<Set<Integer>> probe(List<Integer> holders, int suspect) {
        Set<Integer> dead = ConcurrentHashMap.newKeySet();
        if (suspect > 0) {
            dead.add(suspect);
        }
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (int h : holders) {
            if (h == suspect) {
                continue;
            }
            CompletableFuture<Void> f;
            try {
                f = rpc.call(address(h), new L2Message.GetStatus(), Payload.NONE, Duration.ofSeconds(2)).thenAccept(resp -> {
                    try (resp) {
                        L2Message.Status st = resp.message(L2Message.Status.class);
                        if (st.fenced() || st.diskFailed()) {
                            dead.add(h);
                        }
                    }
                });
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            all.add(f.exceptionally(e -> {
                dead.add(h);
                return null;
            }));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(v -> dead);
    }

    /** The file's staging state here, opening (or joining) its epoch at the meta service on first use. */
    private CompletableFuture<Staged> open(InodeId inode, IoOptions io) {
        Staged st = staged.computeIfAbsent(inode, i -> {
            List<Staging.Candidate> candidates = Holders.candidates(routing.current());
            CompletableFuture<Staging> f = meta.stageOpenAsync(Caller.ROOT, i, L2Placement.VERSION, io.stage().replicas(), candidates,
                    newRequest());
            return new Staged(i, f, false);
        });
        return st.opened.handle((rec, e) -> {
            if (e != null) {
                StrataException se = StrataException.wrap(e);
                if (se.status() == Status.NOT_SERVING) {
                    // no agent serves and nothing is staged: the file is written through to L3 until it is published
                    Staged through = throughOnly(inode);
                    return CompletableFuture.completedFuture(staged.replace(inode, st, through) ? through : staged.get(inode))
                            .thenCompose(x -> x == null ? open(inode, io) : CompletableFuture.completedFuture(x));
                }
                staged.remove(inode, st);
                return CompletableFuture.<Staged>failedFuture(se);
            }
            if (st.record == null) {
                st.record = rec;
            }
            return CompletableFuture.completedFuture(st);
        }).thenCompose(f -> f);
    }

    /** A staging state that sends every chunk below (no agent served when the file was opened). */
    private Staged throughOnly(InodeId inode) {
        Staging none = Staging.begin(inode, 0, L2Placement.VERSION, 1, List.of(), 0);
        Staged st = new Staged(inode, CompletableFuture.completedFuture(none), true);
        st.record = none;
        return st;
    }

    private RequestId newRequest() {
        return RequestId.create(ctx.clock().now().toEpochMilli(), ctx.random());
    }

    // ---- fsync, close ----

    @Override
    public CompletableFuture<Void> flushAsync(InodeId inode, IoOptions io) {
        if (!io.stage().stage()) {
            return below.flushAsync(inode, io);
        }
        Staged st = staged.get(inode);
        if (st == null || st.record == null) {
            return below.flushAsync(inode, io);
        }
        if (st.through) {
            return below.flushAsync(inode, io).thenRun(() -> retireIfIdle(st));
        }
        List<CompletableFuture<Boolean>> syncs = new ArrayList<>();
        for (int a : Set.copyOf(st.agents)) {
            CompletableFuture<Boolean> f;
            try {
                f = rpc.call(address(a), new L2Message.Sync(inode.value()), L2Message.Synced.class).thenApply(s -> true);
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            syncs.add(f.exceptionally(e -> {
                LOG.warn("{}: agent {} could not sync {} ({}); waiting for L3 instead", ctx.name(), a, inode, e.toString());
                return false;
            }));
        }
        return CompletableFuture.allOf(syncs.toArray(CompletableFuture[]::new)).thenCompose(v -> {
            boolean allSynced = syncs.stream().allMatch(CompletableFuture::join);
            return publish(st).thenCompose(x -> {
                Staging s = st.record;
                if (io.stage().durableL2() && allSynced) {
                    int shortIndex = shortChunk(s);
                    if (shortIndex < 0) {
                        return CompletableFuture.<Void>completedFuture(null);
                    }
                    shortOfCopies.increment();
                    if (st.warnedShort.compareAndSet(false, true)) {
                        LOG.info("{}: chunk {} of {} has {} of its {} L2 copies (agents serving: {}); its fsyncs wait until"
                                + " the drain makes it durable in L3", ctx.name(), shortIndex, inode, Holders.of(s, shortIndex).size(),
                                s.replicas(), Holders.candidates(routing.current()).size());
                    }
                }
                if (allThrough(s)) {
                    // L3 acknowledged every chunk's write, as it acknowledges a drain's
                    return meta.drainReportAsync(Caller.ROOT, inode, s.epoch(), s.publishVersion(), true, newRequest())
                            .thenAccept(r -> records.invalidate(inode));
                }
                return awaitDurable(st, s.publishVersion(), ctx.clock().nanoTime() + TimeUnit.MINUTES.toNanos(30), 5);
            });
        }).thenCompose(v -> below.flushAsync(inode, io)).thenRun(() -> retireIfIdle(st));
    }

    /** Publishes what this client staged of the file since its last publish (nothing: no call). */
    private CompletableFuture<Void> publish(Staged st) {
        TreeSet<Integer> chunks;
        Map<Integer, List<Integer>> overrides;
        synchronized (st) {
            chunks = new TreeSet<>(st.unpublished);
            overrides = new TreeMap<>(st.overrides);
        }
        if (chunks.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        overrides.keySet().retainAll(chunks);
        Staging.Delta d = new Staging.Delta(overrides, ranges(chunks));
        return meta.stagePublishAsync(Caller.ROOT, st.inode, st.record.epoch(), d, newRequest()).thenAccept(r -> {
            synchronized (st) {
                st.record = r;
                st.unpublished.removeAll(chunks);
            }
            records.invalidate(st.inode);
        });
    }

    /**
     * A chunk the record lists as written that L2 holds in fewer copies than the record's
     * replicas (the pool had fewer agents than that, or a holder failed and too few were left to
     * take its place); -1 when there is none. Chunks written through to L3 are not short.
     */
    private static int shortChunk(Staging s) {
        return firstWritten(s, holders -> !holders.isEmpty() && holders.size() < s.replicas());
    }

    /** Whether every chunk the record lists as written went through to L3 (none is held in L2). */
    private static boolean allThrough(Staging s) {
        return firstWritten(s, holders -> !holders.isEmpty()) < 0;
    }

    /** The first chunk the record lists as written whose holders match {@code test}; -1 when none does. */
    private static int firstWritten(Staging s, java.util.function.Predicate<List<Integer>> test) {
        for (Staging.Range range : s.written()) {
            for (long i = range.first(); i <= range.last(); i++) {
                if (test.test(Holders.of(s, (int) i))) {
                    return (int) i;
                }
            }
        }
        return -1;
    }

    private static List<Staging.Range> ranges(TreeSet<Integer> chunks) {
        List<Staging.Range> out = new ArrayList<>();
        int first = -1;
        int last = -2;
        for (int i : chunks) {
            if (i != last + 1) {
                if (first >= 0) {
                    out.add(new Staging.Range(first, last));
                }
                first = i;
            }
            last = i;
        }
        if (first >= 0) {
            out.add(new Staging.Range(first, last));
        }
        return out;
    }

    /** Waits until the record's durable version reaches {@code version}; DATA_LOST when it is lost. */
    private CompletableFuture<Void> awaitDurable(Staged st, long version, long deadlineNanos, long pauseMillis) {
        return meta.stagingAsync(Caller.ROOT, st.inode).thenCompose(r -> {
            if (r.isEmpty()) {
                return CompletableFuture.failedFuture(new StrataException(Status.NOT_FOUND, st.inode + " has no staging record any more"));
            }
            Staging s = r.get();
            if (s.state() == Staging.State.LOST) {
                return CompletableFuture.failedFuture(new StrataException(Status.DATA_LOST, st.inode + ": staged bytes were lost: " + s.lost()));
            }
            if (s.epoch() != st.record.epoch() || s.durableVersion() >= version) {
                return CompletableFuture.completedFuture(null);
            }
            if (ctx.clock().nanoTime() > deadlineNanos) {
                return CompletableFuture.failedFuture(new StrataException(Status.TIMEOUT, st.inode + ": not durable in L3 after 30 minutes"));
            }
            return delay(Duration.ofMillis(pauseMillis)).thenCompose(v -> awaitDurable(st, version, deadlineNanos, Math.min(200, pauseMillis * 2)));
        });
    }

    /** Lets go of a file's state once nothing of it is unpublished or in flight here. */
    private void retireIfIdle(Staged st) {
        synchronized (st) {
            if (st.inflight == 0 && st.unpublished.isEmpty() && !st.retired) {
                st.retired = true;
                staged.remove(st.inode, st);
            }
        }
    }

    // ---- reads ----

    @Override
    public CompletableFuture<ByteBuf> readAsync(ChunkAddress chunk, long offset, int length, IoOptions io) {
        if (!io.stage().stage()) {
            CachedCopies cached = io.stage().cached();
            if (cached == null) {
                return below.readAsync(chunk, offset, length, io);
            }
            RoutingInfo r = routing.current();
            List<Integer> tries = Holders.cachedRanking(chunk.id().inode().value(), chunk.id().index(), cached.agents()).stream()
                    .filter(a -> Holders.serving(r, a)).limit(CACHED_TRIES).toList();
            return readCached(chunk, offset, length, io, cached.dataVersion(), tries, 0);
        }
        InodeId inode = chunk.id().inode();
        int index = chunk.id().index();
        Staged mine = staged.get(inode);
        CompletableFuture<Optional<Staging>> rec = mine != null && mine.record != null && mine.record.epoch() > 0
                ? CompletableFuture.completedFuture(Optional.of(mine.record)) : recordOf(inode, io.dataVersion());
        return rec.thenCompose(r -> {
            if (r.isEmpty()) {
                return below.readAsync(chunk, offset, length, io);
            }
            Staging s = r.get();
            boolean writtenHere = mine != null && mine.writtenHere.contains(index);
            if (!writtenHere && !s.wasWritten(index)) {
                return below.readAsync(chunk, offset, length, io);
            }
            List<Integer> holders = mine != null && mine.overrides.containsKey(index) ? mine.overrides.get(index) : Holders.of(s, index);
            if (holders.isEmpty()) {
                return below.readAsync(chunk, offset, length, io);
            }
            return readFrom(s, chunk, offset, length, io, holders, 0, 0, writtenHere);
        });
    }

    private CompletableFuture<ByteBuf> readFrom(Staging s, ChunkAddress chunk, long offset, int length, IoOptions io, List<Integer> holders,
                                                int i, int unreachable, boolean writtenHere) {
        if (i >= holders.size()) {
            return lost(s, chunk, offset, length, io, holders, unreachable, writtenHere);
        }
        int h = holders.get(i);
        L2Message.Read m = new L2Message.Read(ChunkRef.of(chunk), s.epoch(), offset, length, io.qos());
        CompletableFuture<io.strata.core.rpc.Response> call;
        try {
            call = rpc.call(address(h), m, Payload.NONE, io.timeout(), io.qos().lane(length), io.trace());
        } catch (RuntimeException e) {
            call = CompletableFuture.failedFuture(e);
        }
        return call.handle((resp, e) -> {
            if (e != null) {
                return readFrom(s, chunk, offset, length, io, holders, i + 1, unreachable + 1, writtenHere);
            }
            try (resp) {
                L2Message.ReadDone d = resp.message(L2Message.ReadDone.class);
                if (d.present()) {
                    ByteBuf b = resp.takePayload();
                    if (Crc32c.of(b) != d.crc32c()) {
                        b.release();
                        return readFrom(s, chunk, offset, length, io, holders, i + 1, unreachable, writtenHere);
                    }
                    return CompletableFuture.completedFuture(b);
                }
                if (d.drainedSeq() >= 0) {
                    return below.readAsync(chunk, offset, length, io); // drained, then evicted: L3 has it
                }
                return readFrom(s, chunk, offset, length, io, holders, i + 1, unreachable, writtenHere);
            }
        }).thenCompose(f -> f);
    }

    /** Reads a prefetched chunk from agent {@code tries[i]}, else the next one, else below. */
    private CompletableFuture<ByteBuf> readCached(ChunkAddress chunk, long offset, int length, IoOptions io, long dataVersion,
                                                  List<Integer> tries, int i) {
        if (i >= tries.size()) {
            cachedMiss.increment();
            return below.readAsync(chunk, offset, length, io);
        }
        L2Message.Read m = new L2Message.Read(ChunkRef.of(chunk), 0, offset, length, io.qos());
        CompletableFuture<io.strata.core.rpc.Response> call;
        try {
            Duration timeout = io.timeout().compareTo(CACHED_TIMEOUT) < 0 ? io.timeout() : CACHED_TIMEOUT;
            call = rpc.call(address(tries.get(i)), m, Payload.NONE, timeout, io.qos().lane(length), io.trace());
        } catch (RuntimeException e) {
            call = CompletableFuture.failedFuture(e);
        }
        return call.handle((resp, e) -> {
            if (e == null) {
                try (resp) {
                    L2Message.ReadDone d = resp.message(L2Message.ReadDone.class);
                    if (d.present() && d.seq() == dataVersion) {
                        ByteBuf b = resp.takePayload();
                        if (Crc32c.of(b) == d.crc32c()) {
                            cachedHit.increment();
                            return CompletableFuture.completedFuture(b);
                        }
                        b.release();
                    }
                } catch (RuntimeException bad) {
                    LOG.debug("{}: agent {} answered a read of prefetched {} oddly: {}", ctx.name(), tries.get(i), chunk.id(), bad.toString());
                }
            }
            return readCached(chunk, offset, length, io, dataVersion, tries, i + 1);
        }).thenCompose(f -> f);
    }

    private CompletableFuture<ByteBuf> lost(Staging s, ChunkAddress chunk, long offset, int length, IoOptions io, List<Integer> holders,
                                            int unreachable, boolean writtenHere) {
        if (s.state() == Staging.State.DURABLE && !writtenHere) {
            return below.readAsync(chunk, offset, length, io); // every publish is in L3
        }
        String what = s.inode() + ": chunk " + chunk.id().index();
        if (unreachable > 0) {
            return CompletableFuture.failedFuture(new StrataException(Status.DATA_LOST, what + ": no L2 copy can be reached (agents "
                    + holders + ") and its newest bytes are not yet durable in L3"));
        }
        String why = "chunk " + chunk.id().index() + ": every L2 copy is gone (agents " + holders + ") before it was drained to L3";
        return meta.stageLostAsync(Caller.ROOT, s.inode(), why, newRequest()).handle((x, e) -> {
            records.invalidate(s.inode());
            return CompletableFuture.<ByteBuf>failedFuture(new StrataException(Status.DATA_LOST, s.inode() + ": " + why));
        }).thenCompose(f -> f);
    }

    private CompletableFuture<Optional<Staging>> recordOf(InodeId inode, long dataVersion) {
        Seen seen = records.getIfPresent(inode);
        if (seen != null && seen.dataVersion() >= dataVersion) {
            return CompletableFuture.completedFuture(seen.record());
        }
        return meta.stagingAsync(Caller.ROOT, inode).thenApply(r -> {
            records.put(inode, new Seen(dataVersion, r));
            return r;
        });
    }

    // ---- warming (a restore is coming) ----

    /**
     * Makes every chunk of {@code inode} that was written in its staging epoch present on its
     * holders again, so that reads are served from L2: a holder that evicted its copy after the
     * drain fetches it back from L3. Only a file durable in L3 is warmed (before that, its copies
     * cannot have been evicted); a file never staged is left to L3 ({@code staged} false).
     */
    @Override
    public CompletableFuture<Warmed> warmAsync(InodeId inode, java.util.function.IntFunction<ChunkAddress> address, IoOptions io) {
        return meta.stagingAsync(Caller.ROOT, inode).thenCompose(r -> {
            if (r.isEmpty() || r.get().state() != Staging.State.DURABLE) {
                return CompletableFuture.completedFuture(new Warmed(r.isPresent(), 0, 0, 0));
            }
            Staging s = r.get();
            List<L2Message.Warm> todo = new ArrayList<>();
            List<Integer> to = new ArrayList<>();
            for (Staging.Range range : s.written()) {
                for (int index = range.first(); index <= range.last(); index++) {
                    List<Integer> holders = Holders.of(s, index);
                    for (int h : holders) {
                        todo.add(new L2Message.Warm(ChunkRef.of(address.apply(index)), s.epoch(), holders));
                        to.add(h);
                    }
                }
            }
            return warmFrom(todo, to, 0, new Warmed(true, 0, 0, 0), io).whenComplete((w, e) -> records.invalidate(inode));
        });
    }

    /** Warms {@code todo[from..]}, {@value #WARM_WINDOW} calls at a time. */
    private CompletableFuture<Warmed> warmFrom(List<L2Message.Warm> todo, List<Integer> to, int from, Warmed sum, IoOptions io) {
        if (from >= todo.size()) {
            return CompletableFuture.completedFuture(sum);
        }
        int end = Math.min(todo.size(), from + WARM_WINDOW);
        List<CompletableFuture<L2Message.Warmed>> calls = new ArrayList<>();
        for (int i = from; i < end; i++) {
            calls.add(rpc.call(address(to.get(i)), todo.get(i), Payload.NONE, io.timeout()).thenApply(resp -> {
                try (resp) {
                    return resp.message(L2Message.Warmed.class);
                }
            }));
        }
        return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).thenCompose(v -> {
            int present = sum.present();
            int fetched = sum.fetched();
            long bytes = sum.fetchedBytes();
            for (CompletableFuture<L2Message.Warmed> c : calls) {
                L2Message.Warmed w = c.join();
                if (w.fetched()) {
                    fetched++;
                    bytes += w.bytes();
                } else {
                    present++;
                }
            }
            return warmFrom(todo, to, end, new Warmed(true, present, fetched, bytes), io);
        });
    }

    // ---- listings ----

    @Override
    public CompletableFuture<long[]> chunksOfAsync(FileChunks file, long fromIndex, IoOptions io) {
        CompletableFuture<long[]> l3 = below.chunksOfAsync(file, fromIndex, io);
        if (!io.stage().stage() || fromIndex > Integer.MAX_VALUE) {
            return l3;
        }
        List<CompletableFuture<List<Integer>>> lists = new ArrayList<>();
        for (var a : L2Placement.serving(routing.current())) {
            lists.add(listAll(a.id().value(), file.inode().value(), (int) fromIndex, new ArrayList<>()).exceptionally(e -> List.of()));
        }
        return l3.thenCombine(CompletableFuture.allOf(lists.toArray(CompletableFuture[]::new)), (below, v) -> {
            TreeSet<Long> all = new TreeSet<>();
            for (long i : below) {
                all.add(i);
            }
            for (CompletableFuture<List<Integer>> l : lists) {
                l.join().forEach(i -> all.add((long) i));
            }
            return all.stream().mapToLong(Long::longValue).toArray();
        });
    }

    private CompletableFuture<List<Integer>> listAll(int agent, long inode, int from, List<Integer> acc) {
        return rpc.call(address(agent), new L2Message.ListChunks(inode, from, L2Messages.MAX_LIST), L2Message.Chunks.class).thenCompose(c -> {
            acc.addAll(c.indexes());
            if (!c.more() || c.indexes().isEmpty()) {
                return CompletableFuture.completedFuture(acc);
            }
            return listAll(agent, inode, c.indexes().get(c.indexes().size() - 1) + 1, acc);
        });
    }

    // ---- helpers ----

    private java.net.InetSocketAddress address(int agent) {
        return Holders.address(routing.current(), agent);
    }

    private CompletableFuture<Void> delay(Duration d) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        ctx.schedule(() -> f.complete(null), d);
        return f;
    }

    /** Closes this tier's connections; the tier below is its owner's to close. */
    @Override
    public void close() {
        rpc.close();
    }
}
