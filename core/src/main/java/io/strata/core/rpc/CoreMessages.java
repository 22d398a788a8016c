package io.strata.core.rpc;

import io.strata.core.auth.Token;
import io.strata.core.rpc.CoreMessage.Authenticate;
import io.strata.core.rpc.CoreMessage.Authenticated;
import io.strata.core.rpc.CoreMessage.Echo;
import io.strata.core.rpc.CoreMessage.Echoed;
import io.strata.core.rpc.CoreMessage.Ping;
import io.strata.core.rpc.CoreMessage.Pong;
import io.strata.core.rpc.CoreMessage.Pull;
import java.util.List;

/** Wire types of {@link CoreMessage} (tags 1-99). */
public final class CoreMessages {
    public static final MessageType<Ping> PING = MessageType.of(1, Ping.class,
            (m, out) -> out.writeLong(m.nonce()),
            in -> new Ping(Wire.readLong(in, "nonce")));
    public static final MessageType<Pong> PONG = MessageType.of(2, Pong.class,
            (m, out) -> {
                out.writeLong(m.nonce());
                Wire.writeString(out, m.node());
                Wire.writeString(out, m.version());
            },
            in -> new Pong(Wire.readLong(in, "nonce"), Wire.readString(in, 1024, "node"), Wire.readString(in, 256, "version")));
    public static final MessageType<Echo> ECHO = MessageType.of(3, Echo.class,
            (m, out) -> out.writeInt(m.flags()),
            in -> new Echo(Wire.readInt(in, "flags", 0, 3)));
    public static final MessageType<Pull> PULL = MessageType.of(4, Pull.class,
            (m, out) -> {
                out.writeInt(m.length());
                out.writeLong(m.seed());
            },
            in -> new Pull(Wire.readInt(in, "length", 0, Integer.MAX_VALUE), Wire.readLong(in, "seed")));
    public static final MessageType<Echoed> ECHOED = MessageType.of(5, Echoed.class,
            (m, out) -> {
                out.writeLong(m.bytes());
                out.writeInt(m.crc32c());
            },
            in -> new Echoed(Wire.readLong(in, "bytes"), Wire.readInt(in, "crc32c")));

    public static final MessageType<Authenticate> AUTHENTICATE = MessageType.of(6, Authenticate.class,
            (m, out) -> Wire.writeString(out, m.token()),
            in -> new Authenticate(Wire.readString(in, Token.MAX_ENCODED, "token")));
    public static final MessageType<Authenticated> AUTHENTICATED = MessageType.of(7, Authenticated.class,
            (m, out) -> {
                Wire.writeString(out, m.node());
                Wire.writeBool(out, m.verified());
            },
            in -> new Authenticated(Wire.readString(in, 1024, "node"), Wire.readBool(in, "verified")));

    public static final List<MessageType<?>> TYPES = List.of(PING, PONG, ECHO, PULL, ECHOED, AUTHENTICATE, AUTHENTICATED);

    private CoreMessages() {
    }
}
