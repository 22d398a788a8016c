package io.strata.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.config.ConfigException;
import io.strata.config.TlsConfig;
import io.strata.core.NodeContext;
import io.strata.core.fault.FaultInjector;
import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.TlsEngine;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.StoredHint;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Real 3-peer Ratis groups on loopback whose Raft ports speak mutual TLS with the cluster CA:
 * the group elects, commits and fails over as without TLS, and a peer that cannot show a
 * certificate from the cluster CA (another CA's, or none at all) never takes part: the other two
 * go on without it and it never applies one of their entries.
 */
class MgmtdRaftTlsTest {
    static final Duration T = Duration.ofSeconds(30);

    @TempDir
    Path dir;
    final CertificateAuthority ca = CertificateAuthority.generate("cluster-ca", Instant.now(), Duration.ofDays(1));
    final List<MgmtdServer> servers = new ArrayList<>();
    final List<NodeContext> contexts = new ArrayList<>();

    @AfterEach
    void tearDown() {
        servers.forEach(MgmtdServer::close);
        contexts.forEach(NodeContext::close);
    }

    /** {@code name}'s certificate from {@code issuer}, its key and {@code issuer}'s certificate, as {@code [tls]} files. */
    TlsConfig tls(CertificateAuthority issuer, String name) throws IOException {
        return tls(issuer, name, TlsEngine.JDK);
    }

    TlsConfig tls(CertificateAuthority issuer, String name, TlsEngine engine) throws IOException {
        Path d = PrivateFiles.createDirectories(dir.resolve("tls-" + name));
        CertificateAuthority.Issued i = issuer.issue(name, CertificateAuthority.localHosts(), Instant.now(), Duration.ofDays(1));
        Path key = Files.writeString(PrivateFiles.createFile(d.resolve(name + ".key")), i.keyPem());
        Path cert = Files.writeString(d.resolve(name + ".pem"), i.certificatePem());
        Path caFile = Files.writeString(d.resolve("ca.pem"), issuer.certificatePem());
        return new TlsConfig(true, cert, key, caFile, engine);
    }

    NodeContext ctx(String name, TlsConfig tls) {
        NodeContext c = tls.applyTo(NodeContext.builder(name).seed(7).faults(new FaultInjector(7))
                .eventLoopThreads(1).blockingThreads(2).schedulerThreads(2)).build();
        contexts.add(c);
        return c;
    }

    MgmtdServer start(MgmtdConfig c) throws IOException {
        MgmtdServer s = MgmtdServer.start(ctx("mgmtd-" + c.id(), c.tls()), c);
        servers.add(s);
        return s;
    }

    MgmtdServer leader() {
        return servers.stream().filter(MgmtdServer::isLeader).findFirst().orElse(null);
    }

    static byte[] hint(int i) {
        return ("{\"job\":\"j" + i + "\"}").getBytes(StandardCharsets.UTF_8);
    }

    @ParameterizedTest
    @EnumSource(TlsEngine.class)
    void aGroupOnMutualTlsCommitsAcrossALeaderFailover(TlsEngine engine) throws Exception {
        assumeTrue(engine == TlsEngine.JDK || io.netty.handler.ssl.OpenSsl.isAvailable()
                && org.apache.ratis.thirdparty.io.netty.handler.ssl.OpenSsl.isAvailable(), "BoringSSL does not load here");
        for (MgmtdConfig c : Managers.group(dir, 3, T)) {
            start(c.withTls(tls(ca, c.id(), engine)));
        }
        MgmtdServer first = Eventually.value("a leader", T, this::leader);
        MgmtdClient client = new MgmtdClient(ctx("client", tls(ca, "client")), servers.stream().map(MgmtdServer::rpcAddress).toList());
        List<StoredHint> put = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            put.add(Futures.join(client.putHintAsync(0, 0, hint(i)), T));
        }
        for (MgmtdServer s : servers) {
            Eventually.await(s.peerId() + " applied the hints", T, () -> s.hints().equals(put));
        }

        first.close();
        MgmtdServer second = Eventually.value("a new leader", T, () -> {
            MgmtdServer l = leader();
            return l != first ? l : null;
        });
        assertThat(second.hints()).as("the new leader has every committed hint").isEqualTo(put);
        for (int i = 5; i < 10; i++) {
            put.add(Futures.join(client.putHintAsync(0, 0, hint(i)), T));
        }
        MgmtdServer other = servers.stream().filter(s -> s != first && s != second).findFirst().orElseThrow();
        Eventually.await("the remaining follower replicated over TLS", T, () -> other.hints().equals(put));
        assertThat(Futures.join(client.hintsAsync(), T)).as("hints read through the new leader").isEqualTo(put);
        client.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"another CA's certificate", "no TLS"})
    void aPeerWithoutTheClusterCasCertificateNeverJoins(String rogue) throws Exception {
        List<MgmtdConfig> cfgs = Managers.group(dir, 3, T);
        CertificateAuthority other = CertificateAuthority.generate("other-ca", Instant.now(), Duration.ofDays(1));
        MgmtdServer m1 = start(cfgs.get(0).withTls(tls(ca, "m1")));
        MgmtdServer m2 = start(cfgs.get(1).withTls(tls(ca, "m2")));
        MgmtdServer m3 = start(rogue.equals("no TLS") ? cfgs.get(2) : cfgs.get(2).withTls(tls(other, "m3")));
        MgmtdServer leader = Eventually.value("a leader", T, this::leader);
        assertThat(leader).as("the leader is one of the two peers with the cluster CA's certificates").isIn(m1, m2);
        MgmtdServer follower = leader == m1 ? m2 : m1;

        MgmtdClient client = new MgmtdClient(ctx("client", tls(ca, "client")), List.of(m1.rpcAddress(), m2.rpcAddress()));
        List<StoredHint> put = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            put.add(Futures.join(client.putHintAsync(0, 0, hint(i)), T));
        }
        Eventually.await("the other good peer applied the hints", T, () -> follower.hints().equals(put));
        // the leader has been sending appends (and the rogue asking for votes) for a while:
        // several election timeouts more and the rogue still has nothing of the log
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (System.nanoTime() < until) {
            assertThat(m3.hints()).as("the peer with %s applied none of the group's entries", rogue).isEmpty();
            assertThat(m3.isLeader()).as("the peer with %s never leads", rogue).isFalse();
            Thread.sleep(100);
        }
        assertThat(leader.isLeader()).as("the group kept its leader: the rogue's vote requests never reached it").isTrue();
        // and the group goes on committing without it
        put.add(Futures.join(client.putHintAsync(0, 0, hint(5)), T));
        Eventually.await("the group commits with two of three", T, () -> follower.hints().equals(put));
        assertThat(m3.hints()).as("the peer with %s", rogue).isEmpty();
        client.close();
    }

    @Test
    void theDaemonConfigsTlsTableReachesTheRaftPort() throws Exception {
        TlsConfig files = tls(ca, "m1");
        String toml = """
                [mgmtd]
                id = "m1"
                raft = "127.0.0.1:0"
                [tls]
                cert-file = "%s"
                key-file = "%s"
                ca-file = "%s"
                engine = "jdk"
                """.formatted(files.certFile(), files.keyFile(), files.caFile());
        MgmtdConfig c = MgmtdConfig.read(io.strata.config.ConfigNode.parse(toml, "mgmtd.toml"),
                Managers.loopback(Managers.freePort()), dir.resolve("m1"), io.strata.core.rpc.RpcOptions.DEFAULTS);
        assertThat(c.tls()).as("[tls] of the manager's config").isEqualTo(files);
        MgmtdConfig plain = MgmtdConfig.read(io.strata.config.ConfigNode.parse("[mgmtd]\nid = \"m1\"\n", "mgmtd.toml"),
                Managers.loopback(Managers.freePort()), dir.resolve("m1"), io.strata.core.rpc.RpcOptions.DEFAULTS);
        assertThat(plain.tls().enabled()).as("no [tls]: plaintext Ratis").isFalse();
    }

    @Test
    void aKeyFileThatCannotBeReadIsRefusedAtStart() throws Exception {
        TlsConfig good = tls(ca, "m1");
        TlsConfig missingKey = new TlsConfig(true, good.certFile(), dir.resolve("nope.key"), good.caFile(), TlsEngine.JDK);
        MgmtdConfig c = Managers.group(dir, 1, T).getFirst().withTls(missingKey);
        NodeContext ctx = ctx("mgmtd-m1", TlsConfig.OFF);
        assertThatThrownBy(() -> MgmtdServer.start(ctx, c)).as("a Ratis port with TLS asked for and unusable files")
                .isInstanceOf(ConfigException.class).hasMessageContaining("tls.key-file");
    }
}
