package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import io.strata.core.util.Futures;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The RPC layer end to end over loopback TCP: real sockets, real event loops. */
class RpcTest {
    private static final Duration T = Duration.ofSeconds(10);

    private static StrataException failure(CompletableFuture<?> f) {
        try {
            Futures.join(f, T);
        } catch (StrataException e) {
            return e;
        }
        throw new AssertionError("call succeeded but should have failed");
    }

    @Test
    void pingReachesTheServerAndComesBack() {
        try (RpcFixture fx = new RpcFixture()) {
            CoreMessage.Pong pong = Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(99), CoreMessage.Pong.class), T);
            assertThat(pong.nonce()).isEqualTo(99);
            assertThat(pong.node()).isEqualTo("server");
        }
    }

    @Test
    void bulkPayloadsComeBackIntactAndConcurrentCallsAreMatchedToTheirCallers() {
        try (RpcFixture fx = new RpcFixture()) {
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                int size = (i * 7919) % (1 << 20);
                ByteBuf data = Unpooled.directBuffer(size);
                EchoService.fill(data, size, i);
                int crc = EchoService.crc32c(data);
                all.add(fx.client.call(fx.address(), new CoreMessage.Echo(CoreMessage.Echo.FLAG_RETURN | CoreMessage.Echo.FLAG_CHECKSUM),
                        Payload.of(data), T).thenAccept(r -> {
                            try (r) {
                                CoreMessage.Echoed e = r.message(CoreMessage.Echoed.class);
                                assertThat(e.bytes()).isEqualTo(size);
                                assertThat(e.crc32c()).isEqualTo(crc);
                                assertThat(EchoService.crc32c(r.payload())).isEqualTo(crc);
                            }
                        }));
            }
            Futures.join(CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)), Duration.ofSeconds(60));
            assertThat(fx.server.connectionCount()).as("connections are reused").isEqualTo(1);
        }
    }

    @Test
    void serverErrorsKeepTheirStatusAndDetail() {
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS, b -> b.handle(TestMessages.FAIL, req -> {
            TestMessages.Fail m = req.message();
            Status s = Status.fromCode(m.status());
            throw s == Status.STALE_CHAIN_VERSION ? new StrataException.StaleRouting("chain moved", m.version())
                    : new StrataException(s, "failed as asked");
        }))) {
            StrataException e = failure(fx.client.call(fx.address(), new TestMessages.Fail(Status.STALE_CHAIN_VERSION.code(), 12)));
            assertThat(e).isInstanceOf(StrataException.StaleRouting.class);
            assertThat(((StrataException.StaleRouting) e).currentVersion()).isEqualTo(12);
            assertThat(failure(fx.client.call(fx.address(), new TestMessages.Fail(Status.NO_SPACE.code(), 0))).status())
                    .isEqualTo(Status.NO_SPACE);
            // the connection survives application errors
            assertThat(Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(1), CoreMessage.Pong.class), T).nonce()).isEqualTo(1);
        }
    }

    @Test
    void unknownMessagesAreAnsweredNotFatal() {
        try (RpcFixture fx = new RpcFixture()) {
            StrataException e = failure(fx.client.call(fx.address(), new TestMessages.Unknown()));
            assertThat(e.status()).isEqualTo(Status.UNKNOWN_MESSAGE);
            assertThat(e).hasMessageContaining("unknown message tag 60099");
            assertThat(Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(2), CoreMessage.Pong.class), T).nonce()).isEqualTo(2);
        }
    }

    @Test
    void aCallPastItsDeadlineFailsWithTimeout() {
        ConcurrentLinkedQueue<CompletableFuture<Reply>> parked = new ConcurrentLinkedQueue<>();
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS, b -> b.handle(TestMessages.PARK, req -> {
            CompletableFuture<Reply> f = new CompletableFuture<>();
            parked.add(f);
            return f;
        }))) {
            long t0 = System.nanoTime();
            StrataException e = failure(fx.client.call(fx.address(), new TestMessages.Park(1), Payload.NONE, Duration.ofMillis(200)));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(e.status()).isEqualTo(Status.TIMEOUT);
            assertThat(e).hasMessageContaining("Park").hasMessageContaining("timed out after 200 ms");
            assertThat(ms).isBetween(150L, 5000L);
            // a late answer is dropped quietly and the connection goes on
            parked.forEach(f -> f.complete(Reply.of(new CoreMessage.Echoed(0, 0))));
            assertThat(Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(3), CoreMessage.Pong.class), T).nonce()).isEqualTo(3);
        }
    }

    @Test
    void aServerThatVanishesMidRequestFailsTheCallerPromptly() {
        ConcurrentLinkedQueue<CompletableFuture<Reply>> parked = new ConcurrentLinkedQueue<>();
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS, b -> b.handle(TestMessages.PARK, req -> {
            CompletableFuture<Reply> f = new CompletableFuture<>();
            parked.add(f);
            return f;
        }))) {
            CompletableFuture<Response> call = fx.client.call(fx.address(), new TestMessages.Park(1), Payload.NONE, Duration.ofSeconds(60));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (parked.isEmpty() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            long t0 = System.nanoTime();
            fx.server.close();
            StrataException e = failure(call);
            assertThat(e.status()).isEqualTo(Status.CONNECTION_LOST);
            assertThat(e).hasMessageContaining("1 requests in flight");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isLessThan(3000);
            // and a new call fails to connect with a clear status, not a hang
            assertThat(failure(fx.client.call(fx.address(), new CoreMessage.Ping(1))).status()).isEqualTo(Status.CONNECTION_FAILED);
            parked.forEach(f -> f.complete(Reply.of(new CoreMessage.Echoed(0, 0))));
        }
    }

    /**
     * Calls to an address nobody listens on fail with CONNECTION_FAILED, from several threads at
     * once. A call that reached its connection's event loop after the connect had failed used to
     * fail with CONNECTION_LOST instead (seen once in CI, in
     * {@link #aServerThatVanishesMidRequestFailsTheCallerPromptly}); that interleaving is rare and
     * this burst does not force it, so it guards the status, not the race.
     */
    @Test
    void callsToAnAddressNobodyListensOnFailWithConnectionFailed() throws Exception {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        java.net.InetSocketAddress nobody = new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port);
        try (RpcFixture fx = new RpcFixture()) {
            java.util.List<CompletableFuture<Response>> calls = new java.util.ArrayList<>();
            Thread[] ts = new Thread[4];
            for (int t = 0; t < ts.length; t++) {
                ts[t] = Thread.ofPlatform().start(() -> {
                    for (int i = 0; i < 200; i++) {
                        CompletableFuture<Response> f = fx.client.call(nobody, new CoreMessage.Ping(i));
                        synchronized (calls) {
                            calls.add(f);
                        }
                    }
                });
            }
            for (Thread t : ts) {
                t.join();
            }
            for (CompletableFuture<Response> f : calls) {
                assertThat(failure(f).status()).isEqualTo(Status.CONNECTION_FAILED);
            }
        }
    }

    @Test
    void inFlightIsBoundedAndTheQueueOverflowsWithOverloaded() {
        ConcurrentLinkedQueue<CompletableFuture<Reply>> parked = new ConcurrentLinkedQueue<>();
        RpcOptions tight = RpcOptions.DEFAULTS.withMaxInFlight(2).withMaxQueued(3);
        try (RpcFixture fx = new RpcFixture(tight, b -> b.handle(TestMessages.PARK, req -> {
            CompletableFuture<Reply> f = new CompletableFuture<>();
            parked.add(f);
            return f;
        }))) {
            Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(0)), T).close(); // connected
            List<CompletableFuture<Response>> calls = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                calls.add(fx.client.call(fx.address(), new TestMessages.Park(i), Payload.NONE, T));
            }
            assertThat(failure(calls.get(5)).status()).isEqualTo(Status.OVERLOADED);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (parked.size() < 2 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(parked).as("only maxInFlight requests reach the server").hasSize(2);
            // answering frees slots: the queued calls go out and complete
            int answered = 0;
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (answered < 5 && System.nanoTime() < deadline) {
                CompletableFuture<Reply> f = parked.poll();
                if (f != null) {
                    f.complete(Reply.of(new CoreMessage.Echoed(answered, 0)));
                    answered++;
                }
            }
            for (int i = 0; i < 5; i++) {
                Futures.join(calls.get(i), T).close();
            }
        }
    }

    @Test
    void garbageOnOneConnectionClosesOnlyThatConnection() throws Exception {
        try (RpcFixture fx = new RpcFixture()) {
            Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(1)), T).close();
            try (Socket raw = new Socket(fx.address().getAddress(), fx.address().getPort())) {
                OutputStream out = raw.getOutputStream();
                out.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes());
                out.flush();
                raw.setSoTimeout(5000);
                assertThat(raw.getInputStream().read()).as("server closes the bad connection").isEqualTo(-1);
            }
            assertThat(Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(4), CoreMessage.Pong.class), T).nonce()).isEqualTo(4);
        }
    }

    @Test
    void faultsDropDelayDuplicateAndDisconnect() {
        try (RpcFixture fx = new RpcFixture()) {
            var drop = fx.clientFaults.arm(FaultPoint.RPC_SEND, new Fault.Drop()).when(s -> s.message().equals("Ping")).times(1);
            assertThat(failure(fx.client.call(fx.address(), new CoreMessage.Ping(1), Payload.NONE, Duration.ofMillis(300))).status())
                    .isEqualTo(Status.TIMEOUT);
            assertThat(drop.fired()).isEqualTo(1);

            fx.serverFaults.arm(FaultPoint.RPC_SEND, new Fault.Delay(Duration.ofMillis(300))).times(1);
            long t0 = System.nanoTime();
            Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(2)), T).close();
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isGreaterThanOrEqualTo(250);

            // a duplicated request is served twice; the caller sees one answer
            java.util.concurrent.atomic.AtomicInteger served = new java.util.concurrent.atomic.AtomicInteger();
            fx.serverCtx.meters().counter("x"); // unrelated meter, registry stays usable
            fx.clientFaults.arm(FaultPoint.RPC_SEND, new Fault.Duplicate()).when(s -> s.message().equals("Echo")).times(1);
            ByteBuf data = Unpooled.copiedBuffer(new byte[]{1, 2, 3});
            try (Response r = Futures.join(fx.client.call(fx.address(), new CoreMessage.Echo(CoreMessage.Echo.FLAG_RETURN), Payload.of(data), T), T)) {
                assertThat(r.payload().readableBytes()).isEqualTo(3);
                served.incrementAndGet();
            }
            assertThat(fx.serverCtx.meters().find("strata.rpc.served").tag("message", "Echo").counter().count()).isEqualTo(2.0);

            fx.clientFaults.arm(FaultPoint.RPC_SEND, new Fault.Disconnect()).when(s -> s.message().equals("Ping")).times(1);
            assertThat(failure(fx.client.call(fx.address(), new CoreMessage.Ping(3))).status()).isEqualTo(Status.CONNECTION_LOST);
            // the client reconnects on the next call
            assertThat(Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(5), CoreMessage.Pong.class), T).nonce()).isEqualTo(5);
        }
    }

    @Test
    void payloadsCanBeSentStraightFromAFile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("chunk");
        byte[] content = new byte[300_000];
        new java.util.Random(5).nextBytes(content);
        Files.write(file, content);
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS, b -> b.handle(TestMessages.PARK, req -> {
            FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
            return CompletableFuture.completedFuture(Reply.of(new CoreMessage.Echoed(100_000, 0), Payload.ofFile(ch, 100_000, 100_000)));
        }))) {
            try (Response r = Futures.join(fx.client.call(fx.address(), new TestMessages.Park(0)), T)) {
                byte[] got = new byte[r.payload().readableBytes()];
                r.payload().readBytes(got);
                assertThat(got).isEqualTo(java.util.Arrays.copyOfRange(content, 100_000, 200_000));
            }
        }
    }

    @Test
    void oversizedPayloadIsRejectedByTheReceiver() {
        RpcOptions small = RpcOptions.DEFAULTS.withMaxPayload(io.strata.core.DataSize.ofKiB(64));
        try (RpcFixture fx = new RpcFixture(small, b -> b)) {
            StrataException e = failure(fx.client.call(fx.address(), new CoreMessage.Echo(0),
                    Payload.of(Unpooled.wrappedBuffer(new byte[128 * 1024])), T));
            assertThat(e.status()).isEqualTo(Status.CONNECTION_LOST);
            assertThat(Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(6), CoreMessage.Pong.class), T).nonce()).isEqualTo(6);
        }
    }
}
