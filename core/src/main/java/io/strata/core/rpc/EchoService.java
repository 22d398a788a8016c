package io.strata.core.rpc;

import io.netty.buffer.ByteBuf;
import io.strata.core.NodeContext;
import io.strata.core.StrataException;
import io.strata.core.Status;
import io.strata.core.rpc.CoreMessage.Echo;
import io.strata.core.rpc.CoreMessage.Echoed;
import io.strata.core.rpc.CoreMessage.Pong;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;

/** Serves {@link CoreMessage}s: ping, echo, and pull. Every node registers it. */
public final class EchoService {
    /** The build version reported in {@link Pong}; "dev" when not run from a packaged jar. */
    public static final String VERSION = versionOf();

    private EchoService() {
    }

    public static RpcServer.Builder register(NodeContext ctx, RpcServer.Builder server, int maxPullBytes) {
        return server
                .handle(CoreMessages.PING, req -> CompletableFuture.completedFuture(
                        Reply.of(new Pong(req.message().nonce(), ctx.name(), VERSION))))
                .handle(CoreMessages.ECHO, req -> {
                    int flags = req.message().flags();
                    ByteBuf p = req.payload();
                    int crc = (flags & Echo.FLAG_CHECKSUM) != 0 ? crc32c(p) : 0;
                    Echoed reply = new Echoed(p.readableBytes(), crc);
                    if ((flags & Echo.FLAG_RETURN) != 0) {
                        return CompletableFuture.completedFuture(Reply.of(reply, Payload.of(req.takePayload())));
                    }
                    return CompletableFuture.completedFuture(Reply.of(reply));
                })
                .handle(CoreMessages.PULL, req -> {
                    int len = req.message().length();
                    if (len > maxPullBytes) {
                        throw new StrataException(Status.INVALID_ARGUMENT, "pull of " + len + " bytes exceeds " + maxPullBytes);
                    }
                    ByteBuf buf = req.alloc().ioBuffer(len);
                    fill(buf, len, req.message().seed());
                    return CompletableFuture.completedFuture(Reply.of(new Echoed(len, 0), Payload.of(buf)));
                });
    }

    /** CRC32C of the readable bytes, without moving the reader index or copying. */
    public static int crc32c(ByteBuf buf) {
        CRC32C crc = new CRC32C();
        for (ByteBuffer b : buf.nioBuffers()) {
            crc.update(b);
        }
        return (int) crc.getValue();
    }

    /** Writes {@code len} bytes of a pattern derived from {@code seed} (cheap, not random). */
    public static void fill(ByteBuf buf, int len, long seed) {
        byte[] block = new byte[Math.min(len, 64 * 1024)];
        java.nio.ByteBuffer view = java.nio.ByteBuffer.wrap(block);
        long x = seed | 1;
        int left = len;
        while (left > 0) {
            view.clear();
            while (view.remaining() >= 8) {
                view.putLong(x);
                x += 0x9E3779B97F4A7C15L;
            }
            int n = Math.min(left, block.length);
            buf.writeBytes(block, 0, n);
            left -= n;
        }
    }

    private static String versionOf() {
        String v = EchoService.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }
}
