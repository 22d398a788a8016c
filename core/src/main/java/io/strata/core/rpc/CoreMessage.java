package io.strata.core.rpc;

/**
 * Messages every Strata node understands (wire tags 1-99): liveness, the echo/pull service
 * used by {@code strata ping}, {@code strata bench rpc} and the RPC tests, and the handshake
 * that authenticates a connection.
 */
public sealed interface CoreMessage extends Message {
    /** Liveness probe; {@code nonce} comes back in the {@link Pong}. */
    record Ping(long nonce) implements CoreMessage {
    }

    /** Answer to {@link Ping}: who answered and which build it runs. */
    record Pong(long nonce, String node, String version) implements CoreMessage {
    }

    /**
     * Sends a payload to be counted (and with {@link #FLAG_CHECKSUM}, CRC32C-summed); with
     * {@link #FLAG_RETURN} the same bytes come back as the reply's payload.
     */
    record Echo(int flags) implements CoreMessage {
        public static final int FLAG_RETURN = 1;
        public static final int FLAG_CHECKSUM = 2;
    }

    /** Asks for {@code length} bytes of payload (a deterministic pattern seeded by {@code seed}). */
    record Pull(int length, long seed) implements CoreMessage {
    }

    /** Answer to {@link Echo} or {@link Pull}: bytes received, and their CRC32C when asked. */
    record Echoed(long bytes, int crc32c) implements CoreMessage {
    }

    /**
     * The first request on a connection to a server that requires authentication, sent by the
     * RPC client itself before any call: the caller's token ({@code strata1.…}). Anything else
     * first, or a token the server does not accept, is answered UNAUTHENTICATED (or
     * PERMISSION_DENIED for a role the server does not admit) and the connection is closed.
     */
    record Authenticate(String token) implements CoreMessage {
        @Override
        public String toString() {
            return "Authenticate[token redacted]";
        }
    }

    /**
     * Answer to {@link Authenticate}: the node that answered and whether it checked the token
     * ({@code false}: a server that runs without authentication took the connection as it is).
     */
    record Authenticated(String node, boolean verified) implements CoreMessage {
    }
}
