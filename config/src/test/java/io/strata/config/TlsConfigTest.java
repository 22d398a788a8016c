package io.strata.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.TlsEngine;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TlsConfigTest {
    private static TlsConfig read(String toml) {
        ConfigNode root = ConfigNode.parse(toml, "test.toml");
        TlsConfig t = TlsConfig.read(root);
        root.rejectUnknownKeys();
        return t;
    }

    private static String table(Path dir, String extra) {
        return "[tls]\ncert-file = \"" + dir.resolve("node.pem") + "\"\nkey-file = \"" + dir.resolve("node.key")
                + "\"\nca-file = \"" + dir.resolve("ca.pem") + "\"\n" + extra;
    }

    @Test
    void theTableTurnsTlsOnAndLoadsTheFiles(@TempDir Path dir) throws Exception {
        CertificateAuthority ca = CertificateAuthority.generate("ca", Instant.now(), Duration.ofDays(1));
        CertificateAuthority.Issued node = ca.issue("node", List.of("localhost"), Instant.now(), Duration.ofDays(1));
        Files.writeString(dir.resolve("ca.pem"), ca.certificatePem());
        Files.writeString(dir.resolve("node.pem"), node.certificatePem());
        Files.writeString(dir.resolve("node.key"), node.keyPem());

        assertThat(read("")).isEqualTo(TlsConfig.OFF);
        assertThat(read("[tls]\nenabled = false\n").enabled()).isFalse();
        assertThat(read(table(dir, "enabled = false\n")).context()).isEmpty();
        TlsConfig on = read(table(dir, "engine = \"jdk\"\n"));
        assertThat(on.enabled()).isTrue();
        assertThat(on.engine()).isEqualTo(TlsEngine.JDK);
        assertThat(on.context()).hasValueSatisfying(c -> assertThat(c.engine()).isEqualTo(TlsEngine.JDK));
        assertThat(read(table(dir, "")).engine()).isEqualTo(TlsEngine.resolve("auto"));
    }

    @Test
    void badValuesNameTheirKey(@TempDir Path dir) throws Exception {
        assertThatThrownBy(() -> read("[tls]\nenabled = true\n")).hasMessageContaining("tls.cert-file").hasMessageContaining("required");
        assertThatThrownBy(() -> read(table(dir, "engine = \"gnutls\"\n"))).hasMessageContaining("tls.engine")
                .hasMessageContaining("expected auto, openssl or jdk");
        assertThatThrownBy(() -> read(table(dir, "ciphers = \"x\"\n"))).hasMessageContaining("tls.ciphers").hasMessageContaining("unknown key");
        assertThatThrownBy(() -> read("[tls]\ncert-file = \"\"\n")).hasMessageContaining("tls.cert-file");
        // files are read when the context is made: a missing one names its key
        assertThatThrownBy(() -> read(table(dir, "")).context()).isInstanceOf(ConfigException.class).hasMessageContaining("tls.cert-file");
        CertificateAuthority ca = CertificateAuthority.generate("ca", Instant.now(), Duration.ofDays(1));
        Files.writeString(dir.resolve("node.pem"), ca.issue("n", List.of(), Instant.now(), Duration.ofDays(1)).certificatePem());
        Files.writeString(dir.resolve("node.key"), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
        assertThatThrownBy(() -> read(table(dir, "")).context()).hasMessageContaining("tls.key-file");
    }
}
