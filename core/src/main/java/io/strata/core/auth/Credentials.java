package io.strata.core.auth;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The token a process presents on every connection it opens ({@link io.strata.core.rpc.RpcClient}
 * sends it first). Kept apart from the claims so that the secret never reaches a log:
 * {@link #toString()} shows only the claims.
 */
public final class Credentials {
    private final String token;
    private final Token claims;

    private Credentials(String token) {
        this.token = token;
        this.claims = Token.peek(token);
    }

    public static Credentials of(String token) {
        return new Credentials(token);
    }

    /** The token in {@code file} (its only content, surrounding whitespace ignored). */
    public static Credentials read(Path file) throws IOException {
        String t = Files.readString(file).strip();
        try {
            return new Credentials(t);
        } catch (RuntimeException e) {
            throw new IOException(file + ": " + e.getMessage(), e);
        }
    }

    /** The encoded token: a secret. */
    public String token() {
        return token;
    }

    /** What the token says (not verified here: only the servers can). */
    public Token claims() {
        return claims;
    }

    @Override
    public String toString() {
        return "Credentials[" + claims + "]";
    }
}
