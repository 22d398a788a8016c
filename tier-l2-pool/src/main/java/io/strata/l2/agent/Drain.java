package io.strata.l2.agent;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Payload;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.Tier;
import io.strata.core.util.Futures;
import io.strata.core.util.RateLimiter;
import io.strata.l2.Holders;
import io.strata.l2.agent.CopyStore.Key;
import io.strata.protocol.l2.L2Message;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Meta;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.Staging;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.storage.ChunkRef;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's drain: background work on its own thread that makes staged copies durable in L3
 * and tells the meta service (docs/internals/l2.md, "The drain").
 *
 * <p>A pass takes the files with undrained copies here, oldest acknowledgement first. For each
 * it reads the file's staging record and, for every undrained copy of a chunk the record says
 * was published: drops the copy if this agent is no longer one of the chunk's holders (an
 * override moved it); drains it if this agent is the chunk's first holder that serves (so a
 * surviving copy drains when the first holder is down), chunks that lost a holder first;
 * otherwise adopts the draining holder's word that the copy is durable. Draining a copy writes
 * it to its L3 chain as one whole-chunk replace (a repeat is harmless), under a byte rate
 * ({@code drain-bandwidth}), several chunks at once, then marks it drained and tells the other holders. A copy written
 * again meanwhile stays undrained: only the sequence that was read is marked.
 *
 * <p>When nothing of a file is left undrained here, the pass checks every published chunk's
 * holders and reports the record's publish durable (or draining) to the meta service. A file the
 * meta service no longer knows (unlinked, destroyed) loses its copies here, and their pins.
 */
