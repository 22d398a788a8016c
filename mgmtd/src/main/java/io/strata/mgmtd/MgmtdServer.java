package io.strata.mgmtd;

import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.MgmtdMessages;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.mgmtd.StoredHint;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.Role;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Reply;
import io.strata.core.rpc.RpcServer;
import io.strata.protocol.routing.AgentInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import io.strata.protocol.mgmtd.MgmtdMessage.ChainTableCreated;
import io.strata.protocol.mgmtd.MgmtdMessage.ClusterStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.DeleteHint;
import io.strata.protocol.mgmtd.MgmtdMessage.GetHints;
import io.strata.protocol.mgmtd.MgmtdMessage.Heartbeat;
import io.strata.protocol.mgmtd.MgmtdMessage.HintDeleted;
import io.strata.protocol.mgmtd.MgmtdMessage.HintPut;
import io.strata.protocol.mgmtd.MgmtdMessage.Hints;
import io.strata.protocol.mgmtd.MgmtdMessage.LeaseGranted;
import io.strata.protocol.mgmtd.MgmtdMessage.NodeStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.PeerStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.PutHint;
import io.strata.protocol.mgmtd.MgmtdMessage.Revocation;
import io.strata.protocol.mgmtd.MgmtdMessage.RevokeToken;
import io.strata.protocol.mgmtd.MgmtdMessage.Revoked;
import io.strata.protocol.mgmtd.MgmtdMessage.TokenRevoked;
import io.strata.protocol.mgmtd.MgmtdMessage.RegisterNode;
import io.strata.protocol.mgmtd.MgmtdMessage.RoutingReply;
import io.strata.protocol.mgmtd.MgmtdMessage.TargetStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.TargetSpace;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.NotLeaderException;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One cluster-manager peer: a Ratis server holding {@link ClusterState} and a Strata RPC
 * server answering {@link MgmtdMessage}s.
 *
 * <p>Design: only the Ratis leader answers; followers reply {@code NOT_LEADER} with the
 * leader's RPC address. Changes become log entries ({@link MgmtdCommand}) submitted straight
 * to the local Ratis server and answered once applied. Heartbeats are not logged unless they
 * change a local target state: a lease lives in the leader's memory as a deadline on
 * {@code ctx.clock()}. A new leader (a new Ratis term) starts every live node's lease afresh
 * from its takeover time, which can only make a lease longer than the node assumes, never
 * shorter: a node fences itself after half a lease without an answer, so it has stopped
 * writing long before any leader expires it. A lease past its deadline is never renewed: the
 * heartbeat is refused with {@code LEASE_EXPIRED} and the node must register again.
 *
 * <p>Routing is pushed by long poll: {@link MgmtdMessage.GetRouting} with a wait parks until
 * the applied routing version passes the caller's.
 *
 * <p>With {@code [tls]} on, the Ratis port speaks mutual TLS with the peer's certificate and
 * the cluster CA ({@link RaftTls}), like the RPC port: only peers the CA vouches for vote,
 * append or install snapshots.
 *
 * <p>Scheduler hints are kept for the stateless scheduler hooks: puts and deletes are log
 * entries like any change (but never wake routing watchers), reads page through the leader's
 * applied state.
 */
