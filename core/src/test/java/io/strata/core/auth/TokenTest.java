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
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
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

    @Test
    void clientTokensCarryUidAndGidRanges() {
        String encoded = Token.issue(key, Role.CLIENT, "alice", NOW, Duration.ofDays(1),
                IdRanges.parse("1000-1999"), IdRanges.parse("100, 1000-1999"));
        Token t = verifier.verify(encoded, NOW);
        assertThat(t.uids()).hasToString("1000-1999");
        assertThat(t.gids()).hasToString("100,1000-1999");
        assertThat(t.uids().contains(1000)).isTrue();
        assertThat(t.uids().contains(2000)).isFalse();
        assertThat(t.gids().contains(100)).isTrue();
        assertThat(t.toString()).contains("uids 1000-1999", "gids 100,1000-1999");
        Token plain = verifier.verify(Token.issue(key, Role.CLIENT, "bob", NOW, Duration.ofDays(1)), NOW);
        assertThat(plain.uids()).as("a token without the claims, as every token before them").isNull();
        assertThat(plain.gids()).isNull();
        Token all = verifier.verify(Token.issue(key, Role.CLIENT, "local", NOW, Duration.ofDays(1), IdRanges.ALL, null), NOW);
        assertThat(all.uids().contains(0)).isTrue();
        assertThat(all.uids().contains(-2)).as("4294967294").isTrue();
        assertThat(all.uids().contains(-1)).as("(uid_t) -1 is no id").isFalse();
        assertThat(all.gids()).isNull();
        assertThatThrownBy(() -> Token.issue(key, Role.STORAGE, "node-1", NOW, Duration.ofDays(1), IdRanges.ALL, null))
                .hasMessageContaining("client tokens only");
    }

    @Test
    void theLargestTokenFitsTheWireLimit() {
        List<IdRanges.Range> many = new ArrayList<>();
        for (int i = 0; i < IdRanges.MAX_RANGES; i++) {
            many.add(new IdRanges.Range(i * 10L, i * 10L + 5));
        }
        IdRanges r = new IdRanges(many);
        String encoded = Token.issue(key, Role.CLIENT, "s".repeat(64), NOW, Duration.ofDays(1), r, r);
        assertThat(encoded.length()).isLessThanOrEqualTo(Token.MAX_ENCODED);
        assertThat(verifier.verify(encoded, NOW).gids()).isEqualTo(r);
    }

    @Test
    void unknownOrMisorderedClaimsAreRefused() {
        String encoded = Token.issue(key, Role.CLIENT, "alice", NOW, Duration.ofDays(1), IdRanges.parse("5"), IdRanges.parse("6"));
        byte[] claims = Base64.getUrlDecoder().decode(encoded.split("\\.")[1]);
        int base = 16 + 1 + 1 + "alice".length() + 16;
        byte[] unknown = claims.clone();
        unknown[base] = 9;
        assertThat(unauthenticated(() -> verifier.verify(signed(unknown), NOW)).getMessage()).contains("unknown claim 9");
        byte[] swapped = claims.clone();
        swapped[base] = 2;
        swapped[base + 10] = 1;
        assertThat(unauthenticated(() -> verifier.verify(signed(swapped), NOW)).getMessage()).contains("claim 1 after 2");
        byte[] inverted = claims.clone();
        inverted[base + 9] = 0; // the uid range 5-5 becomes 5-0
        assertThat(unauthenticated(() -> verifier.verify(signed(inverted), NOW)).getMessage()).contains("bad id range");
        byte[] cut = java.util.Arrays.copyOf(claims, claims.length - 3);
        unauthenticated(() -> verifier.verify(signed(cut), NOW));
    }

    private String signed(byte[] claims) {
        String s = Token.PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(claims);
        return s + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(key.sign(s.getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
    }

    @Test
    void idRangesParseAndRefuseNonsense() {
        assertThat(IdRanges.parse("all")).isEqualTo(IdRanges.ALL);
        assertThat(IdRanges.parse("1000-1999,100")).hasToString("100,1000-1999");
        assertThatThrownBy(() -> IdRanges.parse("1999-1000")).hasMessageContaining("low end first");
        assertThatThrownBy(() -> IdRanges.parse("1000-1999,1500")).hasMessageContaining("overlap");
        assertThatThrownBy(() -> IdRanges.parse("alice")).hasMessageContaining("not an id").hasMessageContaining("1000-1999");
        assertThatThrownBy(() -> IdRanges.parse("4294967295")).hasMessageContaining("above the largest id");
        assertThatThrownBy(() -> IdRanges.parse("")).hasMessageContaining("not an id");
        assertThatThrownBy(() -> IdRanges.parse("-5")).hasMessageContaining("not an id");
    }
}
