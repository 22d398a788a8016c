package io.strata.hooks;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.client.ClientConfig;
import io.strata.client.StrataFileSystem;
import io.strata.config.TlsConfig;
import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.TlsEngine;
import io.strata.harness.LocalCluster;
import io.strata.harness.MiniMgmtdCluster;
import io.strata.l2.agent.L2Agent;
import io.strata.l2.agent.L2AgentConfig;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.routing.AgentInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * A real cluster for the hooks: storage nodes and the meta service (the harness's local
 * cluster, routed by a static table), L2 agents on loopback named {@code gpu-1..n}, a cluster
 * manager (one Ratis peer) keeping the hints, and the hooks server with its planner, spoken to
 * over HTTP; or, made with {@link #https}, over HTTPS with a CA of the fixture's own and a
 * scheduler's bearer token, as {@code strata up} runs it.
 */
final class HooksFixture implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();

    final LocalCluster cluster;
    final MiniMgmtdCluster managers;
    final Map<Integer, L2Agent> agents = new LinkedHashMap<>();
    final StrataFileSystem admin;
    private final Path dir;
    private final long seed;
    private final NodeContext ctx;
    private final MetaClient meta;
    private final RpcClient metaRpc;
    private final StorageClient l3;
    private final UnaryOperator<L2AgentConfig> agentConfig;
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final Map<String, NodeContext> contexts = new HashMap<>();
    private final Map<Integer, NodeContext> agentContexts = new HashMap<>();
    private final HttpClient http;
    /** The HTTPS and tokens of the fixture; null: plain HTTP without authentication. */
    final Secured secured;
    private MgmtdClient mgmtd;
    Hooks hooks;

    /** A JSON reply and its HTTP status. */
    record Http(int status, JsonNode body) {
    }

    /**
     * HTTPS and authentication as {@code strata up} sets them up: a CA of the fixture's own, the
     * hooks' {@code [tls]} files it issued (naming localhost and 127.0.0.1) under {@code dir/tls},
     * and a cluster key whose tokens the hooks verify, with a scheduler's token for the requests.
     */
    record Secured(Path caFile, TlsConfig tls, ClusterKey key, String schedulerToken) {
        static Secured create(Path dir) throws IOException {
            Path tls = Files.createDirectories(dir.resolve("tls"));
            CertificateAuthority ca = CertificateAuthority.generate("hooks fixture CA", Instant.now(), Duration.ofDays(1));
            CertificateAuthority.Issued hooks = ca.issue("hooks", List.of("localhost", "127.0.0.1"), Instant.now(), Duration.ofDays(1));
            Path caFile = Files.writeString(tls.resolve("ca.pem"), ca.certificatePem());
            Path cert = Files.writeString(tls.resolve("hooks.pem"), hooks.certificatePem());
            Path key = Files.writeString(tls.resolve("hooks.key"), hooks.keyPem());
            ClusterKey clusterKey = ClusterKey.generate();
            return new Secured(caFile, new TlsConfig(true, cert, key, caFile, TlsEngine.resolve("auto")), clusterKey,
                    Token.issue(clusterKey, Role.SCHEDULER, "slurm", Instant.now(), Duration.ofHours(1)));
        }
    }

    HooksFixture(Path dir, long seed, int agentCount, UnaryOperator<L2AgentConfig> agentConfig) throws Exception {
        this(dir, seed, agentCount, agentConfig, null);
    }

    /** A fixture whose hooks serve HTTPS and require a bearer token ({@link Secured}). */
    static HooksFixture https(Path dir, long seed, int agentCount) throws Exception {
        return new HooksFixture(dir, seed, agentCount, c -> c, Secured.create(dir));
    }

    private HooksFixture(Path dir, long seed, int agentCount, UnaryOperator<L2AgentConfig> agentConfig, Secured secured) throws Exception {
        this.dir = dir;
        this.seed = seed;
        this.agentConfig = agentConfig;
        this.secured = secured;
        this.http = HooksHttp.client(Optional.ofNullable(secured).map(Secured::caFile), Duration.ofSeconds(5));
        this.cluster = LocalCluster.builder(dir.resolve("cluster"), seed).storageNodes(3).chains(6).metaSync(false).metaInProcess().start();
        this.managers = MiniMgmtdCluster.builder(dir.resolve("mgmtd")).peers(1).seed(seed).start();
        this.ctx = secured == null ? NodeContext.seeded("hooks-fixture", seed)
                : NodeContext.builder("hooks-fixture").seed(seed).eventLoopThreads(2).blockingThreads(4)
                        .verifier(new TokenVerifier(secured.key())).build();
        this.metaRpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        this.meta = new MetaClient(ctx, metaRpc, List.of(cluster.metaAddress()));
        this.l3 = new StorageClient(ctx, cluster.routingSource(), RpcOptions.DEFAULTS, StorageClientOptions.DEFAULTS);
        for (int i = 1; i <= agentCount; i++) {
            startAgent(i);
        }
        this.admin = client("admin");
        startHooks();
    }

    /** Starts (or restarts) agent {@code i} (node id {@code 10 + i}, node name {@code gpu-i}) and routes to it. */
    L2Agent startAgent(int i) throws IOException {
        int id = 10 + i;
        L2AgentConfig cfg = agentConfig.apply(L2AgentConfig.of(NodeId.of(id), dir.resolve("agent-" + i)));
        NodeContext agentCtx = NodeContext.seeded("agent-" + i, seed + i);
        L2Agent a = L2Agent.start(agentCtx, cfg, cluster.routingSource(), meta, l3, RpcOptions.DEFAULTS, new InetSocketAddress("127.0.0.1", 0));
        agents.put(i, a);
        agentContexts.put(i, agentCtx);
        cluster.storage().updateRouting(r -> route(r, id, a.address(), "gpu-" + i, true));
        return a;
    }

    /** Stops agent {@code i} as a crash would look to the others: gone, and routing marks it down. */
    void killAgent(int i) throws Exception {
        L2Agent a = agents.remove(i);
        a.close();
        cluster.storage().updateRouting(r -> route(r, 10 + i, a.address(), "gpu-" + i, false));
    }

    private static RoutingInfo route(RoutingInfo r, int id, InetSocketAddress address, String name, boolean serving) {
        Map<NodeId, NodeInfo> nodes = new HashMap<>(r.nodes());
        nodes.put(NodeId.of(id), new NodeInfo(NodeId.of(id), address.getHostString(), address.getPort(),
                Map.of("domain", name, "node", name)));
        Map<NodeId, AgentInfo> as = new HashMap<>(r.agents());
        as.put(NodeId.of(id), new AgentInfo(NodeId.of(id), serving));
        return new RoutingInfo(r.version() + 1, nodes, r.targets(), r.chains(), r.tables(), as);
    }

    /** The context of client {@code name} (its fault injector, its meters). */
    NodeContext context(String name) {
        return contexts.get(name);
    }

    /** A client over the cluster's shared routing (it sees agents come and go). */
    StrataFileSystem client(String name) {
        NodeContext c = NodeContext.seeded(name, seed);
        contexts.put(name, c);
        RpcClient rpc = new RpcClient(c, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        MetaClient mc = new MetaClient(c, rpc, List.of(cluster.metaAddress()));
        ClientConfig cfg = ClientConfig.of(List.of(cluster.metaAddress()), cluster.routing()).withIoTimeout(Duration.ofSeconds(20))
                .withName(name);
        StrataFileSystem fs = StrataFileSystem.create(c, cfg, mc, cluster.routingSource(), List.of(rpc, c));
        closeables.add(fs);
        return fs;
    }

    /** Starts the hooks server and planner (again after {@link #stopHooks}: a restart). */
    void startHooks() {
        startHooks(secured == null ? TlsConfig.OFF : secured.tls());
    }

    /** Starts the hooks server and planner with {@code tls} as its {@code [tls]} table. */
    void startHooks(TlsConfig tls) {
        mgmtd = new MgmtdClient(ctx, managers.addresses());
        HooksConfig cfg = new HooksConfig(new InetSocketAddress("127.0.0.1", 0), managers.addresses(),
                new Planner.Options(2, Duration.ofSeconds(30), Duration.ofSeconds(10), Duration.ofMillis(100)), tls);
        try {
            hooks = Hooks.start(ctx, cfg, admin, cluster.routingSource(), mgmtd, RpcOptions.DEFAULTS, Clock.systemUTC());
        } catch (RuntimeException e) {
            mgmtd.close();
            throw e;
        }
    }

    void stopHooks() {
        hooks.close();
        mgmtd.close();
    }

    Http send(String method, String path, String body) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(hooks.url() + path)).timeout(Duration.ofSeconds(30));
        if (secured != null) {
            b.header("Authorization", "Bearer " + secured.schedulerToken());
        }
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Http(r.statusCode(), JSON.readTree(r.body()));
    }

    Http get(String path) throws IOException, InterruptedException {
        return send("GET", path, null);
    }

    Http post(String path, String body) throws IOException, InterruptedException {
        return send("POST", path, body);
    }

    /** Polls hint {@code id} until {@code state} (failing on another settled state or after {@code timeout}). */
    JsonNode awaitState(String id, String state, Duration timeout) throws Exception {
        long end = System.nanoTime() + timeout.toNanos();
        JsonNode last = null;
        while (System.nanoTime() < end) {
            last = get("/v1/hints/" + id).body();
            String s = last.path("state").asText();
            if (s.equals(state)) {
                return last;
            }
            if ((s.equals("failed") || s.equals("cancelled") || s.equals("ready")) && !s.equals(state)) {
                throw new AssertionError("hint " + id + " is " + s + ", not " + state + ": " + last);
            }
            Thread.sleep(50);
        }
        throw new AssertionError("hint " + id + " did not reach " + state + " in " + timeout + ": " + last);
    }

    /** How many disk operations of class {@code qos} agent {@code i}'s scheduler has let through. */
    long agentDiskOps(int i, io.strata.core.tier.QosClass qos) {
        var t = agentContexts.get(i).meters().find("strata.qos.queued").tag("class", qos.policyName()).tag("device", "l2-" + (10 + i))
                .timer();
        return t == null ? 0 : t.count();
    }

    /** L3 chunk reads the agents made for prefetches, in all. */
    long prefetchFetches() {
        return agents.values().stream().mapToLong(a -> a.status().prefetchFetches()).sum();
    }

    /** Counter {@code meter} of client {@code client} (0 before it first counts). */
    double counter(String client, String meter) {
        var c = contexts.get(client).meters().find(meter).counter();
        return c == null ? 0 : c.count();
    }

    /** A meter of the hooks (the fixture's own context): a gauge's value, a counter's or a summary's count, 0 when absent. */
    double hooksMeter(String name, String... tags) {
        var m = ctx.meters().find(name).tags(tags);
        if (m.gauge() != null) {
            return m.gauge().value();
        }
        if (m.summary() != null) {
            return m.summary().count();
        }
        return m.counter() == null ? 0 : m.counter().count();
    }

    /** The total a summary of the hooks recorded, 0 when absent. */
    double hooksTotal(String name, String... tags) {
        var m = ctx.meters().find(name).tags(tags).summary();
        return m == null ? 0 : m.totalAmount();
    }

    long pinnedChunks() {
        return agents.values().stream().mapToLong(a -> a.status().pinnedChunks()).sum();
    }

    static DataSize mib(int n) {
        return DataSize.ofMiB(n);
    }

    @Override
    public void close() throws Exception {
        try {
            stopHooks();
        } catch (RuntimeException ignored) {
            // already stopped
        }
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        for (L2Agent a : agents.values()) {
            a.close();
        }
        l3.close();
        metaRpc.close();
        ctx.close();
        managers.close();
        cluster.close();
    }
}
