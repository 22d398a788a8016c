package io.strata.placement;

import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.routing.LocalState;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.TargetReport;
import io.strata.protocol.mgmtd.MgmtdMessage.Heartbeat;
import io.strata.protocol.mgmtd.MgmtdMessage.LeaseGranted;
import io.strata.protocol.mgmtd.MgmtdMessage.RegisterNode;
import io.strata.protocol.mgmtd.MgmtdMessage.TargetSpace;
import io.strata.protocol.mgmtd.NodeRole;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster-manager side of a node that holds data (a storage node, an L2 agent): registers
 * the node in its role with its targets (an L2 agent has none), heartbeats with each target's
 * {@link LocalState}, and keeps the <b>write gate</b>.
 *
 * <p>Fencing: a lease is renewed by every acknowledged heartbeat and counts from the moment
 * that heartbeat was <em>sent</em> (measured on {@code ctx.clock()}); the manager counts from
 * the moment it received it, later. Once half a lease has passed without an acknowledged
 * heartbeat, the agent closes the gate ({@link #mayServeWrites()} turns false and the fence
 * listeners run) long before the manager may expire the lease and promote another replica.
 * The gate stays closed until a heartbeat (or a new registration) is acknowledged again. A
 * heartbeat refused with {@code LEASE_EXPIRED} closes the gate at once and registers again
 * (same incarnation: the manager takes the node's targets through offline and back to
 * waiting, so they resync).
 *
 * <p>Local states: {@code online} after start; {@code up-to-date} when the resync code calls
 * {@link #markSynced} (naming the chain version the sync ran under) or once the target is
 * published serving; back to {@code online} whenever it is published waiting, lastsrv or
 * offline; {@code offline} after {@link #markFailed} (a dead disk).
 *
 * <p>Space: a storage node's heartbeats also carry each target's disk space (its
 * {@code space} supplier, read once per heartbeat), which the manager sums for clients'
 * {@code statfs} and for {@code strata admin health}.
 */
public final class NodeAgent implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);

    private final NodeContext ctx;
    private final MgmtdClient client;
    private final RoutingSource routing;
    private final NodeInfo node;
    private final NodeRole role;
    private final List<TargetId> targets;
    private final long incarnation;
    private final Supplier<List<TargetSpace>> space;
    /** What an L2 agent reports it is draining, in bytes, read at each heartbeat (0 for other nodes). */
    private volatile java.util.function.LongSupplier drainBacklog = () -> 0;
    /** What the manager's last two lease answers said of the agents draining (the last first). */
    private volatile DrainCount drainCount = DrainCount.NONE;
    private volatile DrainCount previousDrainCount = DrainCount.NONE;
    private final Map<TargetId, LocalState> local = new ConcurrentHashMap<>();
    private final Map<TargetId, Long> syncedAt = new ConcurrentHashMap<>();
    private final Map<TargetId, Boolean> failed = new ConcurrentHashMap<>();
    private final Listeners<Boolean> fenceListeners = new Listeners<>();
    private final CompletableFuture<Void> firstLease = new CompletableFuture<>();
    private volatile boolean fenced = true;
    private volatile long leaseNanos;
    private volatile long heartbeatNanos;
    private volatile long lastAckSentNanos;
    private volatile long registeredVersion;
    private volatile boolean registering;
    private volatile boolean closed;
    private ScheduledFuture<?> ticker;

    private NodeAgent(NodeContext ctx, MgmtdClient client, RoutingSource routing, NodeInfo node, NodeRole role, List<TargetId> targets,
                      Supplier<List<TargetSpace>> space) {
        this.ctx = ctx;
        this.space = space;
        this.client = client;
        this.routing = routing;
        this.node = node;
        this.role = role;
        this.targets = List.copyOf(targets);
        this.incarnation = ctx.random().nextLong() & Long.MAX_VALUE;
        for (TargetId t : targets) {
            local.put(t, LocalState.ONLINE);
        }
    }

    /**
     * Starts the agent: registers (retrying until the manager answers), then heartbeats at the
     * interval the manager asks for. {@code routing} is the node's routing source (a
     * {@link io.strata.placement.ManagerRoutingSource}), watched for this node's targets.
     */
    public static NodeAgent start(NodeContext ctx, MgmtdClient client, RoutingSource routing, NodeInfo node, List<TargetId> targets) {
        return start(ctx, client, routing, node, NodeRole.STORAGE, targets);
    }

    /** As above, for a node in {@code role}. */
    public static NodeAgent start(NodeContext ctx, MgmtdClient client, RoutingSource routing, NodeInfo node, NodeRole role,
                                  List<TargetId> targets) {
        return start(ctx, client, routing, node, role, targets, List::of);
    }

    /** As above, reporting the targets' disk space ({@code space}, read at each heartbeat) with every heartbeat. */
    public static NodeAgent start(NodeContext ctx, MgmtdClient client, RoutingSource routing, NodeInfo node, NodeRole role,
                                  List<TargetId> targets, Supplier<List<TargetSpace>> space) {
        NodeAgent a = new NodeAgent(ctx, client, routing, node, role, targets, space);
        routing.onChange(a::onRouting);
        a.register();
        return a;
    }

    /**
     * For an L2 agent: {@code backlog} (bytes it is draining to L3, 0 when none) is reported with
     * every heartbeat, so that the manager counts the agents that share the cluster's drain budget.
     */
    public void reportDrainBacklog(java.util.function.LongSupplier backlog) {
        this.drainBacklog = backlog;
    }

    /**
     * What a lease answer says of the L2 agents' drains: how many serving agents reported a
     * backlog ({@code draining}), and whether this one was among them ({@code counted}: the
     * heartbeat it answered reported one).
     */
    public record DrainCount(int draining, boolean counted) {
        static final DrainCount NONE = new DrainCount(0, false);
    }

    /** What the manager's last lease answer said of the agents draining. */
    public DrainCount drainCount() {
        return drainCount;
    }

    /** What the lease answer before the last said (none before two answers). */
    public DrainCount previousDrainCount() {
        return previousDrainCount;
    }

    /** Completes when the first lease is granted. */
    public CompletableFuture<Void> registered() {
        return firstLease;
    }

    /** The write gate: false while fenced (no lease, or half a lease without an acknowledged heartbeat). */
    public boolean mayServeWrites() {
        return !fenced && !closed;
    }

    /** Same as {@code !mayServeWrites()}. */
    public boolean fenced() {
        return !mayServeWrites();
    }

    /** Called with {@code true} when the gate closes and {@code false} when it opens again; must not block. */
    public void onFenceChange(Consumer<Boolean> listener) {
        fenceListeners.add(listener);
    }

    public long incarnation() {
        return incarnation;
    }

    public NodeInfo node() {
        return node;
    }

    public LocalState localState(TargetId t) {
        return local.get(t);
    }

    /**
     * The resync of {@code target} finished under {@code chainVersion} (the predecessor's
     * sync-done said so): the next heartbeat reports it up-to-date, and the manager makes it
     * serving if its chain is still at that version.
     */
    public void markSynced(TargetId target, long chainVersion) {
        requireOwn(target);
        if (failed.containsKey(target)) {
            return;
        }
        syncedAt.put(target, chainVersion);
        local.put(target, LocalState.UP_TO_DATE);
        heartbeatSoon();
    }

    /** The target's disk failed: reported offline from now on. */
    public void markFailed(TargetId target) {
        requireOwn(target);
        failed.put(target, true);
        local.put(target, LocalState.OFFLINE);
        heartbeatSoon();
    }

    private void requireOwn(TargetId t) {
        if (!local.containsKey(t)) {
            throw new StrataException(Status.NO_SUCH_TARGET, t + " is not a target of " + node.id());
        }
    }

    // ---- registration and heartbeats ------------------------------------------------------

    private synchronized void register() {
        if (closed || registering) {
            return;
        }
        registering = true;
        long sent = ctx.clock().nanoTime();
        Duration timeout = Duration.ofSeconds(5);
        client.call(new RegisterNode(node, role, incarnation, targets), LeaseGranted.class, timeout, timeout)
                .whenComplete((g, e) -> {
                    registering = false;
                    if (closed) {
                        return;
                    }
                    if (e != null) {
                        LOG.info("{}: registration with the cluster manager failed: {} (retrying)", node.id(), StrataException.wrap(e));
                        schedule(this::register, 500);
                        return;
                    }
                    registeredVersion = g.routingVersion();
                    for (TargetId t : targets) {
                        if (!failed.containsKey(t)) {
                            local.put(t, LocalState.ONLINE);
                            syncedAt.remove(t);
                        }
                    }
                    granted(g, sent, 0);
                    firstLease.complete(null);
                    LOG.info("{}: registered (incarnation {}), lease {} ms", node.id(), incarnation, g.leaseMillis());
                    startTicker();
                });
    }

    private synchronized void startTicker() {
        if (ticker == null && !closed) {
            long period = Math.max(1, heartbeatNanos / 4);
            // ticks often; sends a heartbeat each heartbeat interval and checks the fence every tick
            ticker = ctx.scheduler().scheduleWithFixedDelay(this::tick, period, period, TimeUnit.NANOSECONDS);
        }
    }

    private volatile long lastSentNanos;
    private volatile boolean inFlight;

    private void tick() {
        try {
            checkFence();
            long now = ctx.clock().nanoTime();
            if (!registering && !inFlight && now - lastSentNanos >= heartbeatNanos) {
                heartbeat();
            }
        } catch (RuntimeException e) {
            LOG.warn("{}: agent tick failed: {}", node.id(), e.toString());
        }
    }

    private void heartbeatSoon() {
        lastSentNanos = ctx.clock().nanoTime() - heartbeatNanos;
    }

    private void heartbeat() {
        inFlight = true;
        long sent = ctx.clock().nanoTime();
        lastSentNanos = sent;
        // an answer that arrives after the fence point is useless: give up before it
        Duration budget = Duration.ofNanos(Math.max(1_000_000, leaseNanos / 2 - (sent - lastAckSentNanos)));
        Duration attempt = Duration.ofNanos(Math.min(budget.toNanos(), Math.max(heartbeatNanos, 1_000_000)));
        long backlog = backlogQuietly();
        Heartbeat beat = new Heartbeat(node.id(), incarnation, reports(), spaceQuietly(), backlog);
        client.call(beat, LeaseGranted.class, attempt, budget).whenComplete((g, e) -> {
            inFlight = false;
            if (closed) {
                return;
            }
            if (e == null) {
                granted(g, sent, backlog);
                return;
            }
            StrataException se = StrataException.wrap(e);
            if (se.status() == Status.LEASE_EXPIRED) {
                LOG.warn("{}: the cluster manager expired this node's lease; fencing and registering again", node.id());
                fence();
                register();
            } else {
                checkFence();
            }
        });
    }

    /** The drain backlog to report; none when reading it fails (the heartbeat matters more). */
    private long backlogQuietly() {
        try {
            return Math.max(0, drainBacklog.getAsLong());
        } catch (RuntimeException e) {
            LOG.debug("{}: could not read the drain backlog: {}", node.id(), e.toString());
            return 0;
        }
    }

    /** The space to report; none when reading it fails (the heartbeat matters more). */
    private List<TargetSpace> spaceQuietly() {
        try {
            return space.get();
        } catch (RuntimeException e) {
            LOG.debug("{}: could not read the targets' disk space: {}", node.id(), e.toString());
            return List.of();
        }
    }

    private List<TargetReport> reports() {
        RoutingInfo r = routing.current();
        List<TargetReport> out = new ArrayList<>();
        for (TargetId t : targets) {
            LocalState l = local.get(t);
            long v = 0;
            if (l == LocalState.UP_TO_DATE) {
                Long synced = syncedAt.get(t);
                if (synced != null) {
                    v = synced;
                } else {
                    ChainInfo c = chainOf(r, t);
                    v = c == null ? 0 : c.version();
                }
            }
            out.add(new TargetReport(t, l, v));
        }
        return out;
    }

    private void granted(LeaseGranted g, long sentNanos, long backlogSent) {
        previousDrainCount = drainCount;
        drainCount = new DrainCount(g.drainingAgents(), backlogSent > 0);
        leaseNanos = TimeUnit.MILLISECONDS.toNanos(g.leaseMillis());
        heartbeatNanos = TimeUnit.MILLISECONDS.toNanos(g.heartbeatMillis());
        if (sentNanos - lastAckSentNanos > 0 || fenced) {
            lastAckSentNanos = sentNanos;
        }
        if (ctx.clock().nanoTime() - lastAckSentNanos < leaseNanos / 2) {
            setFenced(false);
        }
    }

    private void checkFence() {
        if (!fenced && ctx.clock().nanoTime() - lastAckSentNanos >= leaseNanos / 2) {
            LOG.warn("{}: no acknowledged heartbeat for half a lease ({} ms): fencing writes", node.id(),
                    TimeUnit.NANOSECONDS.toMillis(leaseNanos / 2));
            fence();
        }
    }

    private void fence() {
        setFenced(true);
    }

    private synchronized void setFenced(boolean f) {
        if (fenced == f) {
            return;
        }
        fenced = f;
        fenceListeners.tell(f, e -> LOG.warn("{}: fence listener failed: {}", node.id(), e.toString()));
    }

    // ---- routing ----------------------------------------------------------------------------

    private void onRouting(RoutingInfo r) {
        boolean expired = false;
        for (TargetId t : targets) {
            TargetInfo ti = r.targets().get(t);
            if (ti == null || failed.containsKey(t)) {
                continue;
            }
            switch (ti.state()) {
                case SERVING -> {
                    if (local.get(t) != LocalState.UP_TO_DATE) {
                        local.put(t, LocalState.UP_TO_DATE);
                        syncedAt.remove(t);
                    }
                }
                case SYNCING -> { }
                case WAITING -> {
                    local.put(t, LocalState.ONLINE);
                    syncedAt.remove(t);
                }
                case LASTSRV, OFFLINE -> {
                    local.put(t, LocalState.ONLINE);
                    syncedAt.remove(t);
                    expired |= r.version() > registeredVersion && !fenced;
                }
            }
        }
        if (expired) {
            // the manager marked this live node's targets down: it no longer holds our lease
            LOG.warn("{}: routing v{} shows this node's targets down; fencing and registering again", node.id(), r.version());
            fence();
            register();
        }
    }

    private static ChainInfo chainOf(RoutingInfo r, TargetId t) {
        for (ChainInfo c : r.chains().values()) {
            if (c.targets().contains(t)) {
                return c;
            }
        }
        return null;
    }

    private void schedule(Runnable r, long delayMs) {
        try {
            ctx.scheduler().schedule(r, delayMs, TimeUnit.MILLISECONDS);
        } catch (RuntimeException rejected) {
            closed = true;
        }
    }

    /** Stops heartbeating and closes the gate (the manager expires the lease in due course). */
    @Override
    public synchronized void close() {
        closed = true;
        if (ticker != null) {
            ticker.cancel(false);
        }
        setFenced(true);
    }

    /** For tests and the storage node's logs: the public state the routing source shows for a target. */
    public TargetState publishedState(TargetId t) {
        TargetInfo ti = routing.current().targets().get(t);
        return ti == null ? null : ti.state();
    }
}
