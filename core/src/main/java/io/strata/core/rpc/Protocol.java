package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The set of message types one endpoint understands: tag to codec and class to type. Built
 * once, read-only after, shared by every connection. Protocols compose: a storage node
 * speaks {@code Protocol.of(CoreMessages.TYPES, StorageMessages.TYPES)}.
 */
public final class Protocol {
    private final Map<Integer, MessageType<?>> byTag = new HashMap<>();
    private final Map<Class<?>, MessageType<?>> byClass = new HashMap<>();

    @SafeVarargs
    public static Protocol of(Collection<? extends MessageType<?>>... groups) {
        Protocol p = new Protocol();
        for (Collection<? extends MessageType<?>> g : groups) {
            for (MessageType<?> t : g) {
                p.add(t);
            }
        }
        return p;
    }

    private void add(MessageType<?> t) {
        MessageType<?> prev = byTag.putIfAbsent(t.tag(), t);
        if (prev != null && prev != t) {
            throw new IllegalArgumentException("wire tag " + t.tag() + " used by both " + prev + " and " + t);
        }
        byClass.put(t.type(), t);
    }

    public MessageType<?> byTag(int tag) {
        return byTag.get(tag);
    }

    /** The type of a message instance; fails if this protocol does not know it. */
    public MessageType<?> typeOf(Message m) {
        MessageType<?> t = byClass.get(m.getClass());
        if (t == null) {
            throw new IllegalArgumentException("message " + m.getClass().getName() + " is not part of this protocol");
        }
        return t;
    }

    /** Decodes a body and insists it was consumed exactly. {@code body} is borrowed. */
    public Message decode(MessageType<?> type, ByteBuf body) {
        Message m;
        try {
            m = type.decode(body);
        } catch (Wire.Malformed e) {
            throw e;
        } catch (RuntimeException e) {
            // A decoder that trips over bad input in any other way is still a malformed frame.
            throw new Wire.Malformed(type.name() + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        if (body.isReadable()) {
            throw new Wire.Malformed(type.name() + ": " + body.readableBytes() + " bytes left after the body");
        }
        return m;
    }

    public List<MessageType<?>> types() {
        return List.copyOf(byTag.values());
    }
}
