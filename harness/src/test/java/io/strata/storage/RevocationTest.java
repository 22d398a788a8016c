package io.strata.storage;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.rpc.CoreMessage.Ping;
import io.strata.core.rpc.CoreMessage.Pong;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.util.Futures;
import io.strata.harness.StorageCluster;
import io.strata.namespace.ChunkReclaimer;
import io.strata.namespace.MetaStore;
import io.strata.namespace.StaticChainTables;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.namespace.service.MetaService;
import io.strata.placement.ManagerRoutingSource;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage.Revocation;
import io.strata.protocol.storage.StorageMessages;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Token revocation end to end: an admin revokes a client token at the cluster manager; a storage
 * node and a meta service, which learn the list as they follow the manager's routing, refuse it
 * within a few seconds, on the connection it had already opened and on new ones, while another
 * token keeps working.
 */
class RevocationTest {
    private static final Duration T = Duration.ofSeconds(10);
    /** The watchers ask every 5 s: a revocation must bite well within this. */
    private static final Duration BOUND = Duration.ofSeconds(20);

    @TempDir
    Path dir;
    final ClusterKey key = ClusterKey.generate();
    StorageCluster f;
    final List<AutoCloseable> open = new ArrayList<>();
    RpcServer meta;

    @BeforeEach
    void start() {
        f = StorageCluster.builder(dir, 47).nodes(1).chains(1).replicas(1).managed(Duration.ofSeconds(10)).auth(key).start();
        NodeContext metaCtx = NodeContext.builder("meta").verifier(new TokenVerifier(key)).eventLoopThreads(1)
                .credentials(f.token(Role.META, "node-1000")).build();
        open.add(metaCtx);
        MgmtdClient m = new MgmtdClient(metaCtx, f.manager().addresses());
        open.add(m);
        open.add(ManagerRoutingSource.start(metaCtx, m));
        LmdbKvStore kv = LmdbKvStore.open(dir.resolve("meta-kv"), LmdbKvStore.Options.DEFAULTS.withSync(false), null);
        open.add(kv);
        MetaStore store = new MetaStore(metaCtx, kv, StaticChainTables.uniform(1), ChunkReclaimer.NONE,
                MetaStore.Options.DEFAULTS.withGc(Duration.ZERO, Duration.ZERO));
        open.add(store);
        meta = MetaService.register(RpcServer.builder(metaCtx, MetaMessages.PROTOCOL), store).bind("127.0.0.1", 0);
        open.add(meta);
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
        f.close();
    }

    /** A client process holding {@code token}: a meta client and a storage RPC client. */
    private record Holder(MetaClient meta, RpcClient storage) {
    }

    private Holder holder(String name, String token) {
        NodeContext ctx = NodeContext.builder(name).credentials(Credentials.of(token)).eventLoopThreads(1).build();
        RpcClient metaRpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        RpcClient storage = new RpcClient(ctx, StorageMessages.PROTOCOL, RpcOptions.DEFAULTS);
        open.add(ctx);
        open.add(metaRpc);
        open.add(storage);
        return new Holder(new MetaClient(ctx, metaRpc, List.of(meta.address()), T, 1), storage);
    }

    private void works(Holder h) {
        Futures.join(h.meta.getattrAsync(Caller.of(1000, 1000), InodeId.ROOT), T);
        Futures.join(h.storage.call(f.address(1), new Ping(1), Pong.class), T);
    }

    private static StrataException awaitRefused(String what, Supplier<CompletableFuture<?>> call) throws InterruptedException {
        long end = System.nanoTime() + BOUND.toNanos();
        while (true) {
            try {
                Futures.join(call.get(), T);
            } catch (StrataException e) {
                if (e.status() == Status.UNAUTHENTICATED) {
                    return e;
                }
                throw e;
            }
            if (System.nanoTime() > end) {
                throw new AssertionError(what + " still accepts the revoked token after " + BOUND);
            }
            Thread.sleep(200);
        }
    }

    @Test
    void aRevokedTokenIsRefusedByTheMetaServiceAndAStorageNode() throws Exception {
        String alice = Token.issue(key, Role.CLIENT, "alice", Instant.now(), Duration.ofHours(1));
        Token claims = Token.peek(alice);
        Holder h = holder("alice", alice);
        Holder bob = holder("bob", Token.issue(key, Role.CLIENT, "bob", Instant.now(), Duration.ofHours(1)));
        works(h);
        works(bob);

        MgmtdClient admin = new MgmtdClient(f.clientContext("admin"), f.manager().addresses());
        open.add(admin);
        assertThat(Futures.join(admin.revokeAsync(claims.id(), claims.expiresAt().getEpochSecond()), T)).isEqualTo(1);
        assertThat(Futures.join(admin.revokedAsync(T, T), T)).containsExactly(new Revocation(claims.id(), claims.expiresAt().getEpochSecond()));

        // the connections alice opened before are refused at their next request, then closed
        StrataException m = awaitRefused("the meta service", () -> h.meta.getattrAsync(Caller.of(1000, 1000), InodeId.ROOT));
        assertThat(m.getMessage()).contains(claims.id(), "revoked");
        StrataException s = awaitRefused("storage-1", () -> h.storage.call(f.address(1), new Ping(2), Pong.class));
        assertThat(s.getMessage()).contains("revoked");
        // a new process with the same token does not get in either
        Holder again = holder("alice-again", alice);
        assertThat(awaitRefused("a new meta connection", () -> again.meta.statfsAsync(Caller.of(1000, 1000))).getMessage())
                .contains("refused the connection", "revoked");
        awaitRefused("a new storage connection", () -> again.storage.call(f.address(1), new Ping(3), Pong.class));
        works(bob);
    }
}
