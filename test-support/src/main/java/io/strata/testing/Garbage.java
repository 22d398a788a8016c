package io.strata.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Response;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * Authenticated garbage for a server's message decoders: for every message type of a protocol,
 * frames with that type's wire tag and random bodies (and sometimes random payloads), sent by a
 * real {@link RpcClient} whose context holds a token, so that they pass the handshake and reach
 * the decoders and handlers. What a server must do with each: answer with an error that names
 * the problem, or close the connection as malformed; never fail with INTERNAL, never hang.
 */
public final class Garbage {
    private static final Duration T = Duration.ofSeconds(20);

    /** A message that is only its body's bytes, sent under another type's tag. */
    public record Raw(byte[] body) implements Message {
    }

    private Garbage() {
    }

    /**
     * Sends {@code perType} garbage requests for each of {@code types} to {@code to} from
     * {@code ctx} (which carries the caller's token); returns how many ended in each status
     * ({@code OK} when one happened to be a request the server took). Fails on an INTERNAL
     * answer or a call that did not end within 20 s.
     */
    public static Map<String, Integer> send(NodeContext ctx, InetSocketAddress to, List<MessageType<?>> types, Random rnd, int perType) {
        Map<String, Integer> outcomes = new TreeMap<>();
        for (MessageType<?> target : types) {
            List<MessageType<?>> others = new ArrayList<>();
            for (MessageType<?> t : types) {
                if (t.tag() != target.tag()) {
                    others.add(t);
                }
            }
            for (MessageType<?> t : CoreMessages.TYPES) {
                if (t.tag() != target.tag() && others.stream().noneMatch(o -> o.tag() == t.tag())) {
                    others.add(t);
                }
            }
            MessageType<Raw> raw = MessageType.of(target.tag(), Raw.class, (m, out) -> out.writeBytes(m.body()),
                    in -> new Raw(new byte[0]));
            List<MessageType<?>> mine = new ArrayList<>(others);
            mine.add(raw);
            try (RpcClient client = new RpcClient(ctx, Protocol.of(mine), RpcOptions.DEFAULTS)) {
                List<CompletableFuture<Response>> calls = new ArrayList<>();
                List<String> sent = new ArrayList<>();
                for (int i = 0; i < perType; i++) {
                    byte[] body = body(rnd);
                    Payload payload = Payload.NONE;
                    if (rnd.nextInt(4) == 0) {
                        byte[] p = new byte[rnd.nextInt(70_000)];
                        rnd.nextBytes(p);
                        ByteBuf b = Unpooled.wrappedBuffer(p);
                        payload = Payload.of(b);
                    }
                    sent.add(target.name() + " with a body of " + body.length + " bytes");
                    calls.add(client.call(to, new Raw(body), payload, T));
                }
                for (int i = 0; i < calls.size(); i++) {
                    String status;
                    try {
                        Futures.join(calls.get(i), T.plusSeconds(5)).close();
                        status = "OK";
                    } catch (StrataException e) {
                        if (e.status() == Status.INTERNAL) {
                            throw new AssertionError(sent.get(i) + " failed inside the server: " + e.getMessage(), e);
                        }
                        if (e.status() == Status.TIMEOUT) {
                            throw new AssertionError(sent.get(i) + " got no answer: " + e.getMessage(), e);
                        }
                        status = e.status().name();
                    }
                    outcomes.merge(status, 1, Integer::sum);
                }
            }
        }
        return outcomes;
    }

    /** Random bytes, mostly short, sometimes with a huge length or count where a decoder reads one. */
    private static byte[] body(Random rnd) {
        int n = switch (rnd.nextInt(4)) {
            case 0 -> rnd.nextInt(8);
            case 1 -> rnd.nextInt(64);
            case 2 -> rnd.nextInt(512);
            default -> rnd.nextInt(8192);
        };
        byte[] b = new byte[n];
        rnd.nextBytes(b);
        if (n >= 8 && rnd.nextBoolean()) {
            int at = rnd.nextInt(n - 3);
            b[at] = 0x7F;
            b[at + 1] = (byte) 0xFF;
            b[at + 2] = (byte) 0xFF;
            b[at + 3] = (byte) 0xFF; // a length or count of 2^31 - 1 somewhere
        }
        return b;
    }
}
