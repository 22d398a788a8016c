package io.strata.core.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenTest {
    private static final Instant NOW = Instant.parse("2030-01-01T00:00:00Z");
    private final ClusterKey key = ClusterKey.generate();
    private final TokenVerifier verifier = new TokenVerifier(key);

    private static StrataException unauthenticated(Runnable r) {
        try {
            r.run();
        } catch (StrataException e) {
            assertThat(e.status()).isEqualTo(Status.UNAUTHENTICATED);
            return e;
        }
        throw new AssertionError("accepted");
    }

    @Test
    void signedTokenVerifiesWithItsClaims() {
        String encoded = Token.issue(key, Role.STORAGE, "node-3", NOW, Duration.ofDays(365));
        assertThat(encoded).startsWith("strata1.").matches("strata1\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+");
        Token t = verifier.verify(encoded, NOW.plusSeconds(60));
        assertThat(t.role()).isEqualTo(Role.STORAGE);
        assertThat(t.subject()).isEqualTo("node-3");
        assertThat(t.issuedAt()).isEqualTo(NOW);
        assertThat(t.expiresAt()).isEqualTo(NOW.plus(Duration.ofDays(365)));
        assertThat(t.id()).hasSize(32);
        assertThat(t.toString()).doesNotContain(encoded).contains("node-3");
        assertThat(Token.issue(key, Role.STORAGE, "node-3", NOW, Duration.ofDays(1)))
                .as("every token has its own id").isNotEqualTo(Token.issue(key, Role.STORAGE, "node-3", NOW, Duration.ofDays(1)));
    }

    @Test
    void tamperedClaimsOrSignatureAreRefused() {
        String encoded = Token.issue(key, Role.CLIENT, "alice", NOW, Duration.ofHours(1));
        String[] parts = encoded.split("\\.");
        // the same claims with the role byte turned into admin
        byte[] claims = Base64.getUrlDecoder().decode(parts[1]);
        claims[16] = 7;
        String promoted = parts[0] + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(claims) + "." + parts[2];
        assertThat(unauthenticated(() -> verifier.verify(promoted, NOW)).getMessage()).contains("signature does not match");
        byte[] mac = Base64.getUrlDecoder().decode(parts[2]);
        mac[0] ^= 1;
        String forged = parts[0] + "." + parts[1] + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(mac);
        assertThat(unauthenticated(() -> verifier.verify(forged, NOW)).getMessage()).contains("signature does not match");
        unauthenticated(() -> verifier.verify(parts[0] + "." + parts[1], NOW));
        unauthenticated(() -> verifier.verify("Bearer nonsense", NOW));
        unauthenticated(() -> verifier.verify(encoded + "x".repeat(600), NOW));
    }

    @Test
    void expiredTokenIsRefusedNamingWhen() {
        String encoded = Token.issue(key, Role.CLIENT, "alice", NOW, Duration.ofMinutes(5));
        assertThat(verifier.verify(encoded, NOW.plusSeconds(299)).subject()).isEqualTo("alice");
        assertThat(unauthenticated(() -> verifier.verify(encoded, NOW.plusSeconds(300))).getMessage())
                .contains("expired at 2030-01-01T00:05:00Z");
    }

    @Test
    void tokenOfAnotherKeyIsRefused() {
        String other = Token.issue(ClusterKey.generate(), Role.ADMIN, "root", NOW, Duration.ofDays(1));
        assertThat(unauthenticated(() -> verifier.verify(other, NOW)).getMessage()).contains("another cluster");
    }

    @Test
    void keyFileIsPrivateAndNeverOverwritten(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("cluster.key");
        ClusterKey k = ClusterKey.readOrCreate(f);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(f))).isEqualTo("rw-------");
        String t = Token.issue(k, Role.META, "node-1000", NOW, Duration.ofDays(1));
        assertThat(new TokenVerifier(ClusterKey.readOrCreate(f)).verify(t, NOW).role()).isEqualTo(Role.META);
        assertThatThrownBy(() -> ClusterKey.generate().writeNew(f)).hasMessageContaining("never overwritten");
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> ClusterKey.read(f)).hasMessageContaining("chmod 600");
    }

    @Test
    void rolesParseByName() {
        assertThat(Role.parse("scheduler")).isEqualTo(Role.SCHEDULER);
        assertThatThrownBy(() -> Role.parse("root")).hasMessageContaining("storage, l2, meta, mgmtd, client, scheduler, admin");
    }
}
