package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;

/**
 * The wire identity of one message record: its tag (unique across Strata, see
 * docs/internals/wire.md for the ranges), a name for logs and fault rules, and its codec.
 */
public final class MessageType<M extends Message> {
    private final int tag;
    private final String name;
    private final Class<M> type;
    private final Encoder<M> encoder;
    private final Decoder<M> decoder;

    private MessageType(int tag, Class<M> type, Encoder<M> encoder, Decoder<M> decoder) {
        if (tag <= 0 || tag > 0xFFFF) {
            throw new IllegalArgumentException("message tag must be in 1..65535, got " + tag);
        }
        this.tag = tag;
        this.name = type.getSimpleName();
        this.type = type;
        this.encoder = encoder;
        this.decoder = decoder;
    }

    public static <M extends Message> MessageType<M> of(int tag, Class<M> type, Encoder<M> encoder, Decoder<M> decoder) {
        return new MessageType<>(tag, type, encoder, decoder);
    }

    /** Writes the body of {@code message} to {@code out}. */
    @FunctionalInterface
    public interface Encoder<M> {
        void encode(M message, ByteBuf out);
    }

    /**
     * Reads a body from {@code in} (exactly the body's bytes, borrowed). Must reject bad input
     * with {@link Wire.Malformed}; the protocol also rejects bytes left over.
     */
    @FunctionalInterface
    public interface Decoder<M> {
        M decode(ByteBuf in);
    }

    public int tag() {
        return tag;
    }

    public String name() {
        return name;
    }

    public Class<M> type() {
        return type;
    }

    public void encode(Message message, ByteBuf out) {
        encoder.encode(type.cast(message), out);
    }

    public M decode(ByteBuf in) {
        return decoder.decode(in);
    }

    @Override
    public String toString() {
        return name + "#" + tag;
    }
}
