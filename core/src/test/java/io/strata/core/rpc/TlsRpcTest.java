package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.OpenSsl;
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
import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.TlsContext;
import io.strata.core.tls.TlsEngine;
import io.strata.core.util.Futures;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Mutual TLS on real loopback sockets, with each engine: calls go through (with tokens, with
 * memory and file payloads); a plaintext peer, a client whose certificate another CA signed, an
 * expired client certificate, a client that does not trust the server's CA, and a server
 * certificate that does not name the host dialled are all refused promptly, without the
 * server's handler running.
 */
class TlsRpcTest {
    private static final Duration T = Duration.ofSeconds(10);
    /** A refusal must come well before the handshake timeout (10 s) or the call's. */
    private static final Duration PROMPT = Duration.ofSeconds(5);
    private static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, TestMessages.SERVER_TYPES);

    private final CertificateAuthority ca = CertificateAuthority.generate("test-ca", Instant.now(), Duration.ofDays(1));
    private final List<AutoCloseable> open = new CopyOnWriteArrayList<>();
    private final List<Long> served = new CopyOnWriteArrayList<>();

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

    private static TlsContext tls(CertificateAuthority issuer, CertificateAuthority trusted, List<String> hosts,
                                  Instant notBefore, Instant notAfter, TlsEngine engine) throws Exception {
        CertificateAuthority.Issued c = issuer.issue("node", hosts, notBefore, notAfter);
        return TlsContext.of(List.of(c.certificate()), c.key(), List.of(trusted.certificate()), engine);
    }

    private TlsContext node(TlsEngine engine) throws Exception {
        return tls(ca, ca, List.of("localhost", "127.0.0.1"), Instant.now().minusSeconds(60), Instant.now().plus(Duration.ofDays(1)), engine);
    }

    /** The context of the last {@link #server}. */
    private NodeContext serverCtx;

    private RpcServer server(NodeContext.Builder ctx) {
        NodeContext c = keep(ctx.eventLoopThreads(1).build());
        serverCtx = c;
        RpcServer.Builder b = RpcServer.builder(c, PROTOCOL)
                .handle(CoreMessages.PING, req -> {
                    served.add(req.message().nonce());
                    return CompletableFuture.completedFuture(Reply.of(new Pong(req.message().nonce(), "server", "test")));
                });
        return keep(b.bind("127.0.0.1", 0));
    }

    private RpcClient client(TlsContext tls) {
        return keep(new RpcClient(keep(NodeContext.builder("caller").eventLoopThreads(1).tls(tls).build()), PROTOCOL, RpcOptions.DEFAULTS));
    }

    private static StrataException refused(CompletableFuture<?> call) {
        try {
            Futures.join(call, PROMPT);
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError("the call was accepted");
    }

    private static double tlsFailures(NodeContext ctx) {
        var c = ctx.meters().find("strata.rpc.tls.failures").tag("side", "server").counter();
        return c == null ? 0 : c.count();
    }

    static void assumeEngine(TlsEngine engine) {
        if (engine == TlsEngine.OPENSSL) {
            assumeThat(OpenSsl.isAvailable()).as("BoringSSL (netty-tcnative) loads here: " + OpenSsl.unavailabilityCause()).isTrue();
        }
    }

    @ParameterizedTest
    @EnumSource(TlsEngine.class)
    void callsGoThroughWithTokensAndPayloads(TlsEngine engine, @TempDir Path dir) throws Exception {
        assumeEngine(engine);
        ClusterKey key = ClusterKey.generate();
        Path file = dir.resolve("chunk");
        byte[] content = new byte[300_000];
        new Random(5).nextBytes(content);
        Files.write(file, content);
        NodeContext storageCtx = keep(NodeContext.builder("storage-1").eventLoopThreads(1).tls(node(engine)).verifier(new TokenVerifier(key)).build());
        RpcServer.Builder b = RpcServer.builder(storageCtx, PROTOCOL)
                .handle(TestMessages.PARK, req -> {
                    try {
                        FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                        return CompletableFuture.completedFuture(Reply.of(new CoreMessage.Echoed(100_000, 0), Payload.ofFile(ch, 100_000, 100_000)));
                    } catch (IOException e) {
                        return CompletableFuture.failedFuture(e);
                    }
                });
        EchoService.register(storageCtx, b, 4 << 20);
        RpcServer server = keep(b.bind("127.0.0.1", 0));
        NodeContext clientCtx = keep(NodeContext.builder("client").eventLoopThreads(1).tls(node(engine))
                .credentials(Credentials.of(Token.issue(key, Role.CLIENT, "alice", Instant.now(), Duration.ofHours(1)))).build());
        RpcClient client = keep(new RpcClient(clientCtx, PROTOCOL, RpcOptions.DEFAULTS));

        byte[] mib = new byte[1 << 20];
        new Random(7).nextBytes(mib);
        ByteBuf data = ByteBufAllocator.DEFAULT.buffer(mib.length).writeBytes(mib);
        try (Response r = Futures.join(client.call(server.address(), new CoreMessage.Echo(CoreMessage.Echo.FLAG_RETURN | CoreMessage.Echo.FLAG_CHECKSUM),
                Payload.of(data), T), T)) {
            byte[] got = new byte[r.payload().readableBytes()];
            r.payload().readBytes(got);
            assertThat(got).isEqualTo(mib);
        }
        try (Response r = Futures.join(client.call(server.address(), new TestMessages.Park(0)), T)) {
            byte[] got = new byte[r.payload().readableBytes()];
            r.payload().readBytes(got);
            assertThat(got).isEqualTo(Arrays.copyOfRange(content, 100_000, 200_000));
        }
        assertThat(tlsFailures(storageCtx)).isZero();
    }

    @ParameterizedTest
    @EnumSource(TlsEngine.class)
    void aPlaintextPeerIsDisconnectedAtOnce(TlsEngine engine) throws Exception {
        assumeEngine(engine);
        RpcServer server = server(NodeContext.builder("server").tls(node(engine)));

        // a Strata client without TLS: its Ping is not a TLS record
        RpcClient plain = keep(new RpcClient(keep(NodeContext.builder("plain").eventLoopThreads(1).build()), PROTOCOL, RpcOptions.DEFAULTS));
        StrataException e = refused(plain.call(server.address(), new Ping(1)));
        assertThat(e.status()).isIn(Status.CONNECTION_LOST, Status.CONNECTION_FAILED);

        // a raw socket writing a hand-made frame: the server closes without answering a Strata frame
        try (Socket s = new Socket("127.0.0.1", server.address().getPort())) {
            s.setSoTimeout((int) PROMPT.toMillis());
            s.getOutputStream().write(new byte[] {0x53, 0x54, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0});
            byte[] back = readToEnd(s.getInputStream());
            assertThat(back.length >= 2 && back[0] == 0x53 && back[1] == 0x54).as("a Strata frame came back").isFalse();
        }
        assertThat(served).isEmpty();
        assertThat(tlsFailures(serverCtx)).isGreaterThanOrEqualTo(2);
        long deadline = System.nanoTime() + PROMPT.toNanos();
        while (server.connectionCount() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(server.connectionCount()).as("connections left open").isZero();
    }

    /** What the peer sends until it closes (a TLS alert at most); a reset counts as closed. */
    private static byte[] readToEnd(InputStream in) throws IOException {
        try {
            return in.readAllBytes();
        } catch (SocketException reset) {
            return new byte[0];
        }
    }

    @ParameterizedTest
    @EnumSource(TlsEngine.class)
    void aClientCertificateOfAnotherCaIsRefused(TlsEngine engine) throws Exception {
        assumeEngine(engine);
        RpcServer server = server(NodeContext.builder("server").tls(node(engine)));
        CertificateAuthority other = CertificateAuthority.generate("other-ca", Instant.now(), Duration.ofDays(1));
        // signed by another CA, though it trusts this cluster's: the server refuses it
        RpcClient stranger = client(tls(other, ca, List.of("localhost"), Instant.now().minusSeconds(60), Instant.now().plusSeconds(3600), engine));
        StrataException e = refused(stranger.call(server.address(), new Ping(1)));
        assertThat(e.status()).isIn(Status.CONNECTION_FAILED, Status.CONNECTION_LOST);
        assertThat(e.getMessage()).containsIgnoringCase("TLS");
        // and one that trusts only its own CA refuses the server
        RpcClient foreign = client(tls(other, other, List.of("localhost"), Instant.now().minusSeconds(60), Instant.now().plusSeconds(3600), engine));
        StrataException f = refused(foreign.call(server.address(), new Ping(2)));
        assertThat(f.status()).isEqualTo(Status.CONNECTION_FAILED);
        assertThat(served).isEmpty();
        // the cluster's own client still gets through
        assertThat(Futures.join(client(node(engine)).call(server.address(), new Ping(3), Pong.class), T).nonce()).isEqualTo(3);
    }

    @ParameterizedTest
    @EnumSource(TlsEngine.class)
    void anExpiredClientCertificateIsRefused(TlsEngine engine) throws Exception {
        assumeEngine(engine);
        RpcServer server = server(NodeContext.builder("server").tls(node(engine)));
        Instant past = Instant.now().minus(Duration.ofDays(2));
        RpcClient expired = client(tls(ca, ca, List.of("localhost"), past, past.plus(Duration.ofDays(1)), engine));
        StrataException e = refused(expired.call(server.address(), new Ping(1)));
        assertThat(e.status()).isIn(Status.CONNECTION_FAILED, Status.CONNECTION_LOST);
        assertThat(served).isEmpty();
    }

    @Test
    void aServerCertificateThatDoesNotNameTheHostIsRefused() throws Exception {
        TlsEngine engine = TlsEngine.resolve("auto");
        RpcServer server = server(NodeContext.builder("server").tls(
                tls(ca, ca, List.of("elsewhere.example"), Instant.now().minusSeconds(60), Instant.now().plusSeconds(3600), engine)));
        StrataException e = refused(client(node(engine)).call(server.address(), new Ping(1)));
        assertThat(e.status()).isEqualTo(Status.CONNECTION_FAILED);
        assertThat(served).isEmpty();
    }

    @Test
    void aTlsClientAgainstAPlaintextServerFailsPromptly() throws Exception {
        RpcServer server = server(NodeContext.builder("plain-server"));
        StrataException e = refused(client(node(TlsEngine.resolve("auto"))).call(server.address(), new Ping(1)));
        assertThat(e.status()).isIn(Status.CONNECTION_FAILED, Status.CONNECTION_LOST);
        assertThat(served).isEmpty();
    }
}
