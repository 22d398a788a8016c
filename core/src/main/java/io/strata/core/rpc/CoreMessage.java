package io.strata.core.rpc;

/**
 * Messages every Strata node understands (wire tags 1-99): liveness and the echo/pull service
 * used by {@code strata ping}, {@code strata bench rpc} and the RPC tests.
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
}
