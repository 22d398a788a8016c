package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.Unpooled;
import io.strata.core.util.Futures;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The server against peers that hold its resources without using them: headers claiming huge
 * frames, too many connections, frames that stall, silent connections, and more requests than
 * it serves at once. Real sockets on loopback; the hostile peers are plain {@link Socket}s.
 */
class HostilePeerTest {
    private static final Duration T = Duration.ofSeconds(10);
    private static final long MiB = 1 << 20;

    /** The 28-byte header of a request frame (docs/internals/wire.md). */
    private static byte[] header(int tag, long id, int bodyBytes, long payloadBytes) {
        return ByteBuffer.allocate(Frame.HEADER_BYTES)
                .putShort((short) Frame.MAGIC).put((byte) Frame.VERSION).put((byte) 0)
                .putShort((short) tag).putShort((short) 0).putLong(id).putInt(0)
                .putInt(bodyBytes).putInt((int) payloadBytes).array();
    }

    private static byte[] bytes(OutboundFrame frame) {
        ByteBuf b = FrameCodecTest.encode(frame);
        try {
            byte[] a = new byte[b.readableBytes()];
            b.readBytes(a);
            return a;
        } finally {
            b.release();
        }
    }

    private static Socket connect(InetSocketAddress address) throws IOException {
        return new Socket(address.getAddress(), address.getPort());
    }

