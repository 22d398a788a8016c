package io.strata.storage;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.netty.buffer.ByteBuf;
import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Reply;
import io.strata.core.rpc.Request;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Crc32c;
import io.strata.core.util.Futures;
import io.strata.core.util.RateLimiter;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.StorageMessage.ReadChunk;
import io.strata.protocol.storage.StorageMessage.ReadDone;
import io.strata.protocol.storage.StorageMessage.ScrubControl;
import io.strata.protocol.storage.StorageMessage.ScrubReport;
import io.strata.protocol.storage.TargetScrub;
import io.strata.storage.engine.ChunkEngine;
import io.strata.storage.engine.ChunkMeta;
import io.strata.storage.engine.ChunkVersion;
import io.strata.store.AtomicFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds corrupt chunk versions on this node's targets and repairs them from another replica
 * (docs/internals/scrub.md).
 *
 * <p><b>Passes.</b> A pass walks one target's chunks in key order and reads every committed
 * version whole, checking each 64 KiB block against its CRC32C whatever {@code verify-reads}
 * says. It reads at most {@code [storage.scrub] rate} bytes per second, each chunk in a
 * {@code background} slot of the target's QoS scheduler, so client I/O goes first. A pass
 * starts {@code interval} after the previous one ended (the end is kept in the target's
 * {@code scrub.state}, so restarts do not reset the clock), or at once on
 * {@code strata admin scrub --start}. A pass runs on a virtual thread of its own.
 *
 * <p><b>Repairs.</b> Besides passes, a read or an update that met a corrupt version reports the
 * chunk ({@link #suspect}); at most {@link #REPAIRS} such repairs run at once (more are left to
 * the next pass). A repair takes the chunk's lock (no update is then in flight on it here),
 * checks the version again, and asks the chain's other serving replicas in turn for the same
 * committed version with an ordinary {@code ReadChunk}. A copy is taken only when the replica
 * serves exactly that version number and the bytes match the CRC32C this target recorded for it
 * when it was written; it then replaces the damaged data file (the version keeps its number,
 * request id and remembered requests). A chunk with a pending version is left alone (a write is
 * settling it); when no replica has a good copy of the version, the chunk is counted unrepaired
 * and reads keep going to the other replicas. Only a {@code serving} target scrubs or repairs:
 * a syncing one is being overwritten by its predecessor anyway.
 */
final class Scrubber implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Scrubber.class);
    /** Chunks read from LMDB per page of a pass. */
    static final int PAGE = 256;
    /** Most repairs reported by reads and updates that run at once. */
    static final int REPAIRS = 4;
    /** How often the schedule is looked at. */
    private static final Duration TICK = Duration.ofMinutes(1);
    private static final Duration PEER_TIMEOUT = Duration.ofSeconds(30);
    static final String STATE_FILE = "scrub.state";

    /** What a repair found. */
    enum Outcome {
        /** The version passed its check after all (or was replaced meanwhile): nothing to repair. */
        HEALTHY,
        /** The version was corrupt and now holds a good copy from another replica. */
        REPAIRED,
        /** The version was corrupt and no replica had a good copy of it. */
        UNREPAIRED,
        /** The chunk has a pending version (a write is settling it) or the target is not serving: not now. */
        BUSY
    }

    /** A repair's outcome and the chunk's metadata after it (the repaired version's new data file). */
    record Repair(Outcome outcome, ChunkMeta meta) {
    }

    /** One target's pass state and counters. */
    private final class Progress {
        final TargetId target;
        final ChunkEngine engine;
        final RateLimiter limiter;
        final Path stateFile;
        final AtomicLong corrupt = new AtomicLong();
        final AtomicLong repaired = new AtomicLong();
        final AtomicLong unrepaired = new AtomicLong();
        final Counter checkedBytesTotal;
        volatile Thread running;
        volatile long chunks;
        volatile long checkedChunks;
        volatile long checkedBytes;
        volatile long passes;
        volatile long startedMillis;
        volatile long endedMillis;

        Progress(TargetId target, ChunkEngine engine) {
            this.target = target;
            this.engine = engine;
            this.limiter = new RateLimiter(ctx.clock(), options.rate().bytes());
            this.stateFile = engine.dir().resolve(STATE_FILE);
            String t = String.valueOf(target.value());
            this.checkedBytesTotal = Counter.builder("strata.storage.scrub.checked.bytes")
                    .description("bytes of committed chunk versions read back and checked by scrub passes").baseUnit("bytes")
                    .tag("target", t).register(ctx.meters());
            FunctionCounter.builder("strata.storage.scrub.corrupt", corrupt, AtomicLong::get)
                    .description("corrupt chunk versions found (by a pass, a read or an update)").tag("target", t)
                    .register(ctx.meters());
            FunctionCounter.builder("strata.storage.scrub.repaired", repaired, AtomicLong::get)
                    .description("corrupt chunk versions repaired from another replica").tag("target", t).register(ctx.meters());
            FunctionCounter.builder("strata.storage.scrub.unrepaired", unrepaired, AtomicLong::get)
                    .description("corrupt chunk versions no replica had a good copy of").tag("target", t).register(ctx.meters());
        }

        TargetScrub report() {
            return new TargetScrub(target.value(), running != null, chunks, checkedChunks, checkedBytes, passes, corrupt.get(),
                    repaired.get(), unrepaired.get(), startedMillis, endedMillis);
        }
    }

    private final StorageNode node;
    private final NodeContext ctx;
    private final ScrubOptions options;
    private final Map<TargetId, Progress> targets = new LinkedHashMap<>();
    private final Semaphore repairs = new Semaphore(REPAIRS);
    private final Set<ChunkKey> suspected = ConcurrentHashMap.newKeySet();
    private final ScheduledFuture<?> tick;
    private volatile boolean closed;

    private record ChunkKey(TargetId target, ChunkId chunk) {
    }

    Scrubber(StorageNode node, ScrubOptions options, Map<TargetId, ChunkEngine> engines) {
        this.node = node;
        this.ctx = node.context();
        this.options = options;
        for (Map.Entry<TargetId, ChunkEngine> e : engines.entrySet()) {
            Progress p = new Progress(e.getKey(), e.getValue());
            p.endedMillis = lastEnd(p);
            targets.put(e.getKey(), p);
        }
        this.tick = options.enabled()
                ? ctx.scheduler().scheduleWithFixedDelay(this::startDue, TICK.toMillis(), TICK.toMillis(), TimeUnit.MILLISECONDS)
                : null;
    }

    /** When the target's last pass ended (its state file), creating the file when absent so the interval counts from now. */
    private long lastEnd(Progress p) {
        try {
            return Long.parseLong(Files.readString(p.stateFile, StandardCharsets.UTF_8).trim());
        } catch (NoSuchFileException e) {
            long now = ctx.clock().now().toEpochMilli();
            writeState(p, now);
            return 0;
        } catch (IOException | NumberFormatException e) {
            LOG.warn("{}: {} has an unreadable {} ({}); its next scrub pass counts from now", ctx.name(), p.target, STATE_FILE,
                    e.toString());
            return 0;
        }
    }

    private void writeState(Progress p, long endMillis) {
        try {
            AtomicFiles.plain().write(p.stateFile, Long.toString(endMillis), false);
        } catch (IOException e) {
            LOG.warn("{}: cannot record the end of {}'s scrub pass in {}: {}", ctx.name(), p.target, p.stateFile, e.toString());
        }
    }

    private long dueAt(Progress p) throws IOException {
        long last = p.endedMillis;
        if (last == 0) {
            last = Long.parseLong(Files.readString(p.stateFile, StandardCharsets.UTF_8).trim());
        }
        return last + options.interval().toMillis();
    }

    /** Starts a pass on every target whose interval has passed. */
    private void startDue() {
        long now = ctx.clock().now().toEpochMilli();
        for (Progress p : targets.values()) {
            try {
                if (p.running == null && now >= dueAt(p)) {
                    start(p);
                }
            } catch (IOException | RuntimeException e) {
                LOG.warn("{}: cannot tell when {} is due for a scrub pass: {}", ctx.name(), p.target, e.toString());
            }
        }
    }

    /** Starts a pass on every target not scrubbing now; returns how many started. */
    int startAll() {
        int n = 0;
        for (Progress p : targets.values()) {
            if (start(p)) {
                n++;
            }
        }
        return n;
    }

    private synchronized boolean start(Progress p) {
        if (closed || p.running != null) {
            return false;
        }
        p.running = Thread.ofVirtual().name(ctx.name() + "-scrub-" + p.target.value()).start(() -> pass(p));
        return true;
    }

    /** Every target's progress, in target order. */
    List<TargetScrub> report() {
        List<TargetScrub> out = new ArrayList<>();
        targets.values().forEach(p -> out.add(p.report()));
        return out;
    }

    /** {@code ScrubControl}: start passes when asked, then report. */
    CompletableFuture<Reply> control(Request<ScrubControl> req) {
        if (req.message().start()) {
            int n = startAll();
            LOG.info("{}: scrub passes started on request on {} target(s)", ctx.name(), n);
        }
        return CompletableFuture.completedFuture(Reply.of(new ScrubReport(report())));
    }

    /** Waits for every running pass to end (tests). */
    void awaitPasses(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        for (Progress p : targets.values()) {
            Thread t = p.running;
            if (t != null && !t.join(Duration.ofNanos(Math.max(1, end - System.nanoTime())))) {
                throw new IllegalStateException("the scrub pass of " + p.target + " did not end within " + timeout);
            }
        }
    }

    private void pass(Progress p) {
        long started = ctx.clock().now().toEpochMilli();
        p.startedMillis = started;
        p.checkedChunks = 0;
        p.checkedBytes = 0;
        long corruptBefore = p.corrupt.get();
        boolean complete = false;
        try {
            p.chunks = p.engine.chunkCount();
            LOG.info("{}: scrub pass of {} started ({} chunks, at most {}/s)", ctx.name(), p.target, p.chunks, options.rate());
            Optional<ChunkId> after = Optional.empty();
            while (!closed) {
                List<ChunkMeta> page = p.engine.scan(after, PAGE);
                if (page.isEmpty()) {
                    complete = true;
                    break;
                }
                for (ChunkMeta m : page) {
                    if (closed) {
                        return;
                    }
                    after = Optional.of(m.id());
                    ChunkVersion v = m.committed();
                    if (v == null || v.removed() || v.length() == 0) {
                        p.checkedChunks++;
                        continue;
                    }
                    p.limiter.acquire(v.length());
                    check(p, m, v);
                    p.checkedChunks++;
                    p.checkedBytes += v.length();
                    p.checkedBytesTotal.increment(v.length());
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            if (!closed) {
                LOG.warn("{}: scrub pass of {} stopped after {} chunks: {}", ctx.name(), p.target, p.checkedChunks, e.toString());
            }
        } finally {
            if (complete) {
                long now = ctx.clock().now().toEpochMilli();
                p.passes++;
                p.endedMillis = now;
                writeState(p, now);
                LOG.info("{}: scrub pass of {} done in {} s: {} chunks, {} bytes checked, {} corrupt found", ctx.name(), p.target,
                        (now - started) / 1000, p.checkedChunks, p.checkedBytes, p.corrupt.get() - corruptBefore);
            }
            synchronized (this) {
                p.running = null;
            }
        }
    }

    /** Checks one committed version in a background slot; a corrupt one is repaired before the pass moves on. */
    private void check(Progress p, ChunkMeta m, ChunkVersion v) {
        try {
            Futures.join(node.scheduler(p.target).submit(QosClass.BACKGROUND, v.length(),
                    () -> CompletableFuture.supplyAsync(() -> p.engine.verify(m.id(), v), node.io())));
        } catch (StrataException e) {
            if (e.status() != Status.CHUNK_CORRUPT) {
                throw e;
            }
            try {
                Futures.join(repair(p.target, m.id(), m.chunkSize()), PEER_TIMEOUT.multipliedBy(4));
            } catch (StrataException r) {
                LOG.warn("{}: repair of chunk {} on {} failed: {}", ctx.name(), m.id(), p.target, r.toString());
            }
        }
    }

    /**
     * A read or an update on {@code target} met a corrupt version of {@code chunk} (any other
     * error is ignored): repair it in the background, unless {@link #REPAIRS} repairs are already
     * running (the next pass finds it then).
     */
    void suspect(TargetId target, ChunkAddress chunk, Throwable error) {
        if (closed || StrataException.wrap(StrataException.unwrapCompletion(error)).status() != Status.CHUNK_CORRUPT
                || !targets.containsKey(target)) {
            return;
        }
        ChunkKey key = new ChunkKey(target, chunk.id());
        if (!suspected.add(key)) {
            return;
        }
        if (!repairs.tryAcquire()) {
            suspected.remove(key);
            LOG.warn("{}: chunk {} on {} is corrupt; {} repairs are running, the next scrub pass repairs it", ctx.name(),
                    chunk.id(), target, REPAIRS);
            return;
        }
        CompletableFuture<Repair> f;
        try {
            f = repair(target, chunk.id(), chunk.chunkSize());
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((r, e) -> {
            repairs.release();
            suspected.remove(key);
            if (e != null && !closed) {
                LOG.warn("{}: repair of chunk {} on {} failed: {}", ctx.name(), chunk.id(), target, e.toString());
            }
        });
    }

    /** Repairs the chunk under its lock. */
    CompletableFuture<Repair> repair(TargetId target, ChunkId chunk, int chunkSize) {
        return node.locks().withLock(target, chunk, () -> repairLocked(target, chunk, chunkSize));
    }

    /**
     * Under the chunk's lock: checks the committed version again and, when it is corrupt, replaces
     * its data with a good copy of the same version from another serving replica.
     */
    CompletableFuture<Repair> repairLocked(TargetId target, ChunkId chunk, int chunkSize) {
        Progress p = targets.get(target);
        if (p == null) {
            return CompletableFuture.failedFuture(new StrataException(Status.NO_SUCH_TARGET, target + " is not on " + node.nodeId()));
        }
        ChunkEngine engine = p.engine;
        RoutingInfo r = node.routing().current();
        if (!r.targets().containsKey(target) || r.target(target).state() != TargetState.SERVING) {
            return CompletableFuture.completedFuture(new Repair(Outcome.BUSY, null));
        }
        return CompletableFuture.supplyAsync(() -> {
            ChunkMeta m = engine.meta(chunk, chunkSize);
            ChunkVersion v = m.committed();
            if (m.dirty() || v == null) {
                return new Repair(m.dirty() ? Outcome.BUSY : Outcome.HEALTHY, m);
            }
            try {
                engine.verify(chunk, v);
                return new Repair(Outcome.HEALTHY, m);
            } catch (StrataException e) {
                if (e.status() != Status.CHUNK_CORRUPT) {
                    throw e;
                }
                return new Repair(Outcome.UNREPAIRED, m); // corrupt: look for a copy
            }
        }, node.io()).thenCompose(found -> {
            if (found.outcome() != Outcome.UNREPAIRED) {
                return CompletableFuture.completedFuture(found);
            }
            p.corrupt.incrementAndGet();
            ChunkMeta m = found.meta();
            ChunkVersion v = m.committed();
            List<Peer> peers = peers(r, target, chunk, chunkSize);
            return fetch(peers, 0, v).thenCompose(copy -> {
                if (copy == null) {
                    p.unrepaired.incrementAndGet();
                    LOG.error("{}: chunk {} {} on {} is corrupt and none of {} has a good copy of it", ctx.name(), chunk, v, target,
                            peers.stream().map(Peer::target).toList());
                    return CompletableFuture.completedFuture(new Repair(Outcome.UNREPAIRED, m));
                }
                return engine.installAsync(m, chunkSize, v, copy, m.recent(), m.chainVersion())
                        .whenComplete((x, e) -> copy.release())
                        .thenApply(fixed -> {
                            p.repaired.incrementAndGet();
                            LOG.warn("{}: chunk {} {} on {} was corrupt and is repaired from another replica", ctx.name(), chunk, v,
                                    target);
                            return new Repair(Outcome.REPAIRED, fixed);
                        });
            });
        });
    }

    /** Another serving replica of a chain this target is in, and the chunk's address there. */
    private record Peer(TargetId target, ChunkAddress address, long chainVersion, java.net.InetSocketAddress at) {
    }

    private List<Peer> peers(RoutingInfo r, TargetId self, ChunkId chunk, int chunkSize) {
        List<Peer> out = new ArrayList<>();
        for (ChainInfo c : r.chains().values()) {
            if (!c.targets().contains(self)) {
                continue;
            }
            ChainId id = c.id();
            for (TargetId t : r.readable(id)) {
                if (!t.equals(self) && r.target(t).state() == TargetState.SERVING) {
                    out.add(new Peer(t, new ChunkAddress(chunk, id, chunkSize), c.version(), r.nodeOf(t).address()));
                }
            }
        }
        return out;
    }

    /** The first good copy of {@code v} a peer serves, from {@code peers[i]} on (an owned buffer), or null. */
    private CompletableFuture<ByteBuf> fetch(List<Peer> peers, int i, ChunkVersion v) {
        if (i >= peers.size()) {
            return CompletableFuture.completedFuture(null);
        }
        Peer peer = peers.get(i);
        ReadChunk ask = new ReadChunk(ChunkRef.of(peer.address()), peer.chainVersion(), 0, v.length(), QosClass.BACKGROUND);
        return node.rpc().call(peer.at(), ask, Payload.NONE, PEER_TIMEOUT).handle((resp, err) -> {
            if (err != null) {
                LOG.info("{}: {} could not serve chunk {} for a repair: {}", ctx.name(), peer.target(), peer.address().id(),
                        StrataException.unwrapCompletion(err).toString());
                return null;
            }
            try (resp) {
                ReadDone d = resp.message(ReadDone.class);
                ByteBuf data = resp.payload();
                if (d.version() != v.version() || data.readableBytes() != v.length() || Crc32c.of(data) != v.crc()) {
                    LOG.info("{}: {} serves chunk {} v{} ({} bytes), not a good copy of {}", ctx.name(), peer.target(),
                            peer.address().id(), d.version(), data.readableBytes(), v);
                    return null;
                }
                return resp.takePayload();
            }
        }).thenCompose(copy -> copy != null ? CompletableFuture.completedFuture(copy) : fetch(peers, i + 1, v));
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        if (tick != null) {
            tick.cancel(false);
        }
        for (Progress p : targets.values()) {
            Thread t = p.running;
            if (t != null) {
                t.interrupt();
            }
        }
    }
}
