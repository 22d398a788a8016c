package io.strata.core.rpc;

/** What a handler answers: a message and a payload whose ownership passes to the RPC layer. */
public record Reply(Message message, Payload payload) {
    public static Reply of(Message message) {
        return new Reply(message, Payload.NONE);
    }

    public static Reply of(Message message, Payload payload) {
        return new Reply(message, payload);
    }
}
