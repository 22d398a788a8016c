package io.strata.core.rpc;

import java.util.List;

/** Messages only tests use (tags 60000+): a request the server parks, one it fails, one with a list. */
final class TestMessages {
    sealed interface TestMessage extends Message {
    }

    /** The server holds the request until the test releases it. */
    record Park(int id) implements TestMessage {
    }

    /** The server fails it with the given status code and version detail. */
    record Fail(int status, long version) implements TestMessage {
    }

    record Names(List<String> names, boolean flag) implements TestMessage {
    }

    static final MessageType<Park> PARK = MessageType.of(60001, Park.class,
            (m, out) -> out.writeInt(m.id()), in -> new Park(Wire.readInt(in, "id")));
    static final MessageType<Fail> FAIL = MessageType.of(60002, Fail.class,
            (m, out) -> {
                out.writeShort(m.status());
                out.writeLong(m.version());
            },
            in -> new Fail(Wire.readU16(in, "status"), Wire.readLong(in, "version")));
    static final MessageType<Names> NAMES = MessageType.of(60003, Names.class,
            (m, out) -> {
                out.writeInt(m.names().size());
                m.names().forEach(n -> Wire.writeString(out, n));
                Wire.writeBool(out, m.flag());
            },
            in -> {
                int n = Wire.readCount(in, "names", 1000, 4);
                String[] names = new String[n];
                for (int i = 0; i < n; i++) {
                    names[i] = Wire.readString(in, 255, "name");
                }
                return new Names(List.of(names), Wire.readBool(in, "flag"));
            });

    /** Not registered on the server: it answers UNKNOWN_MESSAGE. */
    record Unknown() implements TestMessage {
    }

    static final MessageType<Unknown> UNKNOWN = MessageType.of(60099, Unknown.class, (m, out) -> { }, in -> new Unknown());

    static final List<MessageType<?>> SERVER_TYPES = List.of(PARK, FAIL, NAMES);
    static final List<MessageType<?>> TYPES = List.of(PARK, FAIL, NAMES, UNKNOWN);

    private TestMessages() {
    }
}