final class Drain implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Drain.class);

    private final NodeContext ctx;
    private final L2Agent agent;
    private final Meta meta;
    private final Tier l3;
    private final RateLimiter limiter;
    private final Set<Long> toReport = ConcurrentHashMap.newKeySet();
    private final AtomicLong drained = new AtomicLong();
    private final Counter drainedBytes;
    private final Thread thread;
    /** Runs the L3 writes of one pass, {@value #PARALLEL} chunks at a time. */
    private final ExecutorService pool;
    private static final int PARALLEL = 8;
    /** Passes between two sweeps for copies of deleted files (a few seconds at the default interval). */
    private static final int SWEEP_EVERY = 50;
    private final Object wake = new Object();
    private final Object rateLock = new Object();
    private volatile long recentBytesPerSecond;
    /** Bytes the running pass took to drain here so far; {@link #lastPassBytes}: what the last pass took. */
    private final AtomicLong passBytes = new AtomicLong();
    private volatile long lastPassBytes;
    private volatile boolean stop;
    private volatile Duration interval = Duration.ofMillis(100);
    private boolean woken;
    private long passes;
    private long sweepFrom;

    Drain(NodeContext ctx, L2Agent agent, Meta meta, Tier l3) {
        this.ctx = ctx;
        this.agent = agent;
        this.meta = meta;
        this.l3 = l3;
        this.limiter = new RateLimiter(ctx.clock(), agent.config().drainRate(shares()));
        this.drainedBytes = Counter.builder("strata.l2.drained.bytes").description("bytes this agent drained to L3").register(ctx.meters());
        Gauge.builder("strata.l2.drain.limit", limiter, RateLimiter::rate)
                .description("bytes per second this agent may drain now: drain-bandwidth, or its share of drain-budget").baseUnit("bytes")
                .register(ctx.meters());
        Gauge.builder("strata.l2.drain.backlog", this, Drain::backlogBytes)
                .description("bytes this agent is draining to L3 (reported to the cluster manager: agents with none take no share of drain-budget)")
                .baseUnit("bytes").register(ctx.meters());
        this.thread = new Thread(this::run, ctx.name() + "-l2-drain");
        thread.setDaemon(true);
        this.pool = Executors.newFixedThreadPool(PARALLEL, new DefaultThreadFactory(ctx.name() + "-l2-drain", true));
    }

    void start(Duration every) {
        this.interval = every;
        thread.start();
    }

    long drainedBytes() {
        return drained.get();
    }

    long bytesPerSecond() {
        return recentBytesPerSecond;
    }

    /** Starts a pass now (a client synced a file). */
    void wake() {
        synchronized (wake) {
            woken = true;
            wake.notifyAll();
        }
    }

    /** Runs passes until one finds nothing to drain or report (tests, tools). */
    void passNow() {
        synchronized (this) {
            for (int i = 0; i < 50 && pass(i == 0); i++) {
                // a pass that drained something may have more to report
            }
        }
    }

    private void run() {
        while (!stop) {
            synchronized (wake) {
                if (!woken) {
                    try {
                        wake.wait(interval.toMillis());
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                woken = false;
            }
            if (stop) {
                return;
            }
            try {
                synchronized (this) {
                    pass();
                }
            } catch (RuntimeException e) {
                if (!stop) {
                    LOG.warn("{}: drain pass failed (will retry): {}", ctx.name(), e.toString());
                }
            }
        }
    }

    /**
     * Drops the copies of files the meta service no longer knows, among files with only drained
     * copies here (the others are checked by the drain itself): all of them when {@code full},
     * else a few per pass, round robin.
     */
    private boolean sweep(Set<Long> busy, boolean full) {
        if (!full && passes % SWEEP_EVERY != 0) {
            return false;
        }
        TreeSet<Long> inodes = new TreeSet<>(Long::compareUnsigned);
        for (Key k : agent.store().all().keySet()) {
            if (!busy.contains(k.inode())) {
                inodes.add(k.inode());
            }
        }
        boolean did = false;
        int budget = full ? Integer.MAX_VALUE : 8;
        NavigableSet<Long> order = inodes.tailSet(sweepFrom, false);
        List<Long> todo = new ArrayList<>(order);
        todo.addAll(inodes.headSet(sweepFrom, true));
        for (long inode : todo) {
            if (budget-- <= 0) {
                break;
            }
            sweepFrom = inode;
            if (gone(inode)) {
                for (Key k : new ArrayList<>(agent.store().ofInode(inode, 0).keySet())) {
                    agent.store().drop(k);
                }
                did = true;
            }
        }
        return did;
    }

    /** One pass; true when it did something (drained, reported or dropped). */
    private boolean pass() {
        return pass(false);
    }

    /** How many agents share the cluster's drain budget if this one drains now ({@link L2Agent#drainShares}). */
    private int shares() {
        return agent.drainShares(servingAgents(agent.routing().current()));
    }

    /**
     * Sets the limiter to this agent's rate now: its own, or its share of the cluster's budget.
     * The drain threads call it before each chunk; under its own lock (a pass holds the drain's
     * monitor while it waits for them), so that a change is logged once.
     */
    private void updateRate() {
        synchronized (rateLock) {
            int shares = shares();
            long rate = agent.config().drainRate(shares);
            if (rate != limiter.rate()) {
                LOG.info("{}: drain limited to {} bytes/s (drain-bandwidth {}, drain-budget {} shared by {} agent(s))", ctx.name(), rate,
                        agent.config().drainBandwidth(), agent.config().drainBudget(), shares);
                limiter.setRate(rate);
            }
        }
    }

    /**
     * Bytes this agent is draining: what the running pass has taken so far, else what the last
     * pass took (0 once a pass found nothing to drain here). Reported with each heartbeat.
     */
    long backlogBytes() {
        return Math.max(passBytes.get(), lastPassBytes);
    }

    /** The agents that serve in {@code r}; this one counts whether or not routing lists it yet. */
    private int servingAgents(RoutingInfo r) {
        int n = 0;
        boolean me = false;
        for (var a : r.agents().values()) {
            if (a.serving()) {
                n++;
                me |= a.node().value() == agent.nodeId();
            }
        }
        return me ? n : n + 1;
    }

    private boolean pass(boolean full) {
        if (agent.fenced()) {
            return false;
        }
        passes++;
        updateRate();
        long start = ctx.clock().nanoTime();
        long before = drained.get();
        Map<Long, List<Map.Entry<Key, Copy>>> byInode = new LinkedHashMap<>();
        List<Map.Entry<Key, Copy>> undrained = new ArrayList<>();
        for (Map.Entry<Key, Copy> e : agent.store().all().entrySet()) {
            if (e.getValue().undrained()) {
                undrained.add(Map.entry(e.getKey(), e.getValue()));
            }
        }
        undrained.sort(Comparator.comparingLong(e -> e.getValue().stagedMillis()));
        for (Map.Entry<Key, Copy> e : undrained) {
            byInode.computeIfAbsent(e.getKey().inode(), i -> new ArrayList<>()).add(e);
        }
        for (Long inode : toReport) {
            byInode.putIfAbsent(inode, new ArrayList<>());
        }
        boolean did = sweep(byInode.keySet(), full);
        for (Map.Entry<Long, List<Map.Entry<Key, Copy>>> f : byInode.entrySet()) {
            if (stop || agent.fenced()) {
                break;
            }
            try {
                did |= drainFile(f.getKey(), f.getValue());
            } catch (RuntimeException e) {
                LOG.warn("{}: draining inode-{}: {} (will retry)", ctx.name(), Long.toUnsignedString(f.getKey()), e.toString());
            }
        }
        lastPassBytes = passBytes.get();
        passBytes.set(0);
        long bytes = drained.get() - before;
        long nanos = Math.max(1, ctx.clock().nanoTime() - start);
        if (bytes > 0) {
            recentBytesPerSecond = (long) (bytes * 1e9 / nanos);
        } else if (undrained.isEmpty()) {
            recentBytesPerSecond = 0;
        }
        return did;
    }

    private boolean drainFile(long inode, List<Map.Entry<Key, Copy>> copies) {
        Optional<Staging> rec = stagingOf(inode);
        if (rec.isEmpty()) {
            for (Key k : new ArrayList<>(agent.store().ofInode(inode, 0).keySet())) {
                agent.store().drop(k);
            }
            toReport.remove(inode);
            LOG.debug("{}: inode-{} is gone: its copies are dropped", ctx.name(), Long.toUnsignedString(inode));
            return true;
        }
        Staging s = rec.get();
        RoutingInfo r = agent.routing().current();
        int me = agent.nodeId();
        boolean did = false;
        List<CompletableFuture<Void>> drains = new ArrayList<>();
        // chunks whose other holders are all down drain first: theirs is the only copy
        List<Map.Entry<Key, Copy>> ordered = new ArrayList<>(copies);
        ordered.sort(Comparator.comparing(e -> othersServing(r, Holders.of(s, e.getKey().index()), me) ? 1 : 0));
        for (Map.Entry<Key, Copy> e : ordered) {
            Key k = e.getKey();
            Copy c = e.getValue();
            if (c.epoch() < s.epoch()) {
                agent.store().record(k, c.drainedAt(c.seq())); // an epoch ends only once durable: L3 has it
                did = true;
                continue;
            }
            if (!s.wasWritten(k.index())) {
                continue; // not published yet
            }
            List<Integer> holders = Holders.of(s, k.index());
            if (!holders.contains(me)) {
                agent.store().drop(k);
                did = true;
                continue;
            }
            int drainer = firstServing(r, holders, me);
            if (drainer != me) {
                ReadState st = state(drainer, s, k.index(), c.chain(), c.chunkSize());
                if (st != null && st.drainedSeq() >= c.seq()) {
                    markDrained(k, c.seq());
                    did = true;
                }
                continue;
            }
            // queued in the order copies were staged, so the oldest drain first; each takes its bytes
            // from the budget as it starts, at the rate of that moment
            long bytes = Math.max(1, c.length());
            passBytes.addAndGet(bytes);
            drains.add(CompletableFuture.runAsync(() -> drainChunk(k, holders, bytes), pool));
            did = true;
        }
        if (!drains.isEmpty()) {
            // several chunks at once: one chunk's L3 write waits on its chain's fsyncs
            CompletableFuture.allOf(drains.toArray(CompletableFuture[]::new)).join();
        }
        toReport.add(inode);
        boolean left = agent.store().ofInode(inode, 0).values().stream().anyMatch(Copy::undrained);
        if (!left) {
            did |= report(s);
        }
        return did;
    }

    /**
     * Whether the meta service no longer knows the file: it has no staging record and, when this
     * agent holds prefetched copies of it (epoch 0: a file that need never have been staged), no
     * inode either.
     */
    private boolean gone(long inode) {
        if (stagingOf(inode).isPresent()) {
            return false;
        }
        boolean prefetched = agent.store().ofInode(inode, 0).values().stream().anyMatch(c -> c.epoch() == 0);
        if (!prefetched) {
            return true;
        }
        try {
            Futures.join(meta.getattrAsync(Caller.ROOT, InodeId.of(inode)), Duration.ofSeconds(30));
            return false;
        } catch (StrataException e) {
            if (e.status() == Status.NOT_FOUND || e.status() == Status.STALE_HANDLE) {
                return true;
            }
            throw e;
        }
    }

    private Optional<Staging> stagingOf(long inode) {
        try {
            return Futures.join(meta.stagingAsync(Caller.ROOT, InodeId.of(inode)), Duration.ofSeconds(30));
        } catch (StrataException e) {
            if (e.status() == Status.NOT_FOUND || e.status() == Status.STALE_HANDLE) {
                return Optional.empty();
            }
            throw e;
        }
    }

    private static boolean othersServing(RoutingInfo r, List<Integer> holders, int me) {
        return holders.stream().anyMatch(h -> h != me && Holders.serving(r, h));
    }

    /** The first holder that serves; this agent counts as serving (it is not fenced, or the pass would not run). */
    private static int firstServing(RoutingInfo r, List<Integer> holders, int me) {
        for (int h : holders) {
            if (h == me || Holders.serving(r, h)) {
                return h;
            }
        }
        return me;
    }

    private void drainChunk(Key k, List<Integer> holders, long bytes) {
        // the share moves as other agents start or stop draining: a chunk waits at today's rate
        updateRate();
        try {
            limiter.acquire(bytes);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        CopyStore store = agent.store();
        // take a snapshot of the copy under the chunk's queue, write it to L3 outside it
        record Snapshot(Copy copy, ByteBuf bytes) {
        }
        // the copy's bytes are read from the agent's disk in the background class
        CompletableFuture<Snapshot> taken = agent.queue().run(k, () -> {
            Copy c = store.get(k);
            if (c == null || !c.undrained() || c.removed()) {
                return CompletableFuture.completedFuture(new Snapshot(c, null));
            }
            return agent.onDisk(QosClass.BACKGROUND, c.length(), agent.io(), () -> {
                Copy now = store.get(k); // the chunk's queue holds its updates back: the same copy, unless the agent dropped it
                if (now == null || !now.undrained() || now.removed()) {
                    return new Snapshot(now, null);
                }
                return new Snapshot(now, store.read(k, 0, (int) now.length(), now.length(), ByteBufAllocator.DEFAULT));
            });
        });
        Snapshot snap;
        try {
            snap = Futures.join(taken, Duration.ofSeconds(60));
        } catch (RuntimeException e) {
            // interrupted (the agent is closing) or timed out: the snapshot, if it comes, is released
            taken.thenAccept(x -> {
                if (x.bytes() != null) {
                    x.bytes().release();
                }
            });
            throw e;
        }
        Copy c = snap.copy();
        if (c == null || !c.undrained()) {
            return;
        }
        try {
            ChunkAddress a = new ChunkRef(k.inode(), k.index(), c.chain(), c.chunkSize()).address();
            if (c.removed()) {
                Futures.join(l3.removeAsync(a, L2Agent.l3Io()), Duration.ofSeconds(120));
            } else {
                Futures.join(l3.replaceAsync(a, snap.bytes(), L2Agent.l3Io()), Duration.ofSeconds(120));
            }
        } finally {
            if (snap.bytes() != null) {
                snap.bytes().release();
            }
        }
        drained.addAndGet(c.length());
        drainedBytes.increment(c.length());
        markDrained(k, c.seq());
        for (int h : holders) {
            if (h != agent.nodeId()) {
                tell(h, new L2Message.Drained(new ChunkRef(k.inode(), k.index(), c.chain(), c.chunkSize()), c.seq()));
            }
        }
    }

    private void markDrained(Key k, long seq) {
        Futures.join(agent.queue().run(k, () -> {
            Copy now = agent.store().get(k);
            if (now != null && now.present() && now.drainedSeq() < seq) {
                agent.store().record(k, now.drainedAt(Math.min(seq, now.seq())));
            }
            return CompletableFuture.completedFuture(null);
        }), Duration.ofSeconds(60));
    }

    private void tell(int holder, L2Message m) {
        try {
            agent.rpc().call(agent.addressOf(holder), m, Payload.NONE, Duration.ofSeconds(5)).whenComplete((resp, e) -> {
                if (resp != null) {
                    resp.close();
                }
            });
        } catch (RuntimeException e) {
            LOG.debug("{}: cannot tell agent {}: {}", ctx.name(), holder, e.toString());
        }
    }

    /** A holder's word on a chunk: its sequence, the last drained one, whether it holds bytes. */
    record ReadState(boolean present, long seq, long drainedSeq) {
    }

    /** Asks {@code holder} (this agent: its own store) about a chunk; null when it cannot be reached. */
    private ReadState state(int holder, Staging s, int index, int chain, int chunkSize) {
        if (holder == agent.nodeId()) {
            Copy c = agent.store().get(new Key(s.inode().value(), index));
            if (c == null) {
                return new ReadState(false, 0, -1);
            }
            return new ReadState(c.present() && c.epoch() >= s.epoch(), c.seq(), c.drainedSeq());
        }
        try {
            L2Message.Read m = new L2Message.Read(new ChunkRef(s.inode().value(), index, chain, chunkSize), s.epoch(), 0, 0,
                    QosClass.BACKGROUND);
            L2Message.ReadDone d = Futures.join(agent.rpc().call(agent.addressOf(holder), m, L2Message.ReadDone.class), Duration.ofSeconds(5));
            return new ReadState(d.present(), d.seq(), d.drainedSeq());
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * Checks every chunk the record says was written: durable when some holder knows its last
     * update drained and no holder holds a later one. Reports the publish durable, or draining.
     */
    private boolean report(Staging s) {
        if (!s.undrained()) {
            toReport.remove(s.inode().value());
            return false;
        }
        int chain = 0;
        int chunkSize = 0;
        for (Copy c : agent.store().ofInode(s.inode().value(), 0).values()) {
            chain = c.chain();
            chunkSize = c.chunkSize();
        }
        boolean durable = true;
        outer:
        for (Staging.Range range : s.written()) {
            for (long i = range.first(); i <= range.last(); i++) {
                int index = (int) i;
                List<Integer> holders = Holders.of(s, index);
                if (holders.isEmpty()) {
                    continue; // written through to L3
                }
                Copy local = agent.store().get(new Key(s.inode().value(), index));
                int ch = local != null ? local.chain() : chain;
                int cs = local != null ? local.chunkSize() : chunkSize;
                if (cs == 0) {
                    // this agent holds nothing of the file any more (its chunks moved): the holders' drains report
                    toReport.remove(s.inode().value());
                    return false;
                }
                long drainedSeq = -1;
                long maxSeq = -1;
                for (int h : holders) {
                    ReadState st = state(h, s, index, ch, cs);
                    if (st == null) {
                        continue;
                    }
                    if (st.present()) {
                        maxSeq = Math.max(maxSeq, st.seq());
                    }
                    drainedSeq = Math.max(drainedSeq, st.drainedSeq());
                }
                if (drainedSeq < 0 || drainedSeq < maxSeq) {
                    durable = false;
                    break outer;
                }
            }
        }
        try {
            RequestId id = RequestId.create(ctx.clock().now().toEpochMilli(), ctx.random());
            if (durable) {
                Futures.join(meta.drainReportAsync(Caller.ROOT, s.inode(), s.epoch(), s.publishVersion(), true, id), Duration.ofSeconds(30));
                toReport.remove(s.inode().value());
                LOG.debug("{}: {} publish {} durable in L3", ctx.name(), s.inode(), s.publishVersion());
                return true;
            }
            if (s.drainingVersion() < s.publishVersion()) {
                Futures.join(meta.drainReportAsync(Caller.ROOT, s.inode(), s.epoch(), s.publishVersion(), false, id), Duration.ofSeconds(30));
            }
        } catch (StrataException e) {
            if (e.status() == Status.NOT_FOUND) {
                toReport.remove(s.inode().value());
            } else {
                throw e;
            }
        }
        return false;
    }

    @Override
    public void close() {
        stop = true;
        synchronized (wake) {
            wake.notifyAll();
        }
        thread.interrupt(); // a pass waiting on the drain's byte rate stops at once
        pool.shutdownNow();
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
