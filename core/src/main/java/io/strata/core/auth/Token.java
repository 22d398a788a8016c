package io.strata.core.auth;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;

/**
 * The signed claims of a token: who holds it ({@link #role}, {@link #subject}), when it was
 * issued and until when it is good. A token travels as
 * {@code strata1.<base64url(claims)>.<base64url(HMAC-SHA256(key, "strata1.<base64url(claims)>"))>},
 * the claims in a compact binary form (all integers big-endian):
 * <pre>
 * 16 bytes  token id (random; names the token in logs without revealing it)
 *  1 byte   role code ({@link Role})
 *  1 byte   subject length, then the subject in UTF-8
 *  8 bytes  issued at, seconds since the epoch
 *  8 bytes  expires at, seconds since the epoch
 * </pre>
 * The encoded string is a bearer secret: {@link #toString()} shows the claims only.
 *
 * @param id       the token id, 32 hex digits
 * @param subject  a name: a daemon's node ({@code node-3}) or a user's label; letters, digits, '.', '_', '-'
 */
public record Token(String id, Role role, String subject, Instant issuedAt, Instant expiresAt) {
    static final String PREFIX = "strata1.";
    private static final int ID_BYTES = 16;
    private static final int MAX_SUBJECT = 64;
    /** Longest encoded token accepted: claims of the longest subject plus the signature, with room. */
    public static final int MAX_ENCODED = 512;
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder B64D = Base64.getUrlDecoder();
    private static final SecureRandom RANDOM = new SecureRandom();

    public Token {
        if (subject == null || subject.isEmpty() || subject.length() > MAX_SUBJECT || !subject.matches("[A-Za-z0-9._-]+")) {
            throw new IllegalArgumentException("a token subject is 1-" + MAX_SUBJECT + " letters, digits, '.', '_' or '-', got '" + subject + "'");
        }
        if (!expiresAt.isAfter(issuedAt)) {
            throw new IllegalArgumentException("a token must expire after it is issued");
        }
    }

    /** Signs a new token for {@code role} and {@code subject}, good from {@code now} for {@code ttl}. */
    public static String issue(ClusterKey key, Role role, String subject, Instant now, Duration ttl) {
        byte[] id = new byte[ID_BYTES];
        RANDOM.nextBytes(id);
        Instant issued = now.truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        Token t = new Token(HexFormat.of().formatHex(id), role, subject, issued, issued.plus(ttl));
        String signed = PREFIX + B64.encodeToString(t.claims(id));
        return signed + "." + B64.encodeToString(key.sign(signed.getBytes(StandardCharsets.US_ASCII)));
    }

    private byte[] claims(byte[] idBytes) {
        byte[] s = subject.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(ID_BYTES + 1 + 1 + s.length + 16)
                .put(idBytes).put((byte) role.code()).put((byte) s.length).put(s)
                .putLong(issuedAt.getEpochSecond()).putLong(expiresAt.getEpochSecond()).array();
    }

    /**
     * The claims of {@code encoded} after checking its signature against {@code key}, or
     * UNAUTHENTICATED saying what is wrong with it. Expiry is the caller's to check
     * ({@link TokenVerifier}), so that a tool can show an expired token's claims.
     */
    static Token verified(ClusterKey key, String encoded) {
        if (encoded.length() > MAX_ENCODED) {
            throw bad("token too long (" + encoded.length() + " characters)");
        }
        if (!encoded.startsWith(PREFIX)) {
            throw bad("not a Strata token (it does not start with '" + PREFIX + "')");
        }
        int dot = encoded.lastIndexOf('.');
        if (dot < PREFIX.length()) {
            throw bad("malformed token (no signature)");
        }
        byte[] mac;
        try {
            mac = B64D.decode(encoded.substring(dot + 1));
        } catch (IllegalArgumentException e) {
            throw bad("malformed token signature");
        }
        if (!key.verify(encoded.substring(0, dot).getBytes(StandardCharsets.US_ASCII), mac)) {
            throw bad("token signature does not match this cluster's key (a token of another cluster, or altered)");
        }
        return decodeClaims(encoded.substring(PREFIX.length(), dot));
    }

    /** The claims of {@code encoded}, not verified: for showing what a token says. */
    public static Token peek(String encoded) {
        int dot = encoded.lastIndexOf('.');
        if (!encoded.startsWith(PREFIX) || dot < PREFIX.length()) {
            throw bad("not a Strata token");
        }
        return decodeClaims(encoded.substring(PREFIX.length(), dot));
    }

    private static Token decodeClaims(String b64) {
        try {
            ByteBuffer in = ByteBuffer.wrap(B64D.decode(b64));
            byte[] id = new byte[ID_BYTES];
            in.get(id);
            Role role = Role.fromCode(in.get() & 0xFF);
            byte[] s = new byte[in.get() & 0xFF];
            in.get(s);
            Token t = new Token(HexFormat.of().formatHex(id), role, new String(s, StandardCharsets.UTF_8),
                    Instant.ofEpochSecond(in.getLong()), Instant.ofEpochSecond(in.getLong()));
            if (in.hasRemaining()) {
                throw bad("malformed token claims (" + in.remaining() + " bytes left over)");
            }
            return t;
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            throw bad("malformed token claims (" + e.getMessage() + ")");
        }
    }

    private static StrataException bad(String why) {
        return new StrataException(Status.UNAUTHENTICATED, why);
    }

    @Override
    public String toString() {
        return "token " + id + " (role " + role + ", subject " + subject + ", expires " + expiresAt + ")";
    }
}
