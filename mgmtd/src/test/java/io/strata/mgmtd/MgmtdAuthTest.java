package io.strata.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.rpc.Message;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.MgmtdMessage.GetStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.Revocation;
import io.strata.protocol.mgmtd.MgmtdMessage.RevokeToken;
import io.strata.protocol.mgmtd.MgmtdMessage.ChainTableCreated;
import io.strata.protocol.mgmtd.MgmtdMessage.CreateChainTable;
import io.strata.protocol.mgmtd.MgmtdMessage.Heartbeat;
import io.strata.protocol.mgmtd.MgmtdMessage.LeaseGranted;
import io.strata.protocol.mgmtd.MgmtdMessage.RegisterNode;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.routing.NodeInfo;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A manager that verifies tokens: a node registers and beats for itself only (its token's
 * subject), only node roles register, and chain tables are an admin's to create.
 */
class MgmtdAuthTest {
    private static final Duration T = Duration.ofSeconds(10);
    private final ClusterKey key = ClusterKey.generate();
    private final List<AutoCloseable> open = new ArrayList<>();
    @TempDir
    Path dir;
    MgmtdServer server;

    @BeforeEach
    void start() throws Exception {
        NodeContext ctx = keep(NodeContext.builder("mgmtd").verifier(new TokenVerifier(key)).eventLoopThreads(1).build());
        server = keep(MgmtdServer.start(ctx, MgmtdConfig.single(dir.resolve("m1"), Managers.loopback(0), Managers.loopback(0),
                Duration.ofSeconds(10))));
        Eventually.await("leader", Duration.ofSeconds(20), server::isLeader);
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <C extends AutoCloseable> C keep(C c) {
        open.add(c);
        return c;
    }

    private MgmtdClient as(Role role, String subject) {
        Credentials c = Credentials.of(Token.issue(key, role, subject, Instant.now(), Duration.ofHours(1)));
        NodeContext ctx = keep(NodeContext.builder(role.id()).credentials(c).eventLoopThreads(1).build());
        return keep(new MgmtdClient(ctx, List.of(server.rpcAddress())));
    }

    private static <R extends Message> R call(MgmtdClient c, MgmtdMessage m, Class<R> type) {
        return Futures.join(c.call(m, type, T, T), T);
    }

    private static StrataException refused(MgmtdClient c, MgmtdMessage m) {
        try {
            call(c, m, Message.class);
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError(m + " was accepted");
    }

    private static RegisterNode register(int node) {
        return new RegisterNode(new NodeInfo(NodeId.of(node), "127.0.0.1", 9100 + node, Map.of()), NodeRole.STORAGE, 1,
                List.of(TargetId.of(node * 100L + 1)));
    }

    @Test
    void aNodeRegistersAndBeatsForItselfOnly() {
        MgmtdClient node1 = as(Role.STORAGE, "node-1");
        assertThat(call(node1, register(1), LeaseGranted.class).leaseMillis()).isPositive();
        assertThat(call(node1, new Heartbeat(NodeId.of(1), 1, List.of()), LeaseGranted.class).leaseMillis()).isPositive();

        StrataException e = refused(node1, register(2));
        assertThat(e.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(e.getMessage()).contains("storage node-1 may not register node-2");
        assertThat(refused(node1, new Heartbeat(NodeId.of(2), 1, List.of())).status()).isEqualTo(Status.PERMISSION_DENIED);
        // node 1's id taken over by another identity
        StrataException hijack = refused(as(Role.STORAGE, "node-7"), register(1));
        assertThat(hijack.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(hijack.getMessage()).contains("storage node-7 may not register node-1");
        assertThat(server.view().nodes()).containsOnlyKeys(NodeId.of(1));
        assertThat(server.view().nodes().get(NodeId.of(1)).incarnation()).isEqualTo(1);
    }

    @Test
    void onlyNodeRolesRegister() {
        StrataException e = refused(as(Role.CLIENT, "node-1"), register(1));
        assertThat(e.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(e.getMessage()).contains("role client (subject node-1) may not send RegisterNode", "allowed: storage, l2, meta");
        assertThat(server.view().nodes()).isEmpty();
    }

    @Test
    void chainTablesAreAnAdminsToCreate() {
        StrataException e = refused(as(Role.STORAGE, "node-1"), new CreateChainTable(1, 1));
        assertThat(e.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(e.getMessage()).contains("may not send CreateChainTable", "allowed: admin");
        call(as(Role.STORAGE, "node-1"), register(1), LeaseGranted.class);
        assertThat(call(as(Role.ADMIN, "operator"), new CreateChainTable(1, 1), ChainTableCreated.class).tableId()).isEqualTo(1);
    }

    @Test
    void tokensAreAnAdminsToRevokeAndTheManagerItselfRefusesThemThen() throws Exception {
        String mallory = Token.issue(key, Role.CLIENT, "mallory", Instant.now(), Duration.ofHours(1));
        Token claims = Token.peek(mallory);
        NodeContext ctx = keep(NodeContext.builder("mallory").credentials(Credentials.of(mallory)).eventLoopThreads(1).build());
        MgmtdClient m = keep(new MgmtdClient(ctx, List.of(server.rpcAddress())));
        assertThat(Futures.join(m.revokedAsync(T, T), T)).isEmpty();
        StrataException e = refused(m, new RevokeToken(claims.id(), claims.expiresAt().getEpochSecond()));
        assertThat(e.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(e.getMessage()).contains("may not send RevokeToken", "allowed: admin");
        MgmtdClient admin = as(Role.ADMIN, "operator");
        StrataException stale = refused(admin, new RevokeToken(claims.id(), 1));
        assertThat(stale.status()).isEqualTo(Status.INVALID_ARGUMENT);
        assertThat(Futures.join(admin.revokeAsync(claims.id(), claims.expiresAt().getEpochSecond()), T)).isEqualTo(1);
        assertThat(Futures.join(admin.revokedAsync(T, T), T)).extracting(Revocation::tokenId).containsExactly(claims.id());
        // mallory's open connection to the manager is refused at its next request
        Eventually.await("revoked at the manager", Duration.ofSeconds(10), () -> {
            try {
                Futures.join(m.call(new GetStatus(), Message.class, T, T), T);
                return false;
            } catch (StrataException x) {
                return x.status() == Status.UNAUTHENTICATED && x.getMessage().contains("revoked");
            }
        });
    }
}