    /** Bytes the default allocator, which the server's channels use, has handed out and not taken back. */
    private static long allocated() {
        ByteBufAllocatorMetric m = ((ByteBufAllocatorMetricProvider) ByteBufAllocator.DEFAULT).metric();
        return m.usedDirectMemory() + m.usedHeapMemory();
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + T.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting until " + what);
            }
            Thread.sleep(10);
        }
    }

    /** Waits for the server to close {@code s}; returns how long that took. */
    private static Duration closedByServer(Socket s) throws IOException {
        long t0 = System.nanoTime();
        s.setSoTimeout((int) T.toMillis());
        try {
            InputStream in = s.getInputStream();
            while (in.read() != -1) {
                // the server's answers, if any, come first
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the server did not close the connection within " + T);
        } catch (IOException e) {
            // reset: closed as well
        }
        return Duration.ofNanos(System.nanoTime() - t0);
    }

    /** Reads one frame from a raw socket; returns its header. */
    private static ByteBuffer readFrame(Socket s) throws IOException {
        s.setSoTimeout((int) T.toMillis());
        DataInputStream in = new DataInputStream(s.getInputStream());
        byte[] h = new byte[Frame.HEADER_BYTES];
        in.readFully(h);
        ByteBuffer header = ByteBuffer.wrap(h);
        in.readFully(new byte[header.getInt(20) + header.getInt(24)]);
        return header;
    }

    private static void assertStaysOpen(Socket s, Duration during) throws IOException {
        s.setSoTimeout((int) during.toMillis());
        assertThatThrownBy(() -> s.getInputStream().read()).as("connection still open").isInstanceOf(SocketTimeoutException.class);
    }

    private static double counter(RpcFixture fx, String name, String... tags) {
        var c = fx.serverCtx.meters().find(name).tags(tags).counter();
        return c == null ? 0 : c.count();
    }

    private static void ping(RpcFixture fx, long nonce) {
        assertThat(Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(nonce), CoreMessage.Pong.class), T).nonce())
                .isEqualTo(nonce);
    }

    @Test
    void headersClaimingHugePayloadsCostTheServerOnlyTheBytesThatArrived() throws Exception {
        assertThat(ByteBufAllocator.DEFAULT).isInstanceOf(ByteBufAllocatorMetricProvider.class);
        int connections = 200;
        long claimed = 64 * MiB;
        int sent = 64 * 1024;
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS.withReadTimeout(Duration.ofMinutes(1)), b -> b)) {
            ping(fx, 1);
            long before = allocated();
            List<Socket> flood = new ArrayList<>();
            try {
                for (int i = 0; i < connections; i++) {
                    Socket s = connect(fx.address());
                    flood.add(s);
                    s.getOutputStream().write(header(CoreMessages.ECHO.tag(), i, 4, claimed));
                }
                await("the server has every connection", () -> fx.server.connectionCount() == connections + 1);
                long headersOnly = peakAllocatedOver(Duration.ofMillis(500)) - before;
                // then a little of each frame, so that its buffer has to grow
                for (Socket s : flood) {
                    s.getOutputStream().write(new byte[4 + sent]);
                }
                long withSomeBytes = peakAllocatedOver(Duration.ofMillis(500)) - before;

                assertThat(headersOnly).as("bytes held for %d headers claiming %d MiB each", connections, claimed / MiB)
                        .isLessThan(16 * MiB);
                assertThat(withSomeBytes).as("bytes held after %d KiB arrived on each", sent / 1024)
                        .isLessThan(16 * MiB + 4L * connections * sent);
                assertThat(fx.server.connectionCount()).as("no connection failed").isEqualTo(connections + 1);
                ping(fx, 2);
            } finally {
                for (Socket s : flood) {
                    s.close();
                }
            }
            await("the flood's connections are closed", () -> fx.server.connectionCount() == 1);
            ping(fx, 3);
        }
    }

    private static long peakAllocatedOver(Duration d) throws InterruptedException {
        long peak = allocated();
        long end = System.nanoTime() + d.toNanos();
        while (System.nanoTime() < end) {
            Thread.sleep(20);
            peak = Math.max(peak, allocated());
        }
        return peak;
    }

    @Test
    void connectionsOverTheCapAreRefusedWhileOpenOnesKeepWorking() throws Exception {
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS.withMaxConnections(3), b -> b)) {
            ping(fx, 1);
            try (Socket second = connect(fx.address()); Socket third = connect(fx.address())) {
                await("three connections are open", () -> fx.server.connectionCount() == 3);
                try (Socket fourth = connect(fx.address())) {
                    closedByServer(fourth);
                }
                assertThat(counter(fx, "strata.rpc.connections.refused")).isEqualTo(1.0);
                ping(fx, 2);
                // the second connection is served too
                second.getOutputStream().write(bytes(OutboundFrame.request(9, 0, CoreMessages.PING, new CoreMessage.Ping(9), Payload.NONE)));
                assertThat(readFrame(second).getLong(8)).as("request id answered").isEqualTo(9);

                third.close();
                await("the third connection's slot is free", () -> fx.server.connectionCount() == 2);
                try (Socket again = connect(fx.address())) {
                    assertStaysOpen(again, Duration.ofMillis(500));
                }
                assertThat(counter(fx, "strata.rpc.connections.refused")).isEqualTo(1.0);
            }
        }
    }

    @Test
    void aPeerThatStopsInTheMiddleOfAFrameIsClosedAfterTheReadTimeout() throws Exception {
        Duration readTimeout = Duration.ofMillis(300);
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS.withReadTimeout(readTimeout), b -> b)) {
            ping(fx, 1);
            try (Socket inHeader = connect(fx.address()); Socket inPayload = connect(fx.address());
                 Socket betweenFrames = connect(fx.address())) {
                inHeader.getOutputStream().write(header(CoreMessages.ECHO.tag(), 1, 4, MiB), 0, 10);
                inPayload.getOutputStream().write(header(CoreMessages.ECHO.tag(), 2, 4, MiB));
                inPayload.getOutputStream().write(new byte[4 + 200_000]);
                betweenFrames.getOutputStream().write(bytes(OutboundFrame.request(3, 0, CoreMessages.PING, new CoreMessage.Ping(3), Payload.NONE)));

                assertThat(closedByServer(inHeader)).isGreaterThanOrEqualTo(readTimeout.minusMillis(50));
                closedByServer(inPayload);
                // a connection that sends whole frames and then nothing is not in the middle of one
                assertThat(readFrame(betweenFrames).getLong(8)).isEqualTo(3);
                assertStaysOpen(betweenFrames, readTimeout.multipliedBy(3));
            }
            assertThat(counter(fx, "strata.rpc.connections.timed.out", "timeout", "read")).isEqualTo(2.0);
            assertThat(counter(fx, "strata.rpc.bad.frames")).as("a stall is not a malformed frame").isZero();
            ping(fx, 2);
        }
    }

    @Test
    void aSilentConnectionIsClosedAfterTheIdleTimeoutButNotOneAwaitingAnAnswer() throws Exception {
        Duration idle = Duration.ofMillis(500);
        ConcurrentLinkedQueue<CompletableFuture<Reply>> parked = new ConcurrentLinkedQueue<>();
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS.withIdleTimeout(idle), b -> b.handle(TestMessages.PARK, req -> {
            CompletableFuture<Reply> f = new CompletableFuture<>();
            parked.add(f);
            return f;
        }))) {
            CompletableFuture<Response> longPoll = fx.client.call(fx.address(), new TestMessages.Park(1), Payload.NONE, T);
            await("the request is parked", () -> parked.size() == 1);
            try (Socket silent = connect(fx.address())) {
                assertThat(closedByServer(silent)).isGreaterThanOrEqualTo(idle.minusMillis(50));
            }
            Thread.sleep(idle.multipliedBy(3).toMillis());
            assertThat(longPoll).as("the connection with a request in flight is kept").isNotDone();
            parked.poll().complete(Reply.of(new CoreMessage.Echoed(1, 0)));
            Futures.join(longPoll, T).close();
            assertThat(counter(fx, "strata.rpc.connections.timed.out", "timeout", "idle")).isEqualTo(1.0);
            await("the client's connection, now silent, is closed too", () -> fx.server.connectionCount() == 0);
            ping(fx, 2);
        }
    }

    @Test
    void aClientReplacesAQuietConnectionBeforeTheServerClosesIt() throws Exception {
        Duration idle = Duration.ofSeconds(1);
        ConcurrentLinkedQueue<SocketAddress> peers = new ConcurrentLinkedQueue<>();
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS.withIdleTimeout(idle), b -> b.handle(TestMessages.PARK, req -> {
            peers.add(req.peer());
            return CompletableFuture.completedFuture(Reply.of(new CoreMessage.Echoed(0, 0)));
        }))) {
            Futures.join(fx.client.call(fx.address(), new TestMessages.Park(1)), T).close();
            Futures.join(fx.client.call(fx.address(), new TestMessages.Park(2)), T).close();
            Thread.sleep(idle.multipliedBy(6).dividedBy(10).toMillis()); // past half the idle timeout
            Futures.join(fx.client.call(fx.address(), new TestMessages.Park(3)), T).close();
            List<SocketAddress> seen = List.copyOf(peers);
            assertThat(seen.get(1)).as("a busy connection is reused").isEqualTo(seen.get(0));
            assertThat(seen.get(2)).as("a quiet connection is replaced").isNotEqualTo(seen.get(1));
        }
    }

    /** A server running at most {@code limit} requests per connection, whose PARK requests wait in {@code parked} for an answer. */
    private static RpcFixture parkingServer(int limit, ConcurrentLinkedQueue<CompletableFuture<Reply>> parked) {
        return new RpcFixture(RpcOptions.DEFAULTS.withServerMaxInFlight(limit), b -> b.handle(TestMessages.PARK, req -> {
            CompletableFuture<Reply> f = new CompletableFuture<>();
            parked.add(f);
            return f;
        }));
    }

    @Test
    void overTheInFlightLimitTheServerStopsReadingUntilAnswersFreeSlots() throws Exception {
        int limit = 2;
        int requests = 48;
        ConcurrentLinkedQueue<CompletableFuture<Reply>> parked = new ConcurrentLinkedQueue<>();
        try (RpcFixture fx = parkingServer(limit, parked);
             Socket s = connect(fx.address())) {
            byte[] oneMiB = new byte[(int) MiB];
            CountDownLatch written = new CountDownLatch(1);
            Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    for (int i = 0; i < requests; i++) {
                        s.getOutputStream().write(bytes(OutboundFrame.request(i + 1, 0, TestMessages.PARK, new TestMessages.Park(i),
                                Payload.of(Unpooled.wrappedBuffer(oneMiB)))));
                    }
                    written.countDown();
                } catch (IOException e) {
                    // the test fails on the latch
                }
            });
            await("the limit is reached", () -> parked.size() == limit);
            assertThat(written.await(1, TimeUnit.SECONDS)).as("the server stopped reading: the sender is blocked").isFalse();
            assertThat(parked).as("no request beyond the limit is served").hasSize(limit);

            int answered = 0;
            long deadline = System.nanoTime() + T.toNanos();
            while (answered < requests && System.nanoTime() < deadline) {
                CompletableFuture<Reply> f = parked.poll();
                if (f == null) {
                    Thread.sleep(1);
                } else {
                    f.complete(Reply.of(new CoreMessage.Echoed(answered++, 0)));
                }
            }
            assertThat(answered).as("reading resumed as answers freed slots").isEqualTo(requests);
            assertThat(written.await(T.toSeconds(), TimeUnit.SECONDS)).isTrue();
            writer.join();
            for (int i = 0; i < requests; i++) {
                assertThat(readFrame(s).getShort(6)).as("status").isZero();
            }
        }
    }

    @Test
    void requestsReadInOneBurstWaitForAFreeSlot() throws Exception {
        int limit = 2;
        int requests = 10;
        ConcurrentLinkedQueue<CompletableFuture<Reply>> parked = new ConcurrentLinkedQueue<>();
        try (RpcFixture fx = parkingServer(limit, parked);
             Socket s = connect(fx.address())) {
            java.io.ByteArrayOutputStream burst = new java.io.ByteArrayOutputStream();
            for (int i = 0; i < requests; i++) {
                burst.write(bytes(OutboundFrame.request(i + 1, 0, TestMessages.PARK, new TestMessages.Park(i), Payload.NONE)));
            }
            s.getOutputStream().write(burst.toByteArray()); // one write: very likely one read on the server
            await("the limit is reached", () -> parked.size() == limit);
            Thread.sleep(300);
            assertThat(parked).as("requests beyond the limit wait").hasSize(limit);
            for (int answered = 0; answered < requests; answered++) {
                await("a request is parked", () -> !parked.isEmpty());
                assertThat(parked.size()).isLessThanOrEqualTo(limit);
                parked.poll().complete(Reply.of(new CoreMessage.Echoed(answered, 0)));
            }
            for (int i = 0; i < requests; i++) {
                assertThat(readFrame(s).getShort(6)).as("status").isZero();
            }
        }
    }
}
