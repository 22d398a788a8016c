package io.strata.hooks;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.client.StrataFileSystem;
import io.strata.config.policy.L2Mode;
import io.strata.config.policy.Policy;
import io.strata.config.policy.PolicyOverrides;
import io.strata.core.ChunkId;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.QosClass;
import io.strata.core.util.Futures;
import io.strata.l2.Holders;
import io.strata.l2.pool.PrefetchClient;
import io.strata.placement.RoutingSource;
import io.strata.protocol.meta.Cached;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Staging;
import io.strata.protocol.routing.AgentInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The planner (docs/scheduler-hooks.md): turns hints into chunk fetches on the L2 agents near
 * each job's nodes and follows them to {@code ready}.
 *
 * <p><b>Placement.</b> A file's chunks are placed among the job's candidate agents (those on its
 * nodes, or every agent): each chunk on the agent the L2 placement function ranks first, the
 * next serving one when that one is down or full. The namespace records the file's agents (its
 * {@code PREF} record) once every chunk is there, so a reader opening the file finds them.
 *
 * <p><b>Fetch once.</b> A file another hint already placed (in flight here, or recorded at the
 * same data version) keeps that placement: its chunks go to the same agents, which find the copy
 * present and only add the new hint's pin. Each agent serializes fetches of one chunk, so a chunk
 * two hints want at once is read from L3 once.
 *
 * <p><b>Order.</b> Higher priority first, then earliest deadline, then older; at most
 * {@link Options#window} fetches in flight per agent. A hint whose estimate passes its deadline
 * is {@code at-risk}; one not ready at its deadline is {@code late}.
 *
 * <p><b>Failures.</b> A fetch that fails because its agent is down, fenced or full moves to the
 * next agent of the chunk's ranking; a hint whose chunk no agent can take fails with a message.
 * Cancelling stops new fetches at once; once the fetches in flight have answered, the hint's pins
 * are released on every agent and its files unmarked.
 *
 * <p>One thread does all planning and bookkeeping; the HTTP side talks to it through
 * {@link #submit}, {@link #cancel}, {@link #endJob} and reads the hints from the cluster manager.
 * Nothing here is the truth: the hints live in the cluster manager, the pins on the agents, the
 * records in the namespace, so a restarted planner plans the active hints again (fetches of
 * chunks already present cost no L3 read).
 */
public final class Planner implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Planner.class);

    /**
     * @param window        fetches in flight per agent
     * @param fetchTimeout  how long one fetch (a whole chunk from L3) may take
     * @param metaTimeout   how long a namespace call may take
     * @param persistEvery  how often progress is written to the cluster manager
     */
    public record Options(int window, Duration fetchTimeout, Duration metaTimeout, Duration persistEvery) {
        public static final Options DEFAULTS = new Options(8, Duration.ofSeconds(60), Duration.ofSeconds(20), Duration.ofMillis(500));

        public Options {
            if (window < 1 || window > 1024) {
                throw new IllegalArgumentException("hooks window must be 1..1024, got " + window);
            }
        }
    }

    private final HintStore store;
    private final StrataFileSystem fs;
    private final RoutingSource routing;
    private final PrefetchClient agents;
    private final Options options;
    private final Clock clock;
    private final PathExpander expander;
    private final LinkedBlockingQueue<Runnable> events = new LinkedBlockingQueue<>();
    private final Map<Long, Job> jobs = new TreeMap<>();
    /** Files placed by a hint here or found recorded: inode -> data version and agents. */
    private final Map<Long, Placed> placed = new HashMap<>();
    private final Map<Integer, Integer> inflight = new HashMap<>();
    private final Map<Long, Hint> snapshot = new ConcurrentHashMap<>();
    private final Thread thread;
    private final Counter stagedBytes;
    private final Counter fetchFailures;
    private final Counter missed;
    private final MeterRegistry meters;
    private volatile boolean closed;
    /** {@code strata.hooks.planner.step} per step, built once (the pass runs every 50 ms). */
    private final Map<String, io.micrometer.core.instrument.Timer> stepTimers = new HashMap<>();
    private long lastRefresh;
    private boolean refreshing;
    private long lastEstimate;
    /** Bytes fetched from L3 for all hints: the rate the estimates use. */
    private final StagingRate rate = new StagingRate(5_000);
    private long fetchedTotal;

    private record Placed(long dataVersion, List<Integer> agents) {
    }

    /** One file of a hint being staged. */
    private static final class FilePlan {
        final String path;
        InodeAttrs attrs;
        List<Integer> agents;
        int chunksLeft;
        int replans;

        FilePlan(String path, InodeAttrs attrs) {
            this.path = path;
            this.attrs = attrs;
        }
    }

    /** One chunk to fetch. */
    private static final class Item {
        final FilePlan file;
        final int index;
        final long bytes;
        long epoch;
        List<Integer> holders = List.of();
        List<Integer> tried = new ArrayList<>();
        int agent;
        int errors;
        String lastError = "";

        Item(FilePlan file, int index, long bytes) {
            this.file = file;
            this.index = index;
            this.bytes = bytes;
        }
    }

    /** A hint as the planner follows it. */
    private final class Job {
        HintStore.Versioned stored;
        Hint hint;
        List<PathExpander.FileRef> files;
        final Map<Long, FilePlan> plans = new LinkedHashMap<>();
        final ArrayDeque<Item> queue = new ArrayDeque<>();
        final List<FilePlan> toMark = new ArrayList<>();
        final Map<Integer, long[]> perAgent = new TreeMap<>();
        /** Bytes still to stage per file (inode), for the estimate. */
        final Map<Long, Long> left = new HashMap<>();
        /** When this job should be ready, from the last estimate (0: not known yet). */
        long etaAt;
        int running;
        int unmarked;
        /** Mark calls to the meta service in flight. */
        int marking;
        /** A write of this hint to the cluster manager is in flight. */
        boolean persisting;
        long bytesTotal;
        long bytesDone;
        boolean dirty;
        boolean planned;
        boolean released;
        boolean endRequested;
        /** What the message says while all goes well (files left in L3 by their policy). */
        String note = "";
        final List<CompletableFuture<Hint>> onReleased = new ArrayList<>();

        Job(HintStore.Versioned v) {
            this.stored = v;
            this.hint = v.hint();
        }

        long id() {
            return hint.id();
        }

        HintState state() {
            return hint.stateValue();
        }
    }

    public Planner(HintStore store, StrataFileSystem fs, RoutingSource routing, PrefetchClient agents, Options options, Clock clock,
                   MeterRegistry meters) {
        this.store = store;
        this.fs = fs;
        this.routing = routing;
        this.agents = agents;
        this.options = options;
        this.clock = clock;
        this.expander = new PathExpander(fs, options.metaTimeout());
        for (HintState st : HintState.values()) {
            Gauge.builder("strata.hooks.hints", snapshot, m -> m.values().stream().filter(h -> h.state().equals(st.text())).count())
                    .description("hints this planner follows, by state").tag("state", st.text()).register(meters);
        }
        this.stagedBytes = Counter.builder("strata.hooks.staged.bytes").description("bytes of hinted chunks the agents fetched or found in L2")
                .register(meters);
        this.fetchFailures = Counter.builder("strata.hooks.fetch.failures")
                .description("chunk fetches that failed and moved to another agent (or failed their hint)").register(meters);
        this.missed = Counter.builder("strata.hooks.deadlines.missed").description("hints that turned late").register(meters);
        this.meters = meters;
        this.thread = new Thread(this::run, "strata-hooks-planner");
        this.thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    // ---- what the HTTP side calls (any thread) ----

    /**
     * Checks {@code spec} against the namespace and routing (every path names files, every node
     * an agent), stores it as a new hint and starts planning it; a hint it supersedes is
     * cancelled. Errors are INVALID_ARGUMENT or NOT_FOUND naming the field.
     */
    public Hint submit(HintSpec spec) {
        long now = clock.millis();
        if (spec.deadline() > 0 && spec.deadline() <= now) {
            throw new StrataException(Status.INVALID_ARGUMENT, "deadline: " + java.time.Instant.ofEpochMilli(spec.deadline())
                    + " is in the past");
        }
        candidates(spec.nodes(), true);
        List<PathExpander.FileRef> files = expander.expand(spec.paths(), "paths");
        if (spec.supersedes() > 0 && store.get(spec.supersedes()).isEmpty()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "supersedes: no hint " + spec.supersedes());
        }
        Hint h = new Hint(0, spec.job(), spec.paths(), spec.deadline(), spec.priority(), spec.nodes(), spec.qos(), spec.supersedes(),
                HintState.ACCEPTED.text(), "", files.size(), 0, 0, 0, now, now, 0, Map.of());
        HintStore.Versioned v = store.create(h);
        snapshot.put(v.hint().id(), v.hint());
        call(() -> {
            Job j = jobs.computeIfAbsent(v.hint().id(), id -> new Job(v));
            j.files = files;
            if (spec.supersedes() > 0) {
                Job old = jobs.get(spec.supersedes());
                if (old != null) {
                    stop(old, HintState.CANCELLED, "superseded by hint " + v.hint().id());
                }
            }
            return null;
        });
        return v.hint();
    }

    /** Stops hint {@code id}: no new fetch once this returns; its pins go when the fetches in flight have answered. */
    public Hint cancel(long id) {
        Hint h = call(() -> {
            Job j = jobs.get(id);
            if (j == null) {
                refresh();
                j = jobs.get(id);
            }
            if (j == null) {
                throw new StrataException(Status.NOT_FOUND, "no hint " + id);
            }
            if (!j.state().settled() || j.state() == HintState.READY) {
                stop(j, HintState.CANCELLED, "cancelled");
            }
            return j.hint;
        });
        return h;
    }

    /**
     * Ends job {@code job}: cancels its hints still staging, releases what they pinned and
     * removes them from the cluster manager; the hints as they were. NOT_FOUND when the job has none.
     */
    public List<Hint> endJob(String job) {
        CompletableFuture<List<Hint>> all = call(() -> {
            refresh();
            List<CompletableFuture<Hint>> ends = new ArrayList<>();
            for (Job j : new ArrayList<>(jobs.values())) {
                if (j.hint.job().equals(job) && !j.endRequested) {
                    j.endRequested = true;
                    CompletableFuture<Hint> f = new CompletableFuture<>();
                    j.onReleased.add(f);
                    if (j.state().active()) {
                        stop(j, HintState.CANCELLED, "job ended");
                    } else {
                        release(j);
                    }
                    ends.add(f);
                }
            }
            if (ends.isEmpty()) {
                throw new StrataException(Status.NOT_FOUND, "job \"" + job + "\" has no hint");
            }
            return CompletableFuture.allOf(ends.toArray(CompletableFuture[]::new))
                    .thenApply(v -> ends.stream().map(CompletableFuture::join).toList());
        });
        return Futures.join(all, options.fetchTimeout().plus(options.metaTimeout()));
    }

    /** The hint as last written (this planner's view; the cluster manager's when this planner has not seen it). */
    public Optional<Hint> get(long id) {
        Hint h = snapshot.get(id);
        return h != null ? Optional.of(h) : store.get(id).map(HintStore.Versioned::hint);
    }

    /** Every hint the cluster manager holds, oldest first. */
    public List<Hint> list() {
        List<Hint> out = new ArrayList<>();
        for (HintStore.Versioned v : store.list()) {
            Hint mine = snapshot.get(v.hint().id());
            out.add(mine != null ? mine : v.hint());
        }
        return out;
    }

    private <T> T call(Supplier<T> body) {
        CompletableFuture<T> f = new CompletableFuture<>();
        events.add(() -> {
            try {
                f.complete(body.get());
            } catch (RuntimeException e) {
                f.completeExceptionally(e);
            }
        });
        return Futures.join(f, options.metaTimeout().multipliedBy(2));
    }

    // ---- the planner's thread ----

    private void run() {
        while (!closed) {
            try {
                Runnable e = events.poll(50, TimeUnit.MILLISECONDS);
                while (e != null) {
                    e.run();
                    e = events.poll();
                }
                long now = clock.millis();
                if (now - lastRefresh >= 1000 && !refreshing) {
                    refreshAsync();
                }
                for (Job j : ordered()) {
                    if (j.state().active() && !j.planned) {
                        timed("plan", () -> plan(j));
                    }
                }
                dispatch();
                timed("mark", this::flushMarks);
                timed("persist", () -> persist(false));
            } catch (InterruptedException ie) {
                return;
            } catch (RuntimeException ex) {
                LOG.warn("planner pass failed (will retry): {}", ex.toString());
                sleepQuietly();
            }
        }
    }

    /**
     * Runs a step of the planner's pass that waits for the cluster manager or the meta service,
     * timed as {@code strata.hooks.planner.step} (tag {@code step}): while it runs, no fetch is
     * dispatched.
     */
    private void timed(String step, Runnable body) {
        long t0 = System.nanoTime();
        try {
            body.run();
        } finally {
            stepTimers.computeIfAbsent(step, s -> io.micrometer.core.instrument.Timer.builder("strata.hooks.planner.step")
                    .description("time the planner's thread spent in a step that waits for another service (no fetch is sent meanwhile)")
                    .tag("step", s).register(meters)).record(System.nanoTime() - t0, TimeUnit.NANOSECONDS);
        }
    }

    private static void sleepQuietly() {
        try {
            Thread.sleep(500);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Takes in hints this planner does not follow (a restart, another server's submissions) and cancels seen elsewhere. */
    private void refresh() {
        lastRefresh = clock.millis();
        refreshed(store.list());
    }

    /** {@link #refresh} without waiting for the cluster manager: the list is taken in when it arrives. */
    private void refreshAsync() {
        lastRefresh = clock.millis();
        refreshing = true;
        store.listAsync().whenComplete((all, e) -> events.add(() -> {
            refreshing = false;
            if (e != null) {
                LOG.debug("listing the hints failed (will retry): {}", e.toString());
            } else {
                refreshed(all);
            }
        }));
    }

    private void refreshed(List<HintStore.Versioned> all) {
        Set<Long> present = new java.util.HashSet<>();
        for (HintStore.Versioned v : all) {
            present.add(v.hint().id());
            Job j = jobs.get(v.hint().id());
            if (j == null) {
                j = new Job(v);
                jobs.put(v.hint().id(), j);
                snapshot.put(v.hint().id(), v.hint());
                if (!v.hint().stateValue().active()) {
                    j.planned = true; // settled before this planner saw it: its pins stay until its job ends
                }
            } else if (v.version() > j.stored.version()) {
                if (v.hint().stateValue() == HintState.CANCELLED && j.state() != HintState.CANCELLED) {
                    j.stored = v;
                    stop(j, HintState.CANCELLED, v.hint().message());
                } else {
                    j.stored = v;
                }
            }
        }
        jobs.values().removeIf(j -> {
            boolean gone = !present.contains(j.id()) && j.running == 0 && (j.released || !j.state().active());
            if (gone) {
                snapshot.remove(j.id());
            }
            return gone;
        });
    }

    private List<Job> ordered() {
        List<Job> out = new ArrayList<>(jobs.values());
        out.sort(Comparator.comparingInt((Job j) -> -j.hint.priority())
                .thenComparingLong(j -> j.hint.deadline() == 0 ? Long.MAX_VALUE : j.hint.deadline())
                .thenComparingLong(Job::id));
        return out;
    }

    /** The agents a job may use: those on its nodes (all when it names none). {@code strict}: an unknown node is an error. */
    private List<Integer> candidates(List<String> nodes, boolean strict) {
        RoutingInfo r = routing.current();
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < nodes.size(); i++) {
            String n = nodes.get(i);
            boolean found = false;
            for (AgentInfo a : r.agents().values()) {
                if (matches(r, a.node(), n)) {
                    found = true;
                    if (a.serving() && !out.contains(a.node().value())) {
                        out.add(a.node().value());
                    }
                }
            }
            if (!found && strict) {
                throw new StrataException(Status.INVALID_ARGUMENT, "nodes[" + i + "]: no L2 agent runs on node \"" + n + "\"");
            }
        }
        if (nodes.isEmpty()) {
            for (AgentInfo a : r.agents().values()) {
                if (a.serving()) {
                    out.add(a.node().value());
                }
            }
        }
        return out;
    }

    private static boolean matches(RoutingInfo r, NodeId agent, String n) {
        if (n.equals(Integer.toString(agent.value()))) {
            return true;
        }
        NodeInfo info = r.nodes().get(agent);
        return info != null && (n.equals(info.host()) || n.equals(info.labels().get("host")) || n.equals(info.labels().get("node")));
    }

    /** The name progress is reported under for an agent: its node label, host label, or id. */
    private String nodeName(int agent) {
        NodeInfo info = routing.current().nodes().get(NodeId.of(agent));
        if (info == null) {
            return Integer.toString(agent);
        }
        String n = info.labels().get("node");
        if (n == null) {
            n = info.labels().get("host");
        }
        return n != null ? n : "agent-" + agent;
    }

    /** Expands (after a restart), places and queues every chunk of a job. */
    private void plan(Job j) {
        List<Integer> cands = candidates(j.hint.nodes(), false);
        if (cands.isEmpty()) {
            setState(j, HintState.ACCEPTED, "waiting for an L2 agent to serve on the job's nodes");
            return;
        }
        if (j.files == null) {
            try {
                j.files = expander.expand(j.hint.paths(), "paths");
            } catch (StrataException e) {
                stop(j, HintState.FAILED, e.getMessage());
                return;
            }
        }
        List<PathExpander.FileRef> wanted = new ArrayList<>();
        int off = 0;
        for (PathExpander.FileRef f : j.files) {
            if (Policy.DEFAULT.with(PolicyOverrides.fromMap(f.attrs().policy())).l2() == L2Mode.OFF) {
                off++; // the directory keeps these out of L2: left to L3
            } else {
                wanted.add(f);
            }
        }
        List<PathExpander.FileRef> unknown = new ArrayList<>();
        for (PathExpander.FileRef f : wanted) {
            Placed p = placed.get(f.attrs().id().value());
            if (p == null || p.dataVersion() != f.attrs().dataVersion()) {
                unknown.add(f);
            }
        }
        lookupRecords(unknown);
        for (PathExpander.FileRef f : wanted) {
            FilePlan fp = new FilePlan(f.path(), f.attrs());
            j.plans.put(f.attrs().id().value(), fp);
            queueFile(j, fp, cands);
        }
        j.planned = true;
        j.note = off == 0 ? "" : off + " of the files are under tiers.l2=off and are left in L3";
        setState(j, j.unmarked == 0 && j.running == 0 && j.queue.isEmpty() ? HintState.READY : HintState.STAGING, j.note);
        LOG.info("hint {} (job {}): {} files, {} bytes to stage on agents {}", j.id(), j.hint.job(), j.files.size(), j.bytesTotal, cands);
    }

    /** Learns the placements the namespace already records for files (another hint's, maybe before a restart). */
    private void lookupRecords(List<PathExpander.FileRef> files) {
        for (int from = 0; from < files.size(); from += 1000) {
            List<io.strata.core.InodeId> ids = new ArrayList<>();
            Map<Long, Long> dv = new HashMap<>();
            for (PathExpander.FileRef f : files.subList(from, Math.min(files.size(), from + 1000))) {
                ids.add(f.attrs().id());
                dv.put(f.attrs().id().value(), f.attrs().dataVersion());
            }
            for (Cached.Record r : Futures.join(fs.meta().cachedAsync(Caller.ROOT, ids), options.metaTimeout())) {
                if (r.dataVersion() == dv.getOrDefault(r.inode().value(), -1L)) {
                    placed.put(r.inode().value(), new Placed(r.dataVersion(), r.agents()));
                }
            }
        }
    }

    private void queueFile(Job j, FilePlan fp, List<Integer> cands) {
        InodeAttrs a = fp.attrs;
        Placed p = placed.get(a.id().value());
        if (p == null || p.dataVersion() != a.dataVersion()) {
            p = new Placed(a.dataVersion(), List.copyOf(cands));
            placed.put(a.id().value(), p);
        }
        fp.agents = p.agents();
        int cs = a.layout().chunkSize();
        long chunks = (a.length() + cs - 1) / cs;
        fp.chunksLeft = (int) chunks;
        j.unmarked++;
        for (int i = 0; i < chunks; i++) {
            long bytes = Math.min(cs, a.length() - (long) i * cs);
            Item it = new Item(fp, i, bytes);
            it.agent = firstServing(Holders.cachedRanking(a.id().value(), i, fp.agents), it.tried);
            j.queue.add(it);
            j.left.merge(a.id().value(), bytes, Long::sum);
            j.bytesTotal += bytes;
            j.perAgent.computeIfAbsent(it.agent, x -> new long[2])[0] += bytes;
        }
        if (chunks == 0) {
            j.toMark.add(fp);
        }
        j.dirty = true;
    }

    private int firstServing(List<Integer> ranking, List<Integer> tried) {
        RoutingInfo r = routing.current();
        for (int a : ranking) {
            if (!tried.contains(a) && Holders.serving(r, a)) {
                return a;
            }
        }
        return -1;
    }

    /** Sends fetches, most urgent hints first, while agents have room. */
    private void dispatch() {
        for (Job j : ordered()) {
            if (!j.state().active() || !j.planned) {
                continue;
            }
            int scanned = 0;
            var it = j.queue.iterator();
            while (it.hasNext() && scanned++ < 4096) {
                Item item = it.next();
                if (item.agent < 0) {
                    it.remove();
                    stop(j, HintState.FAILED, item.file.path + ": chunk " + item.index + ": no L2 agent could take it (tried "
                            + item.tried + (item.lastError.isEmpty() ? "" : "; last: " + item.lastError) + ")");
                    return;
                }
                int busy = inflight.getOrDefault(item.agent, 0);
                if (busy >= options.window()) {
                    continue;
                }
                it.remove();
                send(j, item);
            }
        }
    }

    private void send(Job j, Item item) {
        InodeAttrs a = item.file.attrs;
        ChunkAddress addr = new ChunkAddress(new ChunkId(a.id(), item.index), a.layout().chainOf(item.index), a.layout().chunkSize());
        inflight.merge(item.agent, 1, Integer::sum);
        j.running++;
        int agent = item.agent;
        CompletableFuture<?> f;
        try {
            f = agents.fetchAsync(agent, addr, item.epoch, item.epoch == 0 ? a.dataVersion() : 0,
                    item.epoch == 0 ? List.of(agent) : item.holders, j.id(), QosClass.parse(j.hint.qos()), options.fetchTimeout());
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((r, e) -> events.add(() -> fetched(j, item, agent,
                r instanceof io.strata.protocol.l2.L2Message.Fetched done && done.fromL3(), e)));
    }

    private void fetched(Job j, Item item, int agent, boolean fromL3, Throwable e) {
        inflight.merge(agent, -1, Integer::sum);
        j.running--;
        if (!j.state().active()) {
            if (j.running == 0 && j.state() != HintState.READY) {
                release(j);
            }
            return;
        }
        if (e == null) {
            stagedBytes.increment(item.bytes);
            if (fromL3) {
                fetchedTotal += item.bytes; // a pin of a chunk already there costs no L3 read: not part of the rate
                rate.completed(clock.millis(), fetchedTotal);
            }
            j.left.merge(item.file.attrs.id().value(), -item.bytes, Long::sum);
            j.bytesDone += item.bytes;
            j.perAgent.computeIfAbsent(agent, x -> new long[2])[1] += item.bytes;
            j.dirty = true;
            if (--item.file.chunksLeft == 0) {
                j.toMark.add(item.file);
            }
            return;
        }
        StrataException se = StrataException.wrap(e);
        fetchFailures.increment();
        if (se.status() == Status.INVALID_ARGUMENT && item.epoch == 0 && staged(item)) {
            j.queue.addFirst(item); // a staged file: fetched with its epoch on its first holder
            return;
        }
        boolean moveOn = switch (se.status()) {
            case CONNECTION_FAILED, CONNECTION_LOST, TIMEOUT, NOT_SERVING, FENCED, SHUTTING_DOWN, NO_SPACE, IO_ERROR, OVERLOADED -> true;
            default -> false;
        };
        if (!moveOn || ++item.errors > 8) {
            stop(j, HintState.FAILED, item.file.path + ": chunk " + item.index + ": " + se.getMessage());
            return;
        }
        LOG.info("hint {}: {} chunk {} on agent {} failed ({}); trying the next agent", j.id(), item.file.path, item.index, agent,
                se.status());
        item.tried.add(agent);
        item.lastError = se.getMessage();
        j.perAgent.computeIfAbsent(agent, x -> new long[2])[0] -= item.bytes;
        item.agent = item.epoch == 0 ? firstServing(Holders.cachedRanking(item.file.attrs.id().value(), item.index, item.file.agents), item.tried)
                : firstServing(item.holders, item.tried);
        if (item.agent >= 0) {
            j.perAgent.computeIfAbsent(item.agent, x -> new long[2])[0] += item.bytes;
        }
        j.queue.addFirst(item);
    }

    /** Turns {@code item} into a fetch of its staged copy (the file has a staging record); false when it has none. */
    private boolean staged(Item item) {
        Optional<Staging> s = Futures.join(fs.meta().stagingAsync(Caller.ROOT, item.file.attrs.id()), options.metaTimeout());
        if (s.isEmpty() || !s.get().wasWritten(item.index)) {
            return false;
        }
        item.epoch = s.get().epoch();
        item.holders = Holders.of(s.get(), item.index);
        item.agent = firstServing(item.holders, item.tried);
        return true;
    }

    /**
     * Records the files whose every chunk is in L2 (files written meanwhile are planned again),
     * without waiting for the meta service: the answer is taken in as an event, and the hint is
     * ready once every file is marked.
     */
    private void flushMarks() {
        for (Job j : jobs.values()) {
            if (j.toMark.isEmpty() || !j.state().active()) {
                continue;
            }
            Map<List<Integer>, List<FilePlan>> byAgents = new LinkedHashMap<>();
            for (FilePlan fp : j.toMark) {
                byAgents.computeIfAbsent(fp.agents, x -> new ArrayList<>()).add(fp);
            }
            j.toMark.clear();
            for (Map.Entry<List<Integer>, List<FilePlan>> e : byAgents.entrySet()) {
                List<FilePlan> fps = e.getValue();
                for (int from = 0; from < fps.size(); from += 1000) {
                    List<FilePlan> batch = List.copyOf(fps.subList(from, Math.min(fps.size(), from + 1000)));
                    List<Cached.File> files = batch.stream().map(fp -> new Cached.File(fp.attrs.id(), fp.attrs.dataVersion())).toList();
                    j.marking++;
                    CompletableFuture<Cached.Marked> f;
                    try {
                        f = fs.meta().cacheMarkAsync(Caller.ROOT, j.id(), e.getKey(), files, null);
                    } catch (RuntimeException ex) {
                        f = CompletableFuture.failedFuture(ex);
                    }
                    f.orTimeout(options.metaTimeout().toMillis(), TimeUnit.MILLISECONDS)
                            .whenComplete((m, ex) -> events.add(() -> marked(j, batch, m, ex)));
                }
            }
        }
    }

    /** The meta service's answer to a mark of {@code batch}; a failed mark is tried again at the next pass. */
    private void marked(Job j, List<FilePlan> batch, Cached.Marked m, Throwable e) {
        j.marking--;
        if (!j.state().active()) {
            if (e == null && j.released) {
                // released while the mark was on its way: take the records it made away again
                unmark(j, batch.stream().map(fp -> fp.attrs.id()).toList());
            }
            return;
        }
        if (e != null) {
            LOG.info("hint {}: marking {} files as staged failed ({}); will retry", j.id(), batch.size(), StrataException.wrap(e).getMessage());
            j.toMark.addAll(batch);
            return;
        }
        Set<io.strata.core.InodeId> stale = Set.copyOf(m.stale());
        for (FilePlan fp : batch) {
            if (stale.contains(fp.attrs.id())) {
                replan(j, fp);
            } else {
                j.unmarked--;
            }
        }
        if (j.unmarked == 0 && j.marking == 0 && j.queue.isEmpty() && j.running == 0) {
            setState(j, HintState.READY, j.note);
            persist(true);
            LOG.info("hint {} (job {}) is ready: {} bytes in L2", j.id(), j.hint.job(), j.bytesDone);
        }
    }

    /** A file changed while it was fetched: fetch its new bytes (a file that keeps changing is left to L3). */
    private void replan(Job j, FilePlan fp) {
        j.unmarked--;
        if (++fp.replans > 3) {
            LOG.warn("hint {}: {} keeps changing; left to L3", j.id(), fp.path);
            return;
        }
        InodeAttrs now;
        try {
            now = Futures.join(fs.meta().getattrAsync(Caller.ROOT, fp.attrs.id()), options.metaTimeout());
        } catch (StrataException e) {
            return; // removed meanwhile: nothing to stage
        }
        j.bytesTotal -= fp.attrs.length();
        j.bytesDone -= fp.attrs.length();
        fp.attrs = now;
        queueFile(j, fp, candidates(j.hint.nodes(), false));
    }

    /** Ends a job's fetching: no new fetch; its pins go once the fetches in flight have answered. */
    private void stop(Job j, HintState state, String why) {
        j.queue.clear();
        j.toMark.clear();
        setState(j, state, why);
        persist(true);
        if (j.running == 0) {
            release(j);
        }
    }

    /** Unpins the hint's share on every agent and unmarks its files; a job's end then removes the hint. */
    private void release(Job j) {
        if (!j.released) {
            j.released = true;
            for (AgentInfo a : routing.current().agents().values()) {
                if (a.serving()) {
                    try {
                        Futures.join(agents.unpinAsync(a.node().value(), j.id(), options.metaTimeout()), options.metaTimeout());
                    } catch (StrataException e) {
                        LOG.warn("hint {}: agent {} did not unpin ({}); its copies stay pinned until it restarts", j.id(), a.node().value(),
                                e.getMessage());
                    }
                }
            }
            List<io.strata.core.InodeId> ids = new ArrayList<>();
            if (j.files != null) {
                j.files.forEach(f -> ids.add(f.attrs().id()));
            } else {
                try {
                    expander.expand(j.hint.paths(), "paths").forEach(f -> ids.add(f.attrs().id()));
                } catch (StrataException e) {
                    LOG.info("hint {}: its paths no longer expand ({}); records of removed files went with them", j.id(), e.getMessage());
                }
            }
            unmark(j, ids);
            for (long inode : ids.stream().map(io.strata.core.InodeId::value).toList()) {
                placed.remove(inode);
            }
        }
        if (j.endRequested) {
            store.delete(j.id());
            snapshot.remove(j.id());
            jobs.remove(j.id());
            for (CompletableFuture<Hint> f : j.onReleased) {
                f.complete(j.hint);
            }
        }
    }

    /** Removes the hint's staging records of {@code ids} from the namespace. */
    private void unmark(Job j, List<io.strata.core.InodeId> ids) {
        for (int from = 0; from < ids.size(); from += 1000) {
            Futures.join(fs.meta().cacheUnmarkAsync(Caller.ROOT, j.id(), ids.subList(from, Math.min(ids.size(), from + 1000)), null),
                    options.metaTimeout());
        }
    }

    private void setState(Job j, HintState s, String why) {
        if (j.state() != s || !j.hint.message().equals(why)) {
            boolean nowReady = s == HintState.READY && j.state() != HintState.READY;
            j.hint = j.hint.withState(s, why, clock.millis());
            j.dirty = true;
            if (nowReady) {
                recordReady(j.hint);
            }
        }
    }

    /**
     * How a hint's staging ended against its deadline, per job (tag {@code strata_job}, as a
     * mount of the job tags its own series): {@code strata.hooks.hint.ready.seconds} (from the
     * submission to ready), {@code strata.hooks.hint.slack.seconds} (ready that long before the
     * deadline; 0 when late) and {@code strata.hooks.hint.lateness.seconds} (ready that long
     * after it; 0 when on time).
     */
    private void recordReady(Hint h) {
        double slack = (h.deadline() - h.readyAt()) / 1000.0;
        summary("strata.hooks.hint.ready.seconds", "time from a hint's submission until it was ready", h.job())
                .record(Math.max(0, h.readyAt() - h.created()) / 1000.0);
        summary("strata.hooks.hint.slack.seconds", "how long before its deadline a hint was ready", h.job()).record(Math.max(0, slack));
        summary("strata.hooks.hint.lateness.seconds", "how long after its deadline a hint was ready", h.job()).record(Math.max(0, -slack));
    }

    private io.micrometer.core.instrument.DistributionSummary summary(String name, String description, String job) {
        return io.micrometer.core.instrument.DistributionSummary.builder(name).description(description).baseUnit("seconds")
                .tag("strata_job", job).register(meters);
    }

    /**
     * Writes changed hints to the cluster manager ({@code now}: at once, else every
     * {@code persistEvery}), without waiting: the API shows the new figures at once, the
     * manager's answer is taken in as an event, and a hint whose write is in flight is written
     * again at a later pass if it changed meanwhile.
     */
    private void persist(boolean now) {
        long t = clock.millis();
        if (t - lastEstimate >= 250) {
            estimate(t);
        }
        for (Job j : jobs.values()) {
            if (j.endRequested && j.released) {
                continue;
            }
            progress(j, t);
            if (j.persisting || !j.dirty
                    || (!now && t - j.hint.updated() < options.persistEvery().toMillis() && j.stored.hint().state().equals(j.hint.state()))) {
                continue;
            }
            Hint next = j.hint.withProgress(j.hint.files(), j.hint.bytesTotal(), j.hint.bytesDone(), j.hint.eta(), j.hint.perNode(), t);
            j.hint = next;
            j.dirty = false;
            j.persisting = true;
            snapshot.put(j.id(), next);
            CompletableFuture<Optional<HintStore.Versioned>> f;
            try {
                f = store.replaceAsync(j.stored, next);
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            f.whenComplete((v, e) -> events.add(() -> persisted(j, next, v, e)));
        }
    }

    /** The cluster manager's answer to a write of {@code sent}. */
    private void persisted(Job j, Hint sent, Optional<HintStore.Versioned> v, Throwable e) {
        j.persisting = false;
        if (jobs.get(j.id()) != j) {
            return; // ended and removed meanwhile
        }
        if (e != null) {
            LOG.debug("hint {}: writing it to the cluster manager failed (will retry): {}", j.id(), e.toString());
            j.dirty = true;
            return;
        }
        if (v.isPresent()) {
            j.stored = v.get();
            return;
        }
        j.dirty = true; // somebody else changed it: take their version in, then write ours over it
        Optional<HintStore.Versioned> fresh = store.get(j.id());
        if (fresh.isEmpty()) {
            return;
        }
        j.stored = fresh.get();
        if (fresh.get().hint().stateValue() == HintState.CANCELLED && j.state() != HintState.CANCELLED) {
            stop(j, HintState.CANCELLED, fresh.get().hint().message());
        }
    }

    /**
     * Estimates when each active hint will be ready. Hints are served in order (priority, then
     * deadline), so a hint is ready once the bytes of every hint before it and its own are
     * staged: its ETA is now plus that sum over the rate all hints staged at in the last 5 s
     * ({@link StagingRate}). A file two hints share counts once, for the first (the second only
     * pins it).
     */
    private void estimate(long now) {
        lastEstimate = now;
        boolean busy = jobs.values().stream().anyMatch(j -> j.running > 0);
        if (!busy) {
            rate.idle(); // idle time is not part of the rate
            return;
        }
        rate.busy(now, fetchedTotal);
        double perMilli = rate.perMilli();
        if (perMilli <= 0) {
            return; // no rate yet: keep the last estimates
        }
        java.util.Set<Long> counted = new java.util.HashSet<>();
        long ahead = 0;
        for (Job j : ordered()) {
            if (!j.planned || !j.state().active()) {
                continue;
            }
            for (Map.Entry<Long, Long> e : j.left.entrySet()) {
                // a file an earlier hint stages (or staged) is only pinned for this one
                if (counted.add(e.getKey()) && e.getValue() > 0 && !stagedElsewhere(j, e.getKey())) {
                    ahead += e.getValue();
                }
            }
            j.etaAt = now + (long) (ahead / perMilli);
        }
    }

    /** Whether a hint other than {@code j} has every chunk of file {@code inode} in L2 already. */
    private boolean stagedElsewhere(Job j, long inode) {
        for (Job o : jobs.values()) {
            if (o != j && o.left.containsKey(inode) && o.left.get(inode) <= 0) {
                return true;
            }
        }
        return false;
    }

    /** Updates a job's figures, estimate and deadline state from its counters. */
    private void progress(Job j, long now) {
        if (!j.planned) {
            return;
        }
        long eta = j.hint.eta();
        long left = j.bytesTotal - j.bytesDone;
        if (left <= 0) {
            eta = j.state() == HintState.READY ? j.hint.readyAt() : now;
        } else if (j.etaAt > 0) {
            eta = j.etaAt;
        }
        Map<String, Hint.NodeProgress> per = new TreeMap<>();
        for (Map.Entry<Integer, long[]> e : j.perAgent.entrySet()) {
            if (e.getKey() < 0) {
                continue;
            }
            per.merge(nodeName(e.getKey()), new Hint.NodeProgress(e.getValue()[0], e.getValue()[1]),
                    (x, y) -> new Hint.NodeProgress(x.bytesTotal() + y.bytesTotal(), x.bytesDone() + y.bytesDone()));
        }
        long files = j.files != null ? j.files.size() : j.hint.files();
        Hint h = j.hint;
        if (files != h.files() || j.bytesTotal != h.bytesTotal() || j.bytesDone != h.bytesDone() || eta != h.eta() || !per.equals(h.perNode())) {
            j.hint = h.withProgress(files, j.bytesTotal, j.bytesDone, eta, per, h.updated());
            j.dirty = true;
        }
        if (j.state().active() && j.state() != HintState.ACCEPTED && j.hint.deadline() > 0) {
            if (now > j.hint.deadline()) {
                if (j.state() != HintState.LATE) {
                    missed.increment();
                    LOG.warn("hint {} (job {}) is late: {} of {} bytes staged at its deadline", j.id(), j.hint.job(), j.bytesDone, j.bytesTotal);
                }
                setState(j, HintState.LATE, "not ready at its deadline");
            } else if (eta > j.hint.deadline()) {
                setState(j, HintState.AT_RISK, "the estimate passes the deadline");
            } else if (j.state() != HintState.STAGING) {
                setState(j, HintState.STAGING, j.note);
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
