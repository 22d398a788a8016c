package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.NodeContext;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.rpc.CoreMessage;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.TlsContext;
import io.strata.core.tls.TlsEngine;
import io.strata.core.util.Futures;
import io.strata.hooks.HooksHttp;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.MgmtdMessages;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.routing.NodeInfo;
import java.io.IOException;
import java.io.Reader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code strata up} cluster speaks mutual TLS and is authenticated by default: every RPC port
 * its daemons listen on (read from the cluster's layout file) hangs up on a plaintext peer
 * (even one holding the admin token) and refuses a certificate of another CA; over TLS with the
 * cluster's certificate it still refuses a peer that sends anything before a token, a token of
 * another cluster, and roles it does not take; the hooks API is HTTPS only (plaintext HTTP gets
 * no answer, a client that does not trust the cluster CA fails the handshake) and wants a bearer
 * token; the CLI's own commands keep working with the certificate and tokens of the data
 * directory.
 */
class UpAuthIT {
    private static final Duration T = Duration.ofSeconds(30);

    /** The RPC ports of the layout, by daemon name (the Ratis port is not Strata RPC: it is checked on its own). */
    private static Map<String, Integer> rpcPorts(Path data) throws IOException {
        Properties p = layout(data);
        Map<String, Integer> ports = new java.util.LinkedHashMap<>();
        for (String k : p.stringPropertyNames()) {
            if (k.endsWith(".rpc")) {
                ports.put(k.substring(0, k.length() - 4), Integer.parseInt(p.getProperty(k)));
            }
        }
        return ports;
    }

    /** An HTTP/2 client's first bytes: the connection preface and an empty SETTINGS frame. */
    private static final byte[] HTTP2_PREFACE_AND_SETTINGS = java.nio.ByteBuffer.allocate(24 + 9)
            .put("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII))
            .put(new byte[] {0, 0, 0, 0x04, 0, 0, 0, 0, 0}).array();

    private static Properties layout(Path data) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(data.resolve(UpLayout.FILE))) {
            p.load(r);
        }
        return p;
    }

    /** A Ping written by hand, as a peer that knows the wire format but holds no token would. */
    private static byte[] ping(long id) {
        return ByteBuffer.allocate(28 + 8).putShort((short) 0x5354).put((byte) 1).put((byte) 0).putShort((short) 1)
                .putShort((short) 0).putLong(id).putInt(0).putInt(8).putInt(0).putLong(42).array();
    }

    private static StrataException refused(RpcClient c, InetSocketAddress to, Message m) {
        try {
            Futures.join(c.call(to, m), T).close();
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError(m + " to " + to + " was accepted");
    }

    private static Credentials token(ClusterKey key, Role role, String subject) {
        return Credentials.of(Token.issue(key, role, subject, Instant.now(), Duration.ofHours(1)));
    }

    /** The cluster's client certificate, as the native commands present it. */
    private static TlsContext clusterTls;

    private static NodeContext ctx(String name, Credentials c) {
        return NodeContext.builder(name).eventLoopThreads(1).blockingThreads(1).credentials(c).tls(clusterTls).build();
    }

    private static <C extends AutoCloseable> C keep(List<AutoCloseable> open, C c) {
        open.add(c);
        return c;
    }

    /** {@code t} and its causes. */
    private static List<Throwable> causes(Throwable t) {
        List<Throwable> out = new ArrayList<>();
        for (Throwable c = t; c != null; c = c.getCause()) {
            out.add(c);
        }
        return out;
    }

    /** What the peer sends until it closes (a TLS alert at most); a reset counts as closed. */
    private static byte[] readToEnd(java.io.InputStream in) throws IOException {
        try {
            return in.readAllBytes();
        } catch (java.net.SocketException reset) {
            return new byte[0];
        }
    }

    @Test
    void everyPortOfAnUpClusterRefusesStrangersAndTheCliStillWorks(@TempDir Path data) throws Exception {
        CliTest.Run up = CliTest.strata("up", "--data", data.toString(), "--no-mount");
        assertThat(up.code()).as(up.err()).isZero();
        String d = "--data=" + data;
        List<AutoCloseable> open = new ArrayList<>();
        try {
            Path keyFile = data.resolve(UpAuth.KEY_FILE);
            for (Path f : List.of(keyFile, data.resolve(UpAuth.ADMIN_TOKEN), data.resolve(UpAuth.CLIENT_TOKEN),
                    data.resolve("storage-1/storage-1.token"), data.resolve("tls/ca.key"), data.resolve("tls/ca.pem"),
                    data.resolve("tls/storage-1.key"), data.resolve("tls/mgmtd.key"), data.resolve("tls/client.key"))) {
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(f))).as(f.toString()).isEqualTo("rw-------");
            }
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(data.resolve("tls")))).isEqualTo("rwx------");
            assertThat(Files.readString(data.resolve("storage-1/storage-1.toml"))).contains("[auth]", "key-file", "token-file", "[tls]", "ca-file");
            assertThat(Files.readString(data.resolve(ClientSource.CLIENT_TOML))).contains("[tls]", "client.pem");
            clusterTls = TlsContext.load(data.resolve("tls/client.pem"), data.resolve("tls/client.key"), data.resolve("tls/ca.pem"),
                    TlsEngine.resolve("auto"));
            NodeContext anonymousCtx = keep(open, NodeContext.builder("anonymous").eventLoopThreads(1).blockingThreads(1).tls(clusterTls).build());
            RpcClient anonymous = keep(open, new RpcClient(anonymousCtx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS));
            ClusterKey key = ClusterKey.read(keyFile);
            Map<String, Integer> ports = rpcPorts(data);
            assertThat(ports.keySet()).contains("mgmtd", "meta", "storage-1", "storage-2", "storage-3", "l2-1", "l2-2");

            NodeContext foreignCtx = ctx("foreign", token(ClusterKey.generate(), Role.ADMIN, "admin"));
            open.add(foreignCtx);
            RpcClient foreign = new RpcClient(foreignCtx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS);
            open.add(foreign);
            NodeContext schedulerCtx = ctx("scheduler", token(key, Role.SCHEDULER, "slurm"));
            open.add(schedulerCtx);
            RpcClient scheduler = new RpcClient(schedulerCtx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS);
            open.add(scheduler);
            NodeContext plainCtx = keep(open, NodeContext.builder("plaintext").eventLoopThreads(1).blockingThreads(1)
                    .credentials(Credentials.read(data.resolve(UpAuth.ADMIN_TOKEN))).build());
            RpcClient plain = keep(open, new RpcClient(plainCtx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS));
            CertificateAuthority otherCa = CertificateAuthority.generate("other", Instant.now(), Duration.ofDays(1));
            CertificateAuthority.Issued stray = otherCa.issue("stray", List.of("localhost", "127.0.0.1"), Instant.now(), Duration.ofDays(1));
            NodeContext strayCtx = keep(open, NodeContext.builder("stray").eventLoopThreads(1).blockingThreads(1)
                    .credentials(Credentials.read(data.resolve(UpAuth.ADMIN_TOKEN)))
                    .tls(TlsContext.of(List.of(stray.certificate()), stray.key(), List.of(CertificateAuthority.read(
                            data.resolve("tls/ca.pem"), data.resolve("tls/ca.key")).certificate(), otherCa.certificate()), TlsEngine.resolve("auto")))
                    .build());
            RpcClient strayClient = keep(open, new RpcClient(strayCtx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS));
            for (Map.Entry<String, Integer> e : ports.entrySet()) {
                InetSocketAddress a = new InetSocketAddress("127.0.0.1", e.getValue());
                // plaintext, even with the admin token: the port speaks TLS only and hangs up at once
                long t0 = System.nanoTime();
                try (Socket s = new Socket(a.getAddress(), a.getPort())) {
                    s.setSoTimeout((int) T.toMillis());
                    s.getOutputStream().write(ping(1));
                    byte[] back = readToEnd(s.getInputStream());
                    assertThat(back.length >= 2 && back[0] == 0x53 && back[1] == 0x54).as("%s answered a plaintext frame", e.getKey()).isFalse();
                }
                assertThat(Duration.ofNanos(System.nanoTime() - t0)).as(e.getKey()).isLessThan(Duration.ofSeconds(5));
                StrataException clear = refused(plain, a, new CoreMessage.Ping(2));
                assertThat(clear.status()).as(e.getKey()).isIn(Status.CONNECTION_LOST, Status.CONNECTION_FAILED);
                // TLS with a certificate of another CA (and the admin token): refused in the handshake
                StrataException strayCert = refused(strayClient, a, new CoreMessage.Ping(2));
                assertThat(strayCert.status()).as(e.getKey()).isIn(Status.CONNECTION_LOST, Status.CONNECTION_FAILED);
                assertThat(strayCert.getMessage()).as(e.getKey()).containsIgnoringCase("TLS");
                // TLS with the cluster's certificate but no token, or another cluster's token: authentication still holds
                StrataException bare = refused(anonymous, a, new CoreMessage.Ping(2));
                assertThat(bare.status()).as(e.getKey()).isEqualTo(Status.UNAUTHENTICATED);
                StrataException other = refused(foreign, a, new CoreMessage.Ping(2));
                assertThat(other.status()).as(e.getKey()).isEqualTo(Status.UNAUTHENTICATED);
                assertThat(other.getMessage()).as(e.getKey()).contains("signature does not match");
                if (e.getKey().startsWith("storage-")) {
                    StrataException role = refused(scheduler, a, new CoreMessage.Ping(3));
                    assertThat(role.status()).as(e.getKey()).isEqualTo(Status.PERMISSION_DENIED);
                    assertThat(role.getMessage()).contains("role scheduler (subject slurm) may not connect to " + e.getKey());
                }
            }

            // the managers' Ratis port (gRPC over HTTP/2) speaks TLS only too: a plaintext HTTP/2 client
            // gets no HTTP/2 answer (a plaintext gRPC server answers the preface with a SETTINGS frame)
            int raft = Integer.parseInt(layout(data).getProperty("mgmtd.raft"));
            try (Socket s = new Socket("127.0.0.1", raft)) {
                s.setSoTimeout(5000);
                s.getOutputStream().write(HTTP2_PREFACE_AND_SETTINGS);
                byte[] back;
                try {
                    back = readToEnd(s.getInputStream());
                } catch (java.net.SocketTimeoutException silent) {
                    back = new byte[0];
                }
                assertThat(back.length >= 9 && back[3] == 0x04).as("the Ratis port answered plaintext HTTP/2").isFalse();
            }

            // the cluster manager: admin-only tables, and a node speaks for itself only
            InetSocketAddress mgmtd = new InetSocketAddress("127.0.0.1", ports.get("mgmtd"));
            NodeContext clientCtx = ctx("client", token(key, Role.CLIENT, "alice"));
            open.add(clientCtx);
            RpcClient client = new RpcClient(clientCtx, MgmtdMessages.PROTOCOL, RpcOptions.DEFAULTS);
            open.add(client);
            StrataException table = refused(client, mgmtd, new MgmtdMessage.CreateChainTable(9, 1));
            assertThat(table.status()).isEqualTo(Status.PERMISSION_DENIED);
            NodeContext impostorCtx = ctx("impostor", token(key, Role.STORAGE, "node-9"));
            open.add(impostorCtx);
            RpcClient impostor = new RpcClient(impostorCtx, MgmtdMessages.PROTOCOL, RpcOptions.DEFAULTS);
            open.add(impostor);
            StrataException hijack = refused(impostor, mgmtd, new MgmtdMessage.RegisterNode(
                    new NodeInfo(NodeId.of(1), "127.0.0.1", 1, Map.of()), NodeRole.STORAGE, 99, List.of(TargetId.of(101))));
            assertThat(hijack.status()).isEqualTo(Status.PERMISSION_DENIED);
            assertThat(hijack.getMessage()).contains("storage node-9 may not register node-1");

            // the hooks API is HTTPS with a certificate of the cluster CA: plaintext HTTP gets no answer, and a client that
            // does not trust the CA (the JDK's default, the system CAs) fails the handshake
            int hooksPort = UpLayout.find(data).orElseThrow().hooksHttp();
            long h0 = System.nanoTime();
            try (Socket s = new Socket("127.0.0.1", hooksPort)) {
                s.setSoTimeout((int) T.toMillis());
                s.getOutputStream().write("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                assertThat(new String(readToEnd(s.getInputStream()), StandardCharsets.ISO_8859_1)).as("the hooks port answered plaintext HTTP")
                        .doesNotContain("HTTP/");
            }
            assertThat(Duration.ofNanos(System.nanoTime() - h0)).as("hooks").isLessThan(Duration.ofSeconds(5));
            HttpRequest health = HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + hooksPort + "/v1/health")).build();
            assertThatThrownBy(() -> HttpClient.newHttpClient().send(health, HttpResponse.BodyHandlers.ofString()))
                    .as("a client without the cluster CA").satisfies(e -> assertThat(causes(e)).hasAtLeastOneElementOfType(SSLHandshakeException.class));
            // strata prefetch told the port without the CA speaks http:// to it, and says what to give
            CliTest.Run noCa = CliTest.strata("prefetch", "list", "--hooks", "127.0.0.1:" + hooksPort, d);
            assertThat(noCa.code()).isNotZero();
            assertThat(noCa.err()).contains("no HTTP answer", "--ca-file");
            // over HTTPS with the CA: 401 without a bearer token, 403 for a client's, served for an admin's
            String hooks = "https://127.0.0.1:" + hooksPort + "/v1/hints";
            HttpClient http = HooksHttp.client(Optional.of(data.resolve("tls/ca.pem")), T);
            HttpResponse<String> bare = http.send(HttpRequest.newBuilder(URI.create(hooks)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(bare.statusCode()).isEqualTo(401);
            assertThat(bare.body()).contains("UNAUTHENTICATED", "Authorization: Bearer");
            HttpResponse<String> wrongRole = http.send(HttpRequest.newBuilder(URI.create(hooks))
                    .header("Authorization", "Bearer " + token(key, Role.CLIENT, "alice").token()).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(wrongRole.statusCode()).isEqualTo(403);
            assertThat(wrongRole.body()).contains("PERMISSION_DENIED");
            HttpResponse<String> admin = http.send(HttpRequest.newBuilder(URI.create(hooks))
                    .header("Authorization", "Bearer " + Credentials.read(data.resolve(UpAuth.ADMIN_TOKEN)).token()).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(admin.statusCode()).as(admin.body()).isEqualTo(200);

            // the CLI presents the data directory's tokens; a token it issues works
            CliTest.Run ping = CliTest.strata("ping", "-c", "1", "--config", data.resolve(ClientSource.CLIENT_TOML).toString(),
                    "127.0.0.1:" + ports.get("meta"));
            assertThat(ping.code()).as(ping.err()).isZero();
            CliTest.Run nodes = CliTest.strata("admin", "nodes", d);
            assertThat(nodes.code()).as(nodes.err()).isZero();
            assertThat(CliTest.strata("mkdir", "-p", "/a", d).code()).isZero();
            CliTest.Run prefetch = CliTest.strata("prefetch", "list", d);
            assertThat(prefetch.code()).as("strata prefetch on the local cluster: HTTPS with its CA: " + prefetch.err()).isZero();
            CliTest.Run issued = CliTest.strata("admin", "token", "create", "--role", "client", "--ttl", "1h", "--subject", "bob", d);
            assertThat(issued.code()).as(issued.err()).isZero();
            assertThat(Token.peek(issued.out().strip()).subject()).isEqualTo("bob");
            NodeContext bobCtx = ctx("bob", Credentials.of(issued.out().strip()));
            open.add(bobCtx);
            RpcClient bob = new RpcClient(bobCtx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS);
            open.add(bob);
            Futures.join(bob.call(new InetSocketAddress("127.0.0.1", ports.get("meta")), new CoreMessage.Ping(4)), T).close();
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                open.get(i).close();
            }
            assertThat(CliTest.strata("down", "--data", data.toString()).code()).isZero();
        }
    }
}
