package io.strata.namespace.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.IdRanges;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.util.Futures;
import io.strata.namespace.ChunkReclaimer;
import io.strata.namespace.MetaStore;
import io.strata.namespace.StaticChainTables;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.SetAttr;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A meta service with authentication on, over real sockets: what a request may do depends on
 * the token of its connection, not only on the uid it claims. A client token acts for the uids
 * and gids of its ranges only, root squashed; an admin token for anyone.
 */
class MetaAuthTest {
    private static final Duration T = Duration.ofSeconds(30);
    private static final Caller ROOT = Caller.ROOT;
    private static final Caller ALICE = Caller.of(1500, 1500);
    private static final Caller BOB = Caller.of(1600, 1600);

    @TempDir
    Path tmp;
    final ClusterKey key = ClusterKey.generate();
    LmdbKvStore kv;
    NodeContext serverCtx;
    MetaStore meta;
    RpcServer server;
    final List<AutoCloseable> clients = new ArrayList<>();
    MetaClient admin;
    /** A client token for uids and gids 1000-1999. */
    MetaClient users;

    @BeforeEach
    void start() {
        serverCtx = NodeContext.builder("meta").verifier(new TokenVerifier(key)).eventLoopThreads(1).build();
        kv = LmdbKvStore.open(tmp.resolve("kv"), LmdbKvStore.Options.DEFAULTS.withSync(false), null);
        meta = new MetaStore(serverCtx, kv, StaticChainTables.uniform(4), ChunkReclaimer.NONE,
                MetaStore.Options.DEFAULTS.withGc(Duration.ZERO, Duration.ZERO));
        server = MetaService.register(RpcServer.builder(serverCtx, MetaMessages.PROTOCOL), meta).bind("127.0.0.1", 0);
        admin = client(Token.issue(key, Role.ADMIN, "admin", Instant.now(), Duration.ofHours(1)));
        users = client(Token.issue(key, Role.CLIENT, "users", Instant.now(), Duration.ofHours(1),
                IdRanges.parse("1000-1999"), IdRanges.parse("1000-1999")));
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : clients.reversed()) {
            c.close();
        }
        server.close();
        meta.close();
        kv.close();
        serverCtx.close();
    }

    @org.junit.jupiter.api.Test
    void authenticatedGarbageForEveryMetaMessageIsRefusedAndTheNamespaceStaysWhole() throws Exception {
        InodeAttrs d = join(admin.mkdirAsync(ROOT, InodeId.ROOT, "kept", 0755, req()));
        Random rnd = new Random(4243);
        for (String token : List.of(Token.issue(key, Role.ADMIN, "fuzzer", Instant.now(), Duration.ofHours(1)),
                Token.issue(key, Role.CLIENT, "fuzzer", Instant.now(), Duration.ofHours(1), IdRanges.parse("1000-1999"),
                        IdRanges.parse("1000-1999")))) {
            try (NodeContext ctx = NodeContext.builder("fuzz").credentials(Credentials.of(token)).eventLoopThreads(1).build()) {
                java.util.Map<String, Integer> outcomes = io.strata.testing.Garbage.send(ctx, server.address(), MetaMessages.TYPES, rnd, 6);
                assertThat(outcomes).as("the decoders saw the garbage (malformed: connection closed)").containsKey("CONNECTION_LOST");
            }
        }
        assertThat(join(admin.lookupAsync(ROOT, InodeId.ROOT, "kept")).id()).isEqualTo(d.id());
        assertThat(join(admin.mkdirAsync(ROOT, d.id(), "after", 0755, req())).type()).isEqualTo(io.strata.protocol.meta.InodeType.DIRECTORY);
    }

    private MetaClient client(String token) {
        NodeContext ctx = NodeContext.builder("client-" + clients.size()).credentials(Credentials.of(token)).eventLoopThreads(1).build();
        RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        clients.add(ctx);
        clients.add(rpc);
        return new MetaClient(ctx, rpc, List.of(server.address()), Duration.ofSeconds(5), 1);
    }

    private static <T> T join(CompletableFuture<T> f) {
        return Futures.join(f, T);
    }

    private static RequestId req() {
        return RequestId.random(new Random());
    }

    private static StrataException refused(Runnable r) {
        try {
            r.run();
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError("accepted");
    }

    /** /shared (0777) holding root's secret (0600) and alice's and bob's private files (0600). */
    private InodeAttrs shared() {
        InodeAttrs d = join(admin.mkdirAsync(ROOT, InodeId.ROOT, "shared", 0777, req()));
        join(admin.createAsync(ROOT, d.id(), "secret", 0600, true, req()));
        join(admin.createAsync(ALICE, d.id(), "alice", 0600, true, req()));
        join(admin.createAsync(BOB, d.id(), "bob", 0600, true, req()));
        return d;
    }

    @Test
    void aClientTokenClaimingRootIsSquashedToNobody() {
        InodeAttrs d = shared();
        InodeAttrs secret = join(admin.lookupAsync(ROOT, d.id(), "secret"));
        StrataException chown = refused(() -> join(users.setattrAsync(ROOT, secret.id(), SetAttr.owner(1500, 1500), req())));
        assertThat(chown.status()).isEqualTo(Status.NOT_PERMITTED);
        assertThat(refused(() -> join(users.setattrAsync(ROOT, secret.id(), SetAttr.mode(0666), req()))).status())
                .isEqualTo(Status.NOT_PERMITTED);
        assertThat(refused(() -> join(users.openAsync(ROOT, secret.id(), OpenFlags.WRITE, 1, req()))).status())
                .isEqualTo(Status.PERMISSION_DENIED);
        assertThat(refused(() -> join(users.openAsync(ROOT, secret.id(), OpenFlags.READ, 1, req()))).status())
                .isEqualTo(Status.PERMISSION_DENIED);
        // what root creates through a client token belongs to nobody
        InodeAttrs made = join(users.createAsync(ROOT, d.id(), "made-by-root", 0644, true, req()));
        assertThat(made.uid()).isEqualTo(Identity.NOBODY);
        assertThat(made.gid()).isEqualTo(Identity.NOBODY);
        assertThat(join(admin.getattrAsync(ROOT, secret.id())).mode()).isEqualTo(0600);
    }

    @Test
    void aClientTokenMayNotReadAnotherUsersPrivateFile() {
        InodeAttrs d = shared();
        InodeAttrs bobs = join(admin.lookupAsync(ROOT, d.id(), "bob"));
        InodeAttrs alices = join(admin.lookupAsync(ROOT, d.id(), "alice"));
        assertThat(refused(() -> join(users.openAsync(ALICE, bobs.id(), OpenFlags.READ, 1, req()))).status())
                .isEqualTo(Status.PERMISSION_DENIED);
        assertThat(join(users.openAsync(ALICE, alices.id(), OpenFlags.READ, 1, req())).attrs().id()).isEqualTo(alices.id());
    }

    @Test
    void aClaimedIdOutsideTheTokensRangesIsRefusedNamingIt() {
        InodeAttrs d = shared();
        StrataException uid = refused(() -> join(users.lookupAsync(Caller.of(2500, 1500), d.id(), "alice")));
        assertThat(uid.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(uid.getMessage()).contains("uids 1000-1999", "not uid 2500");
        StrataException gid = refused(() -> join(users.lookupAsync(Caller.of(1500, 5), d.id(), "alice")));
        assertThat(gid.getMessage()).contains("gids 1000-1999", "not gid 5");
        StrataException group = refused(() -> join(users.lookupAsync(Caller.of(1500, 1500, 1600, 27), d.id(), "alice")));
        assertThat(group.getMessage()).contains("not supplementary group 27");
        // group 0 the range does not name is dropped, not refused: it may only have added permissions
        assertThat(join(users.lookupAsync(Caller.of(1500, 1500, 0), d.id(), "alice")).uid()).isEqualTo(1500);
    }

    @Test
    void aClientTokenWithoutRangesActsForAnyoneButRoot() {
        MetaClient legacy = client(Token.issue(key, Role.CLIENT, "legacy", Instant.now(), Duration.ofHours(1)));
        InodeAttrs d = shared();
        InodeAttrs bobs = join(admin.lookupAsync(ROOT, d.id(), "bob"));
        join(legacy.getattrAsync(BOB, bobs.id()));
        assertThat(join(legacy.createAsync(Caller.of(70000, 70000), d.id(), "high", 0644, true, req())).uid()).isEqualTo(70000);
        assertThat(join(legacy.createAsync(ROOT, d.id(), "squashed", 0644, true, req())).uid()).isEqualTo(Identity.NOBODY);
    }

    @Test
    void aClientTokenNamingRootInItsRangeActsAsRoot() {
        MetaClient local = client(Token.issue(key, Role.CLIENT, "local", Instant.now(), Duration.ofHours(1), IdRanges.ALL, IdRanges.ALL));
        InodeAttrs d = shared();
        InodeAttrs secret = join(admin.lookupAsync(ROOT, d.id(), "secret"));
        assertThat(join(local.setattrAsync(ROOT, secret.id(), SetAttr.mode(0640), req())).mode()).isEqualTo(0640);
    }

    @Test
    void anAdminTokenMayActAsRoot() {
        InodeAttrs d = shared();
        InodeAttrs bobs = join(admin.lookupAsync(ROOT, d.id(), "bob"));
        assertThat(join(admin.setattrAsync(ROOT, bobs.id(), SetAttr.owner(1500, 1500), req())).uid()).isEqualTo(1500);
        assertThat(join(admin.openAsync(ROOT, bobs.id(), OpenFlags.READ, 1, req())).attrs().id()).isEqualTo(bobs.id());
    }

    @Test
    void storageTokensDoNotActForUsers() {
        MetaClient storage = client(Token.issue(key, Role.STORAGE, "node-1", Instant.now(), Duration.ofHours(1)));
        assertThat(refused(() -> join(storage.statfsAsync(ROOT))).status()).isEqualTo(Status.PERMISSION_DENIED);
    }

    @Test
    void policiesOnAnotherUsersDirectoryTakeAnAdminToken() {
        InodeAttrs d = shared();
        InodeAttrs bobsDir = join(admin.mkdirAsync(BOB, d.id(), "bobs", 0755, req()));
        StrataException e = refused(() -> join(users.policySetAsync(ALICE, bobsDir.id(), List.of("replicas=2"), req())));
        assertThat(e.status()).isEqualTo(Status.NOT_PERMITTED);
        assertThat(e.getMessage()).contains("admin token");
        // root through a client token that may act as root is still not an admin
        MetaClient local = client(Token.issue(key, Role.CLIENT, "local", Instant.now(), Duration.ofHours(1), IdRanges.ALL, IdRanges.ALL));
        assertThat(refused(() -> join(local.policySetAsync(ROOT, bobsDir.id(), List.of("replicas=2"), req()))).status())
                .isEqualTo(Status.NOT_PERMITTED);
        // the owner may, and so may an admin
        assertThat(join(users.policySetAsync(BOB, bobsDir.id(), List.of("replicas=2"), req())).overrides()).containsEntry("replicas", "2");
        assertThat(join(admin.policySetAsync(ROOT, bobsDir.id(), List.of("replicas=1"), req())).overrides()).containsEntry("replicas", "1");
    }

    @Test
    void aUserMakesACheckpointRootOnlyOfADirectoryHoldingNothingOfOthers() {
        InodeAttrs d = shared();
        InodeAttrs mine = join(users.mkdirAsync(ALICE, d.id(), "ckpt", 0777, req()));
        join(users.mkdirAsync(BOB, mine.id(), "bobs-run", 0755, req()));
        StrataException e = refused(() -> join(users.policySetAsync(ALICE, mine.id(), List.of("profile=checkpoint"), req())));
        assertThat(e.status()).isEqualTo(Status.NOT_PERMITTED);
        assertThat(e.getMessage()).contains("bobs-run", "uid 1600");
        join(users.rmdirAsync(BOB, mine.id(), "bobs-run", req()));
        join(users.mkdirAsync(ALICE, mine.id(), "step-1", 0755, req()));
        assertThat(join(users.policySetAsync(ALICE, mine.id(), List.of("profile=checkpoint"), req())).overrides())
                .containsEntry("profile", "checkpoint");
    }
}
