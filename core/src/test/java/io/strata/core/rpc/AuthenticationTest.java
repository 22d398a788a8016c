package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
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
import io.strata.core.util.Futures;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A server whose context has a verifier against callers with and without tokens: the handshake
 * comes first, refusals carry UNAUTHENTICATED or PERMISSION_DENIED with the reason and close the
 * connection, and a message restricted to some roles is refused to the others before its handler
 * runs. Real sockets on loopback.
 */
class AuthenticationTest {
    private static final Duration T = Duration.ofSeconds(10);
    private static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, TestMessages.SERVER_TYPES);
    private final ClusterKey key = ClusterKey.generate();
    private final List<AutoCloseable> open = new CopyOnWriteArrayList<>();
    private final List<Token> callers = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <C extends AutoCloseable> C keep(C c) {
        open.add(c);
        return c;
    }

    /** A server that admits storage and client connections, Echo and Ping from all, Park (a stand-in for a peer-only message) from storage only. */
    private RpcServer server(NodeContext.Builder ctx) {
        NodeContext c = keep(ctx.eventLoopThreads(1).build());
        RpcServer.Builder b = RpcServer.builder(c, PROTOCOL)
                .handle(CoreMessages.PING, req -> {
                    req.caller().ifPresent(callers::add);
                    return CompletableFuture.completedFuture(Reply.of(new Pong(req.message().nonce(), "server", "test")));
                })
                .handle(TestMessages.PARK, req -> CompletableFuture.completedFuture(Reply.of(new Pong(0, "parked", "test"))))
                .admit(Role.STORAGE, Role.CLIENT)
                .allow(TestMessages.PARK, Role.STORAGE);
        return keep(b.bind("127.0.0.1", 0));
    }

    private RpcServer authServer() {
        return server(NodeContext.builder("storage-1").verifier(new TokenVerifier(key)));
    }

    private RpcClient client(String token) {
        NodeContext.Builder b = NodeContext.builder("caller").eventLoopThreads(1);
        if (token != null) {
            b.credentials(Credentials.of(token));
        }
        return keep(new RpcClient(keep(b.build()), PROTOCOL, RpcOptions.DEFAULTS));
    }

    private String token(Role role, String subject) {
        return Token.issue(key, role, subject, Instant.now(), Duration.ofHours(1));
    }

    private static StrataException failure(CompletableFuture<?> f) {
        try {
            Futures.join(f, T);
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError("the call succeeded");
    }

    @Test
    void goodTokenIsAcceptedAndItsClaimsReachTheHandler() {
        RpcServer server = authServer();
        RpcClient c = client(token(Role.CLIENT, "alice"));
        for (int i = 0; i < 3; i++) {
            Pong p = Futures.join(c.call(server.address(), new Ping(i), Pong.class), T);
            assertThat(p.nonce()).isEqualTo(i);
        }
        assertThat(callers).hasSize(3).allSatisfy(t -> {
            assertThat(t.role()).isEqualTo(Role.CLIENT);
            assertThat(t.subject()).isEqualTo("alice");
        });
    }

    @Test
    void callWithoutTokenIsRefusedUnauthenticated() {
        RpcServer server = authServer();
        StrataException e = failure(client(null).call(server.address(), new Ping(1), Pong.class));
        assertThat(e.status()).isEqualTo(Status.UNAUTHENTICATED);
        assertThat(e.getMessage()).contains("storage-1 requires authentication", "must be Authenticate", "got Ping");
    }

    @Test
    void firstFrameOtherThanAuthenticateIsAnsweredAndTheConnectionClosed() throws IOException {
        RpcServer server = authServer();
        try (Socket s = new Socket(server.address().getAddress(), server.address().getPort())) {
            s.setSoTimeout((int) T.toMillis());
            // a Ping and, behind it, an Echo the server must not look at
            s.getOutputStream().write(PlainFrames.request(CoreMessages.PING, 7, new Ping(1)));
            s.getOutputStream().write(PlainFrames.request(CoreMessages.PING, 8, new Ping(2)));
            PlainFrames.Answer a = PlainFrames.read(s.getInputStream());
            assertThat(a.requestId()).isEqualTo(7);
            assertThat(a.status()).isEqualTo(Status.UNAUTHENTICATED);
            assertThat(a.message()).contains("must be Authenticate");
            assertThat(endOfStream(s)).as("closed after the answer, the second request unanswered").isTrue();
        }
        assertThat(callers).isEmpty();
    }

    /**
     * Whether the peer closed the connection with nothing more to read: an orderly end, or a reset
     * (the server closed with the second request still unread in its buffer, so the kernel sent
     * RST rather than FIN).
     */
    private static boolean endOfStream(Socket s) throws IOException {
        try {
            return s.getInputStream().read() == -1;
        } catch (java.net.SocketException reset) {
            return true;
        }
    }

    @Test
    void expiredTokenIsRefusedNamingTheExpiry() {
        RpcServer server = authServer();
        String expired = Token.issue(key, Role.CLIENT, "alice", Instant.now().minus(Duration.ofHours(2)), Duration.ofHours(1));
        StrataException e = failure(client(expired).call(server.address(), new Ping(1), Pong.class));
        assertThat(e.status()).isEqualTo(Status.UNAUTHENTICATED);
        assertThat(e.getMessage()).contains("storage-1 refused the connection", "expired at");
    }

    @Test
    void tokenOfAnotherClusterIsRefused() {
        RpcServer server = authServer();
        String foreign = Token.issue(ClusterKey.generate(), Role.CLIENT, "alice", Instant.now(), Duration.ofHours(1));
        StrataException e = failure(client(foreign).call(server.address(), new Ping(1), Pong.class));
        assertThat(e.status()).isEqualTo(Status.UNAUTHENTICATED);
        assertThat(e.getMessage()).contains("signature does not match");
    }

    @Test
    void roleTheServerDoesNotAdmitIsRefusedPermissionDenied() {
        RpcServer server = authServer();
        RpcClient c = client(token(Role.SCHEDULER, "slurm"));
        StrataException e = failure(c.call(server.address(), new Ping(1), Pong.class));
        assertThat(e.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(e.getMessage()).contains("role scheduler (subject slurm) may not connect to storage-1; it admits storage, client");
        // a later call on the same client opens a new connection and is refused the same way
        assertThat(failure(c.call(server.address(), new Ping(2), Pong.class)).status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(callers).isEmpty();
    }

    @Test
    void restrictedMessageIsRefusedToOtherRolesBeforeItsHandler() {
        RpcServer server = authServer();
        RpcClient client = client(token(Role.CLIENT, "alice"));
        StrataException e = failure(client.call(server.address(), new TestMessages.Park(0), Pong.class));
        assertThat(e.status()).isEqualTo(Status.PERMISSION_DENIED);
        assertThat(e.getMessage()).contains("role client (subject alice) may not send Park to storage-1; allowed: storage");
        // the connection stays usable for what the role may send
        assertThat(Futures.join(client.call(server.address(), new Ping(5), Pong.class), T).nonce()).isEqualTo(5);
        RpcClient peer = client(token(Role.STORAGE, "node-2"));
        assertThat(Futures.join(peer.call(server.address(), new TestMessages.Park(0), Pong.class), T).node()).isEqualTo("parked");
    }

    @Test
    void serverWithoutVerifierTakesCallersWithAndWithoutTokens() {
        RpcServer server = server(NodeContext.builder("open"));
        assertThat(Futures.join(client(null).call(server.address(), new TestMessages.Park(0), Pong.class), T).node()).isEqualTo("parked");
        assertThat(Futures.join(client(token(Role.CLIENT, "alice")).call(server.address(), new TestMessages.Park(0), Pong.class), T)
                .node()).isEqualTo("parked");
        assertThat(callers).isEmpty();
    }

    /** Frames written and read by hand, as a peer that does not use {@link RpcClient} would. */
    static final class PlainFrames {
        record Answer(long requestId, Status status, String message) {
        }

        static <M extends Message> byte[] request(MessageType<M> type, long id, M message) {
            ByteBuf b = FrameCodecTest.encode(OutboundFrame.request(id, 0, type, message, Payload.NONE));
            try {
                byte[] a = new byte[b.readableBytes()];
                b.readBytes(a);
                return a;
            } finally {
                b.release();
            }
        }

        static Answer read(InputStream in) throws IOException {
            DataInputStream d = new DataInputStream(in);
            byte[] header = new byte[Frame.HEADER_BYTES];
            d.readFully(header);
            java.nio.ByteBuffer h = java.nio.ByteBuffer.wrap(header);
            int status = h.getShort(6) & 0xFFFF;
            long id = h.getLong(8);
            byte[] body = new byte[h.getInt(20)];
            d.readFully(body);
            d.skipNBytes(h.getInt(24));
            if (status == 0) {
                return new Answer(id, Status.OK, "");
            }
            int len = java.nio.ByteBuffer.wrap(body).getInt();
            if (len > body.length - 4) {
                throw new EOFException("bad error body");
            }
            return new Answer(id, Status.fromCode(status), new String(body, 4, len, StandardCharsets.UTF_8));
        }
    }
}
