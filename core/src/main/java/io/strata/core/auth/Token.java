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
 * then optional claims, each a tag byte and its value, in increasing tag order (a token without
 * them is the original form and stays valid):
 *  tag 1    uids: the user ids the holder may act for ({@link IdRanges}: count, then (lo, hi) u32 pairs)
 *  tag 2    gids: the group ids likewise
 * </pre>
 * An unknown tag is refused rather than skipped: a claim a verifier does not understand may
 * restrict the holder, and ignoring it would widen what the token allows. The encoded string is
 * a bearer secret: {@link #toString()} shows the claims only.
 *
 * @param id       the token id, 32 hex digits
 * @param subject  a name: a daemon's node ({@code node-3}) or a user's label; letters, digits, '.', '_', '-'
 * @param uids     the uids a {@code client} token may act for, null when it does not say (see docs/security.md)
 * @param gids     the gids (primary and supplementary) a {@code client} token may act for, null when it does not say
 */
public record Token(String id, Role role, String subject, Instant issuedAt, Instant expiresAt, IdRanges uids, IdRanges gids) {
    static final String PREFIX = "strata1.";
    private static final int ID_BYTES = 16;
    private static final int MAX_SUBJECT = 64;
    /** Longest encoded token accepted: the longest subject and full uid and gid claims plus the signature (about 540 characters), with room. */
    public static final int MAX_ENCODED = 1024;
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder B64D = Base64.getUrlDecoder();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int TAG_UIDS = 1;
    private static final int TAG_GIDS = 2;

    public Token {
        if (subject == null || subject.isEmpty() || subject.length() > MAX_SUBJECT || !subject.matches("[A-Za-z0-9._-]+")) {
            throw new IllegalArgumentException("a token subject is 1-" + MAX_SUBJECT + " letters, digits, '.', '_' or '-', got '" + subject + "'");
        }
        if (!expiresAt.isAfter(issuedAt)) {
            throw new IllegalArgumentException("a token must expire after it is issued");
        }
        if ((uids != null || gids != null) && role != Role.CLIENT) {
            throw new IllegalArgumentException("uid and gid ranges belong in client tokens only, not " + role);
        }
    }

    /** A token without uid and gid claims. */
    public Token(String id, Role role, String subject, Instant issuedAt, Instant expiresAt) {
        this(id, role, subject, issuedAt, expiresAt, null, null);
    }

    /** Signs a new token for {@code role} and {@code subject}, good from {@code now} for {@code ttl}. */
    public static String issue(ClusterKey key, Role role, String subject, Instant now, Duration ttl) {
        return issue(key, role, subject, now, ttl, null, null);
    }

    /**
     * Signs a new token as {@link #issue(ClusterKey, Role, String, Instant, Duration)} does, a
     * {@code client} token limited to {@code uids} and {@code gids} (null: no such claim).
     */
    public static String issue(ClusterKey key, Role role, String subject, Instant now, Duration ttl, IdRanges uids, IdRanges gids) {
        byte[] id = new byte[ID_BYTES];
        RANDOM.nextBytes(id);
        Instant issued = now.truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        Token t = new Token(HexFormat.of().formatHex(id), role, subject, issued, issued.plus(ttl), uids, gids);
        String signed = PREFIX + B64.encodeToString(t.claims(id));
        return signed + "." + B64.encodeToString(key.sign(signed.getBytes(StandardCharsets.US_ASCII)));
    }

    private byte[] claims(byte[] idBytes) {
        byte[] s = subject.getBytes(StandardCharsets.UTF_8);
        int extra = (uids == null ? 0 : 1 + uids.encodedBytes()) + (gids == null ? 0 : 1 + gids.encodedBytes());
        ByteBuffer out = ByteBuffer.allocate(ID_BYTES + 1 + 1 + s.length + 16 + extra)
                .put(idBytes).put((byte) role.code()).put((byte) s.length).put(s)
                .putLong(issuedAt.getEpochSecond()).putLong(expiresAt.getEpochSecond());
        if (uids != null) {
            out.put((byte) TAG_UIDS);
            uids.encode(out);
        }
        if (gids != null) {
            out.put((byte) TAG_GIDS);
            gids.encode(out);
        }
        return out.array();
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
            String subject = new String(s, StandardCharsets.UTF_8);
            Instant issued = Instant.ofEpochSecond(in.getLong());
            Instant expires = Instant.ofEpochSecond(in.getLong());
            IdRanges uids = null;
            IdRanges gids = null;
            int last = 0;
            while (in.hasRemaining()) {
                int tag = in.get() & 0xFF;
                if (tag <= last) {
                    throw bad("malformed token claims (claim " + tag + " after " + last + ")");
                }
                switch (tag) {
                    case TAG_UIDS -> uids = IdRanges.decode(in);
                    case TAG_GIDS -> gids = IdRanges.decode(in);
                    default -> throw bad("malformed token claims (unknown claim " + tag + ")");
                }
                last = tag;
            }
            return new Token(HexFormat.of().formatHex(id), role, subject, issued, expires, uids, gids);
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            throw bad("malformed token claims (" + e.getMessage() + ")");
        }
    }

    private static StrataException bad(String why) {
        return new StrataException(Status.UNAUTHENTICATED, why);
    }

    @Override
    public String toString() {
        return "token " + id + " (role " + role + ", subject " + subject + (uids == null ? "" : ", uids " + uids)
                + (gids == null ? "" : ", gids " + gids) + ", expires " + expiresAt + ")";
    }
}
