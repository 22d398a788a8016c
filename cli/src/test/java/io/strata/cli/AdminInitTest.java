package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.rpc.CoreMessage.Ping;
import io.strata.core.rpc.CoreMessage.Pong;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.Pem;
import io.strata.core.tls.TlsContext;
import io.strata.core.tls.TlsEngine;
import io.strata.core.util.Futures;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata admin init} and {@code strata admin cert create}: the roots of trust of a cluster
 * of one's own. What they write is used as a real cluster would: a token of the key and
 * certificates of the CA get a call through a mutual-TLS, authenticating RPC server on loopback,
 * and a certificate of another CA does not.
 */
class AdminInitTest {
    private static final Duration T = Duration.ofSeconds(10);
    private static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES);

    @TempDir
    Path dir;

    private static String mode(Path p) throws Exception {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }

    @Test
    void initMakesAKeyAndACaOnceAndTheirTokensAndCertificatesGetThrough() throws Exception {
        Path roots = dir.resolve("etc");
        CliTest.Run init = CliTest.strata("admin", "init", "--dir", roots.toString(), "--name", "lab");
        assertThat(init.code()).as(init.err()).isZero();
        assertThat(init.out()).contains("cluster key:", "CA key:", "strata admin cert create --ca " + roots.resolve("tls"));
        assertThat(mode(roots)).isEqualTo("rwx------");
        assertThat(mode(roots.resolve("cluster.key"))).isEqualTo("rw-------");
        assertThat(mode(roots.resolve("tls/ca.key"))).isEqualTo("rw-------");
        byte[] key = Files.readAllBytes(roots.resolve("cluster.key"));

        CliTest.Run again = CliTest.strata("admin", "init", "--dir", roots.toString());
        assertThat(again.code()).isNotZero();
        assertThat(again.err()).contains("cluster.key exists already", "would lock out every token");
        assertThat(Files.readAllBytes(roots.resolve("cluster.key"))).as("the key is never replaced").isEqualTo(key);

        Path out = dir.resolve("hosts");
        CliTest.Run server = CliTest.strata("admin", "cert", "create", "--ca", roots.resolve("tls").toString(), "--name", "storage-1",
                "--host", "127.0.0.1", "--host", "st1.example.org", "--out", out.toString());
        assertThat(server.code()).as(server.err()).isZero();
        assertThat(server.out()).contains("[tls]", "cert-file = \"" + out.resolve("storage-1.pem"), "for 127.0.0.1, st1.example.org");
        assertThat(mode(out.resolve("storage-1.key"))).isEqualTo("rw-------");
        X509Certificate cert = Pem.readCertificates(out.resolve("storage-1.pem")).get(0);
        assertThat(cert.getSubjectAlternativeNames().stream().map(n -> String.valueOf(n.get(1))).toList()).containsExactly("127.0.0.1", "st1.example.org");
        CliTest.Run mount = CliTest.strata("admin", "cert", "create", "--ca", roots.resolve("tls").toString(), "--name", "mount",
                "--host", "gpu7", "--ttl", "1d", "--out", out.toString());
        assertThat(mount.code()).as(mount.err()).isZero();
        String token = CliTest.strata("admin", "token", "create", "--key", roots.resolve("cluster.key").toString(), "--role", "client",
                "--ttl", "1h", "--subject", "gpu7").out().strip();

        Path ca = roots.resolve("tls/ca.pem");
        TlsContext serverTls = TlsContext.load(out.resolve("storage-1.pem"), out.resolve("storage-1.key"), ca, TlsEngine.resolve("auto"));
        TlsContext mountTls = TlsContext.load(out.resolve("mount.pem"), out.resolve("mount.key"), ca, TlsEngine.resolve("auto"));
        CertificateAuthority other = CertificateAuthority.generate("another cluster", Instant.now(), Duration.ofDays(1));
        CertificateAuthority.Issued stranger = other.issue("mount", List.of("localhost"), Instant.now(), Duration.ofDays(1));
        TlsContext strangerTls = TlsContext.of(List.of(stranger.certificate()), stranger.key(),
                List.of(Pem.readCertificates(ca).get(0)), TlsEngine.resolve("auto"));
        try (NodeContext sctx = NodeContext.builder("storage-1").eventLoopThreads(1).tls(serverTls)
                     .verifier(new TokenVerifier(ClusterKey.read(roots.resolve("cluster.key")))).build();
             RpcServer rpc = EchoService.register(sctx, RpcServer.builder(sctx, PROTOCOL), 1 << 20).bind("127.0.0.1", 0);
             NodeContext mctx = NodeContext.builder("mount").eventLoopThreads(1).tls(mountTls).credentials(Credentials.of(token)).build();
             RpcClient client = new RpcClient(mctx, PROTOCOL, RpcOptions.DEFAULTS);
             NodeContext xctx = NodeContext.builder("stranger").eventLoopThreads(1).tls(strangerTls).credentials(Credentials.of(token)).build();
             RpcClient foreign = new RpcClient(xctx, PROTOCOL, RpcOptions.DEFAULTS)) {
            assertThat(Futures.join(client.call(rpc.address(), new Ping(7), Pong.class), T).nonce()).isEqualTo(7);
            StrataException refused = org.junit.jupiter.api.Assertions.assertThrows(StrataException.class,
                    () -> Futures.join(foreign.call(rpc.address(), new Ping(8), Pong.class), T));
            assertThat(refused.status()).as("a certificate of another CA").isIn(Status.CONNECTION_FAILED, Status.CONNECTION_LOST);
            assertThat(refused.getMessage()).containsIgnoringCase("TLS");
        }
    }

    @Test
    void badInputIsRefusedWithAClearMessage() throws Exception {
        Path roots = dir.resolve("etc");
        assertThat(CliTest.strata("admin", "init", "--dir", roots.toString()).code()).isZero();
        String ca = roots.resolve("tls").toString();
        String out = dir.resolve("o").toString();
        CliTest.Run name = CliTest.strata("admin", "cert", "create", "--ca", ca, "--name", "../x", "--host", "h", "--out", out);
        assertThat(name.code()).isNotZero();
        assertThat(name.err()).contains("--name must be letters, digits");
        CliTest.Run host = CliTest.strata("admin", "cert", "create", "--ca", ca, "--name", "x", "--host", "a b", "--out", out);
        assertThat(host.err()).contains("--host must be a DNS name or an IP address");
        CliTest.Run noCa = CliTest.strata("admin", "cert", "create", "--ca", dir.resolve("nothing").toString(), "--name", "x",
                "--host", "h", "--out", out);
        assertThat(noCa.err()).contains("no CA in", "strata admin init");
        CliTest.Run ttl = CliTest.strata("admin", "cert", "create", "--ca", ca, "--name", "x", "--host", "h", "--ttl", "0s", "--out", out);
        assertThat(ttl.err()).contains("--ttl must be positive");
        CliTest.Run validity = CliTest.strata("admin", "init", "--dir", dir.resolve("e2").toString(), "--ca-validity", "soon");
        assertThat(validity.err()).contains("not a duration");
        assertThat(Files.exists(dir.resolve("o/x.key"))).as("nothing written on a refusal").isFalse();
    }
}
