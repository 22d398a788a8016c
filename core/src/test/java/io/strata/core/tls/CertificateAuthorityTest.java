package io.strata.core.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The CA and the certificates it issues, through PEM files as {@code strata up} writes them. */
class CertificateAuthorityTest {
    @Test
    void issuesCertificatesThatSurviveAPemRoundTrip(@TempDir Path dir) throws Exception {
        Instant now = Instant.now();
        CertificateAuthority ca = CertificateAuthority.generate("cluster", now, Duration.ofDays(3650));
        Files.writeString(dir.resolve("ca.pem"), ca.certificatePem());
        Files.writeString(dir.resolve("ca.key"), ca.keyPem());
        assertThat(ca.keyPem()).startsWith("-----BEGIN PRIVATE KEY-----");

        CertificateAuthority again = CertificateAuthority.read(dir.resolve("ca.pem"), dir.resolve("ca.key"));
        CertificateAuthority.Issued node = again.issue("storage-1", List.of("localhost", "127.0.0.1", "::1"), now, Duration.ofDays(365));
        Files.writeString(dir.resolve("node.pem"), node.certificatePem());
        Files.writeString(dir.resolve("node.key"), node.keyPem());

        X509Certificate cert = Pem.readCertificates(dir.resolve("node.pem")).get(0);
        assertThat(ca.signed(cert)).isTrue();
        assertThat(CertificateAuthority.generate("other", now, Duration.ofDays(1)).signed(cert)).isFalse();
        assertThat(cert.getSubjectX500Principal().getName()).contains("CN=storage-1");
        assertThat(cert.getSubjectAlternativeNames().stream().map(n -> String.valueOf(n.get(1))).toList()).contains("localhost", "127.0.0.1");
        assertThat(cert.getExtendedKeyUsage()).contains("1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2");
        assertThat(cert.getBasicConstraints()).isEqualTo(-1);
        assertThat(Pem.readPrivateKey(dir.resolve("node.key")).getAlgorithm()).isEqualTo("EC");
        // a node certificate never outlives its CA
        CertificateAuthority shortCa = CertificateAuthority.generate("short", now, Duration.ofDays(1));
        assertThat(shortCa.issue("n", List.of(), now, Duration.ofDays(365)).certificate().getNotAfter())
                .isEqualTo(shortCa.certificate().getNotAfter());
        // the files load as a TLS context with either engine's key format
        TlsContext.load(dir.resolve("node.pem"), dir.resolve("node.key"), dir.resolve("ca.pem"), TlsEngine.JDK);
    }

    @Test
    void refusesAKeyThatIsNotTheCertificatesAndALeafAsCa(@TempDir Path dir) throws Exception {
        CertificateAuthority ca = CertificateAuthority.generate("cluster", Instant.now(), Duration.ofDays(1));
        CertificateAuthority other = CertificateAuthority.generate("other", Instant.now(), Duration.ofDays(1));
        Files.writeString(dir.resolve("ca.pem"), ca.certificatePem());
        Files.writeString(dir.resolve("other.key"), other.keyPem());
        assertThatThrownBy(() -> CertificateAuthority.read(dir.resolve("ca.pem"), dir.resolve("other.key")))
                .isInstanceOf(IOException.class).hasMessageContaining("is not the key of");

        CertificateAuthority.Issued leaf = ca.issue("n", List.of(), Instant.now(), Duration.ofDays(1));
        Files.writeString(dir.resolve("leaf.pem"), leaf.certificatePem());
        Files.writeString(dir.resolve("leaf.key"), leaf.keyPem());
        assertThatThrownBy(() -> CertificateAuthority.read(dir.resolve("leaf.pem"), dir.resolve("leaf.key")))
                .isInstanceOf(IOException.class).hasMessageContaining("not a CA certificate");
        Files.writeString(dir.resolve("empty.pem"), "nothing here\n");
        assertThatThrownBy(() -> Pem.readCertificates(dir.resolve("empty.pem"))).hasMessageContaining("no PEM certificate");
    }
}