public final class MgmtdServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MgmtdServer.class);
    /** The one Ratis group of a Strata cluster manager. */
    public static final RaftGroupId GROUP = RaftGroupId.valueOf(UUID.nameUUIDFromBytes("strata-mgmtd".getBytes(StandardCharsets.UTF_8)));

    /** How often a peer hands its verifier the revocations it applied. */
    private static final Duration REVOKED_EVERY = Duration.ofSeconds(1);

    private final NodeContext ctx;
    private final MgmtdConfig cfg;
    private final Map<RaftPeerId, MgmtdConfig.Peer> peers = new ConcurrentHashMap<>();
    private final MgmtdStateMachine sm;
    private final RaftServer raft;
    private final RaftServer.Division division;
    private final RpcServer rpc;
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    private final Map<NodeId, Long> deadlines = new ConcurrentHashMap<>();
    /** Each target's disk space as its node last reported it (leader memory only: it changes with every write). */
    private final Map<io.strata.core.TargetId, TargetSpace> spaces = new ConcurrentHashMap<>();
    /** The L2 agents whose last heartbeat reported bytes to drain (leader memory only, like {@link #spaces}). */
    private final Set<NodeId> draining = ConcurrentHashMap.newKeySet();
    private final Set<NodeId> expiring = ConcurrentHashMap.newKeySet();
    private final List<io.micrometer.core.instrument.Meter> gauges;
    private final AtomicBoolean autoTableRunning = new AtomicBoolean();
    private final List<Watch> watches = new ArrayList<>();
    private final ScheduledFuture<?> leaseTask;
    /** Hands this peer's verifier the revoked tokens as it applied them; null without authentication. */
    private final ScheduledFuture<?> revokedTask;
    private volatile long leaseTerm = -1;
    private volatile boolean closed;

    private record Watch(long known, CompletableFuture<Reply> reply) {
    }

    private MgmtdServer(NodeContext ctx, MgmtdConfig cfg) throws IOException {
        this.ctx = ctx;
        this.cfg = cfg;
        List<RaftPeer> raftPeers = new ArrayList<>();
        for (MgmtdConfig.Peer p : cfg.peers()) {
            peers.put(RaftPeerId.valueOf(p.id()), p);
            raftPeers.add(RaftPeer.newBuilder().setId(p.id()).setAddress(p.raft().getHostString() + ":" + p.raft().getPort()).build());
        }
        this.sm = new MgmtdStateMachine(this::onStateChange, this::onLeaderChange);
        // Ratis makes its log, metadata and snapshot directories and files with the umask's modes;
        // made 0700 first, its storage directory keeps all of them out of other users' reach
        PrivateFiles.createDirectories(cfg.data());
        Path ratis = PrivateFiles.createDirectories(cfg.data().resolve("ratis"));
        RaftProperties props = new RaftProperties();
        RaftServerConfigKeys.setStorageDir(props, List.of(ratis.toFile()));
        GrpcConfigKeys.Server.setPort(props, cfg.self().raft().getPort());
        long et = cfg.electionTimeout().toMillis();
        RaftServerConfigKeys.Rpc.setTimeoutMin(props, TimeDuration.valueOf(et, TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setTimeoutMax(props, TimeDuration.valueOf(2 * et, TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setRequestTimeout(props, TimeDuration.valueOf(Math.max(3000, 3 * et), TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(props, true);
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(props, cfg.snapshotEvery());
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(props, 2);
        this.raft = RaftServer.newBuilder()
                .setServerId(RaftPeerId.valueOf(cfg.id()))
                .setGroup(RaftGroup.valueOf(GROUP, raftPeers))
                .setStateMachine(sm)
                .setProperties(props)
                .setParameters(RaftTls.parameters(cfg.tls()))
                .setOption(java.nio.file.Files.isDirectory(ratis.resolve(GROUP.getUuid().toString()))
                        ? org.apache.ratis.server.storage.RaftStorage.StartupOption.RECOVER
                        : org.apache.ratis.server.storage.RaftStorage.StartupOption.FORMAT)
                .build();
        raft.start();
        this.division = raft.getDivision(GROUP);
        RpcServer.Builder b = RpcServer.builder(ctx, MgmtdMessages.PROTOCOL).options(cfg.rpc());
        EchoService.register(ctx, b, 1 << 20);
        // a node speaks for itself only: its token's subject must be the node id it registers or beats for
        b.handle(MgmtdMessages.REGISTER_NODE, req -> {
                    req.requireSubject(req.message().node().id().toString(), "register " + req.message().node().id());
                    return register(req.message());
                })
                .handle(MgmtdMessages.HEARTBEAT, req -> {
                    req.requireSubject(req.message().node().toString(), "heartbeat for " + req.message().node());
                    return heartbeat(req.message());
                })
                .handle(MgmtdMessages.GET_ROUTING, req -> {
                    if (req.message().waitMillis() > 0) {
                        req.waitsByDesign(); // a long poll
                    }
                    return getRouting(req.message());
                })
                .handle(MgmtdMessages.GET_STATUS, req -> CompletableFuture.completedFuture(Reply.of(status())))
                .handle(MgmtdMessages.GET_SPACE, req -> CompletableFuture.completedFuture(Reply.of(space())))
                .handle(MgmtdMessages.CREATE_CHAIN_TABLE, req -> createTable(req.message()))
                .handle(MgmtdMessages.PUT_HINT, req -> putHint(req.message()))
                .handle(MgmtdMessages.DELETE_HINT, req -> deleteHint(req.message()))
                .handle(MgmtdMessages.GET_HINTS, req -> CompletableFuture.completedFuture(Reply.of(getHints(req.message()))))
                .handle(MgmtdMessages.REVOKE_TOKEN, req -> revoke(req.message()))
                .handle(MgmtdMessages.GET_REVOKED, req -> CompletableFuture.completedFuture(Reply.of(new Revoked(revoked()))))
                .allow(MgmtdMessages.REGISTER_NODE, Role.STORAGE, Role.L2, Role.META)
                .allow(MgmtdMessages.HEARTBEAT, Role.STORAGE, Role.L2, Role.META)
                .allow(MgmtdMessages.CREATE_CHAIN_TABLE, Role.ADMIN)
                .allow(MgmtdMessages.PUT_HINT, Role.SCHEDULER, Role.ADMIN)
                .allow(MgmtdMessages.DELETE_HINT, Role.SCHEDULER, Role.ADMIN)
                .allow(MgmtdMessages.REVOKE_TOKEN, Role.ADMIN);
        try {
            this.rpc = b.bind(new InetSocketAddress(cfg.self().rpc().getHostString(), cfg.self().rpc().getPort()));
        } catch (RuntimeException e) {
            raft.close();
            throw e;
        }
        // the leader's view of capacity; other peers report NaN (Prometheus: max(... >= 0) picks the leader's)
        this.gauges = List.of(
                io.micrometer.core.instrument.Gauge.builder("strata.cluster.capacity.bytes", this, m -> m.spaceOrNaN(true))
                        .description("raw capacity of the storage nodes' file systems, each counted once (leader only)").register(ctx.meters()),
                io.micrometer.core.instrument.Gauge.builder("strata.cluster.free.bytes", this, m -> m.spaceOrNaN(false))
                        .description("raw usable bytes of the storage nodes' file systems, each counted once (leader only)").register(ctx.meters()));
        long check = cfg.leaseCheck().toNanos();
        this.leaseTask = ctx.scheduler().scheduleWithFixedDelay(this::checkLeasesQuietly, check, check, TimeUnit.NANOSECONDS);
        this.revokedTask = ctx.verifier().isEmpty() ? null : ctx.scheduler().scheduleWithFixedDelay(this::applyRevoked,
                0, REVOKED_EVERY.toNanos(), TimeUnit.NANOSECONDS);
        LOG.info("{}: cluster manager peer {} up: raft {} ({}), rpc {}, {} peer(s), lease {}", ctx.name(), cfg.id(),
                cfg.self().raft(), cfg.tls().enabled() ? "mutual TLS" : "plaintext", rpc.address(), cfg.peers().size(), cfg.lease());
    }

    /**
     * Starts a peer. A Ratis port of 0 (single peer only) picks a free port. Blocks while Ratis
     * opens its log (and replays it after a restart).
     */
    public static MgmtdServer start(NodeContext ctx, MgmtdConfig cfg) throws IOException {
        if (cfg.self().raft().getPort() == 0) {
            if (cfg.peers().size() > 1) {
                throw new IllegalArgumentException("mgmtd.peers: every peer of a group needs a fixed raft port");
            }
            MgmtdConfig.Peer p = cfg.self();
            cfg = new MgmtdConfig(cfg.id(), List.of(new MgmtdConfig.Peer(p.id(),
                    InetSocketAddress.createUnresolved(p.raft().getHostString(), freePort()), p.rpc())), cfg.data(), cfg.lease(),
                    cfg.heartbeat(), cfg.leaseCheck(), cfg.electionTimeout(), cfg.snapshotEvery(), cfg.autoTableReplicas(), cfg.rpc(),
                    cfg.tls());
        }
        return new MgmtdServer(ctx, cfg);
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    public MgmtdConfig config() {
        return cfg;
    }

    /** This peer's Strata RPC address (with the real port). */
    public InetSocketAddress rpcAddress() {
        return rpc.address();
    }

    public String peerId() {
        return cfg.id();
    }

    /** Whether this peer is the Ratis leader and has applied its term's first entry. */
    public boolean isLeader() {
        DivisionInfo i = division.getInfo();
        return !closed && i.isLeader() && i.isLeaderReady();
    }

    /** The state as this peer has applied it (followers may lag the leader a little). */
    public ClusterState.View view() {
        return sm.view();
    }

    public RoutingInfo routing() {
        return sm.view().routing();
    }

    // ---- requests -------------------------------------------------------------------------

    private CompletableFuture<Reply> register(RegisterNode m) {
        requireLeader();
        return submit(new MgmtdCommand.Register(m.node(), m.role(), m.incarnation(), m.targets())).thenApply(o -> {
            check(o);
            expiring.remove(m.node().id());
            draining.remove(m.node().id()); // until its first heartbeat says
            renew(m.node().id());
            maybeCreateTable();
            return Reply.of(leaseGranted(o.routingVersion()));
        });
    }

    private CompletableFuture<Reply> heartbeat(Heartbeat m) {
        requireLeader();
        ClusterState.NodeMeta meta = sm.view().nodes().get(m.node());
        if (meta == null || !meta.live() || meta.incarnation() != m.incarnation()) {
            throw new StrataException(Status.LEASE_EXPIRED, m.node() + " (incarnation " + m.incarnation() + ") holds no lease; register again");
        }
        if (!renew(m.node())) {
            checkLeasesQuietly();
            throw new StrataException(Status.LEASE_EXPIRED, m.node() + ": lease expired at the manager; register again");
        }
        RoutingInfo r = routing();
        for (TargetSpace t : m.space()) {
            TargetInfo ti = r.targets().get(t.target());
            if (ti != null && ti.node().equals(m.node())) { // a node speaks for its own targets only
                spaces.put(t.target(), t);
            }
        }
        if (m.drainBacklogBytes() > 0 && r.agents().containsKey(m.node())) {
            draining.add(m.node());
        } else {
            draining.remove(m.node());
        }
        if (!sm.read(s -> s.changes(m.reports()))) {
            return CompletableFuture.completedFuture(Reply.of(leaseGranted(routing().version())));
        }
        return submit(new MgmtdCommand.Report(m.node(), m.incarnation(), m.reports())).thenApply(o -> {
            check(o);
            return Reply.of(leaseGranted(o.routingVersion()));
        });
    }

    private CompletableFuture<Reply> getRouting(MgmtdMessage.GetRouting m) {
        requireLeader();
        RoutingInfo r = routing();
        if (r.version() > m.knownVersion() || m.waitMillis() == 0) {
            return CompletableFuture.completedFuture(Reply.of(new RoutingReply(r)));
        }
        Watch w = new Watch(m.knownVersion(), new CompletableFuture<>());
        synchronized (watches) {
            watches.add(w);
        }
        // re-check: a change may have been applied between the read above and the registration
        onStateChange(sm.view());
        ctx.scheduler().schedule(() -> {
            synchronized (watches) {
                watches.remove(w);
            }
            w.reply().complete(Reply.of(new RoutingReply(routing())));
        }, m.waitMillis(), TimeUnit.MILLISECONDS);
        return w.reply();
    }

    private CompletableFuture<Reply> createTable(MgmtdMessage.CreateChainTable m) {
        requireLeader();
        return submit(new MgmtdCommand.CreateTable(m.tableId(), m.replicas())).thenApply(o -> {
            check(o);
            return Reply.of(new ChainTableCreated(m.tableId(), (int) o.value(), o.routingVersion()));
        });
    }

    private CompletableFuture<Reply> putHint(PutHint m) {
        requireLeader();
        String problem = ClusterState.hintValueProblem(m.value().length);
        if (problem != null) {
            throw new StrataException(Status.INVALID_ARGUMENT, problem); // refused before it takes room in the log
        }
        return submit(new MgmtdCommand.PutHint(m)).thenApply(o -> {
            check(o);
            return Reply.of(new HintPut(o.value(), o.version()));
        });
    }

    private CompletableFuture<Reply> deleteHint(DeleteHint m) {
        requireLeader();
        return submit(new MgmtdCommand.DeleteHint(m.id(), m.expectedVersion())).thenApply(o -> {
            check(o);
            return Reply.of(new HintDeleted(o.value()));
        });
    }

    private CompletableFuture<Reply> revoke(RevokeToken m) {
        requireLeader();
        long now = ctx.clock().now().getEpochSecond();
        if (m.expiresAt() <= now) {
            throw new StrataException(Status.INVALID_ARGUMENT, "token " + m.tokenId() + " expired at "
                    + java.time.Instant.ofEpochSecond(m.expiresAt()) + ": it is refused already, nothing to revoke");
        }
        return submit(new MgmtdCommand.Revoke(new Revocation(m.tokenId(), m.expiresAt()), now)).thenApply(o -> {
            check(o);
            applyRevoked();
            return Reply.of(new TokenRevoked((int) o.value()));
        });
    }

    /** The revocations in force (leader only over RPC, so that a revocation is seen once it is answered). */
    private List<Revocation> revoked() {
        requireLeader();
        long now = ctx.clock().now().getEpochSecond();
        return sm.read(s -> s.revoked(now));
    }

    /** Gives this peer's own verifier the revocations it has applied (followers included). */
    private void applyRevoked() {
        try {
            ctx.verifier().ifPresent(v -> {
                long now = ctx.clock().now().getEpochSecond();
                Set<String> ids = new HashSet<>();
                sm.read(s -> s.revoked(now)).forEach(r -> ids.add(r.tokenId()));
                v.revoked(ids);
            });
        } catch (RuntimeException e) {
            LOG.warn("{}: cannot update the revoked tokens", ctx.name(), e); // the periodic task must keep running
        }
    }

    private Hints getHints(GetHints m) {
        requireLeader();
        int max = Math.clamp(m.max(), 1, MgmtdMessages.MAX_HINTS_PAGE);
        return sm.read(s -> s.hints(m.fromId(), max, MgmtdMessages.HINTS_PAGE_BYTES));
    }

    /** Every scheduler hint as this peer has applied them (followers may lag the leader a little). */
    public List<StoredHint> hints() {
        return sm.read(s -> s.hints(0, Integer.MAX_VALUE, Long.MAX_VALUE).hints());
    }

    /** The cluster as this peer sees it (leader-only over RPC; callable locally on any peer). */
    public ClusterStatus status() {
        requireLeader();
        ClusterState.View v = sm.view();
        RaftPeerId leader = division.getInfo().getLeaderId();
        List<PeerStatus> ps = new ArrayList<>();
        for (MgmtdConfig.Peer p : cfg.peers()) {
            String addr = p.id().equals(cfg.id()) ? hostPort(rpc.address()) : p.rpcHostPort();
            ps.add(new PeerStatus(p.id(), addr, leader != null && leader.toString().equals(p.id())));
        }
        long now = ctx.clock().nanoTime();
        List<NodeStatus> ns = new ArrayList<>();
        v.nodes().forEach((id, meta) -> {
            Long d = deadlines.get(id);
            long left = d == null || !meta.live() ? -1 : Math.max(0, TimeUnit.NANOSECONDS.toMillis(d - now));
            ns.add(new NodeStatus(id, meta.role(), meta.incarnation(), meta.live(), left));
        });
        List<TargetStatus> ts = new ArrayList<>();
        v.locals().forEach((t, l) -> {
            TargetSpace sp = spaces.get(t);
            ts.add(sp == null ? new TargetStatus(t, l) : new TargetStatus(t, l, sp.capacityBytes(), sp.freeBytes()));
        });
        ts.sort((a, b) -> a.target().compareTo(b.target()));
        ns.sort((a, b) -> a.node().compareTo(b.node()));
        return new ClusterStatus(v.routing(), ps, ns, ts);
    }

    /** The capacity of the serving targets of live nodes, each file system counted once ({@link SpaceSum}); leader only. */
    public MgmtdMessage.Space space() {
        requireLeader();
        ClusterState.View v = sm.view();
        return SpaceSum.of(v.routing(), n -> {
            ClusterState.NodeMeta meta = v.nodes().get(n);
            return meta != null && meta.live();
        }, spaces);
    }

    private double spaceOrNaN(boolean capacity) {
        if (!isLeader()) {
            return Double.NaN;
        }
        try {
            MgmtdMessage.Space s = space();
            return capacity ? s.capacityBytes() : s.freeBytes();
        } catch (RuntimeException e) {
            return Double.NaN; // lost the lead meanwhile
        }
    }

    private LeaseGranted leaseGranted(long routingVersion) {
        return new LeaseGranted(cfg.lease().toMillis(), cfg.heartbeat().toMillis(), routingVersion, drainingAgents());
    }

    /** The serving L2 agents whose last heartbeat reported a drain backlog: they share the cluster's drain budget. */
    int drainingAgents() {
        RoutingInfo r = routing();
        int n = 0;
        for (NodeId a : draining) {
            AgentInfo info = r.agents().get(a);
            if (info != null && info.serving()) {
                n++;
            }
        }
        return n;
    }

    private static void check(ClusterState.Outcome o) {
        if (o.status() != Status.OK) {
            throw new StrataException(o.status(), o.message());
        }
    }

    // ---- leases ---------------------------------------------------------------------------

    /** Extends the node's lease unless it already ran out; false if it had. */
    private boolean renew(NodeId node) {
        if (!syncLeaseTerm()) {
            return false;
        }
        long now = ctx.clock().nanoTime();
        Long d = deadlines.get(node);
        if (expiring.contains(node) || d != null && now - d >= 0) {
            return false;
        }
        deadlines.put(node, now + cfg.lease().toNanos());
        return true;
    }

    /** Leases belong to one leader term: a new term starts them all afresh. */
    private boolean syncLeaseTerm() {
        if (!isLeader()) {
            deadlines.clear();
            leaseTerm = -1;
            return false;
        }
        long term = division.getInfo().getCurrentTerm();
        if (term != leaseTerm) {
            deadlines.clear();
            expiring.clear();
            leaseTerm = term;
        }
        return true;
    }

    /**
     * Expires every live node whose deadline passed (leader only): its targets go offline and
     * to the tail of their chains. Runs every {@code mgmtd.lease-check}; tests that drive a
     * manual clock call it directly. Completes when the expiries it started are applied.
     */
    public CompletableFuture<Void> checkLeases() {
        if (closed || !syncLeaseTerm()) {
            return CompletableFuture.completedFuture(null);
        }
        long now = ctx.clock().nanoTime();
        List<CompletableFuture<?>> started = new ArrayList<>();
        Set<NodeId> live = new HashSet<>();
        sm.view().nodes().forEach((node, meta) -> {
            if (!meta.live()) {
                return;
            }
            live.add(node);
            long d = deadlines.computeIfAbsent(node, n -> now + cfg.lease().toNanos());
            if (now - d >= 0 && expiring.add(node)) {
                LOG.warn("{}: lease of {} expired ({} without a heartbeat); marking its targets offline", ctx.name(), node, cfg.lease());
                started.add(submit(new MgmtdCommand.Expire(node, meta.incarnation())).whenComplete((o, e) -> {
                    if (e != null) {
                        expiring.remove(node); // try again at the next check
                    } else {
                        deadlines.remove(node);
                    }
                }));
            }
        });
        deadlines.keySet().retainAll(live);
        return CompletableFuture.allOf(started.toArray(CompletableFuture[]::new));
    }

    private void checkLeasesQuietly() {
        try {
            checkLeases();
        } catch (RuntimeException e) {
            LOG.warn("{}: lease check failed: {}", ctx.name(), e.toString());
        }
    }

    private void maybeCreateTable() {
        int r = cfg.autoTableReplicas();
        if (r == 0 || routing().latestTable(r).isPresent() || !autoTableRunning.compareAndSet(false, true)) {
            return;
        }
        RoutingInfo ri = routing();
        Set<NodeId> withFree = new HashSet<>();
        Set<io.strata.core.TargetId> used = new HashSet<>();
        ri.chains().values().forEach(c -> used.addAll(c.targets()));
        for (TargetInfo t : ri.targets().values()) {
            ClusterState.NodeMeta m = sm.view().nodes().get(t.node());
            if (!used.contains(t.id()) && m != null && m.live() && m.role() == NodeRole.STORAGE) {
                withFree.add(t.node());
            }
        }
        if (withFree.size() < r) {
            autoTableRunning.set(false);
            return;
        }
        int id = 1 + ri.tables().stream().mapToInt(ChainTable::id).max().orElse(0);
        submit(new MgmtdCommand.CreateTable(id, r)).whenComplete((o, e) -> {
            autoTableRunning.set(false);
            if (e == null && o.status() == Status.OK) {
                LOG.info("{}: created chain table {} v{} ({} replicas)", ctx.name(), id, o.value(), r);
            }
        });
    }

    // ---- Ratis plumbing -----------------------------------------------------------------

    /** Appends a command to the log and completes with its outcome once applied here. */
    CompletableFuture<ClusterState.Outcome> submit(MgmtdCommand c) {
        ByteBuf b = Unpooled.buffer();
        byte[] bytes;
        try {
            MgmtdCommand.encode(c, b);
            bytes = new byte[b.readableBytes()];
            b.readBytes(bytes);
        } finally {
            b.release();
        }
        RaftClientRequest req = RaftClientRequest.newBuilder()
                .setClientId(clientId)
                .setServerId(raft.getId())
                .setGroupId(GROUP)
                .setCallId(callIds.incrementAndGet())
                .setMessage(Message.valueOf(ByteString.copyFrom(bytes)))
                .setType(RaftClientRequest.writeRequestType())
                .build();
        try {
            return raft.submitClientRequestAsync(req).thenApply(this::outcome);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new StrataException(Status.NOT_LEADER, "cannot submit: " + e.getMessage(), e));
        }
    }

    private ClusterState.Outcome outcome(RaftClientReply reply) {
        if (reply.isSuccess()) {
            return MgmtdStateMachine.decodeOutcome(reply.getMessage().getContent());
        }
        NotLeaderException nle = reply.getNotLeaderException();
        if (nle != null) {
            throw notLeader(nle.getSuggestedLeader() == null ? null : nle.getSuggestedLeader().getId());
        }
        String why = reply.getException() == null ? "unknown" : reply.getException().getMessage();
        // LeaderNotReady, LeaderSteppingDown and the like: the caller retries, possibly elsewhere.
        throw new StrataException.NotLeader("cluster manager peer " + cfg.id() + " could not commit: " + why, "");
    }

    private void requireLeader() {
        if (!isLeader()) {
            throw notLeader(division.getInfo().getLeaderId());
        }
    }

    private StrataException notLeader(RaftPeerId leader) {
        MgmtdConfig.Peer p = leader == null || leader.toString().equals(cfg.id()) ? null : peers.get(leader);
        return new StrataException.NotLeader("cluster manager peer " + cfg.id() + " is not the leader",
                p == null ? "" : p.rpcHostPort());
    }

    private void onStateChange(ClusterState.View v) {
        List<Watch> done = new ArrayList<>();
        synchronized (watches) {
            watches.removeIf(w -> {
                if (v.routing().version() > w.known()) {
                    done.add(w);
                    return true;
                }
                return false;
            });
        }
        done.forEach(w -> w.reply().complete(Reply.of(new RoutingReply(v.routing()))));
    }

    private void onLeaderChange(RaftPeerId leader) {
        LOG.info("{}: cluster manager leader is now {}", ctx.name(), leader);
        if (leader != null && leader.toString().equals(cfg.id())) {
            return;
        }
        List<Watch> all;
        synchronized (watches) {
            all = new ArrayList<>(watches);
            watches.clear();
        }
        StrataException e = notLeader(leader);
        all.forEach(w -> w.reply().completeExceptionally(e));
    }

    static String hostPort(InetSocketAddress a) {
        return a.getHostString() + ":" + a.getPort();
    }

    /** Stops serving RPCs, then the Ratis server (a leader's close takes about a second). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        gauges.forEach(ctx.meters()::remove);
        leaseTask.cancel(false);
        if (revokedTask != null) {
            revokedTask.cancel(false);
        }
        rpc.close();
        onLeaderChange(null);
        try {
            raft.close();
        } catch (IOException e) {
            LOG.warn("{}: closing Ratis: {}", ctx.name(), e.toString());
        }
    }

    /** How long a lease is. */
    public Duration lease() {
        return cfg.lease();
    }
}
