package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;

/**
 * A call on the foreground lane is never stuck behind a bulk call to the same peer: the server
 * reads each connection in order, so a call can only overtake the ones on other connections.
 * The server here runs one request per connection and parks it, which stops it reading that
 * connection, the way a connection full of megabytes of payload would hold a small call back.
 */
class RpcLaneTest {
    private static final Duration T = Duration.ofSeconds(10);

    private record Parked(SocketAddress peer, CompletableFuture<Reply> answer) {
    }

    private static RpcFixture parkingServer(ConcurrentLinkedQueue<Parked> parked) {
        return new RpcFixture(RpcOptions.DEFAULTS.withServerMaxInFlight(1), b -> b.handle(TestMessages.PARK, req -> {
            CompletableFuture<Reply> f = new CompletableFuture<>();
            parked.add(new Parked(req.peer(), f));
            return f;
        }));
    }

    private static CompletableFuture<Response> park(RpcFixture fx, int id, RpcClient.Lane lane) {
        return fx.client.call(fx.address(), new TestMessages.Park(id), Payload.NONE, T, lane);
    }

    @Test
    void aForegroundCallIsServedWhileABulkCallHoldsItsConnection() throws Exception {
        ConcurrentLinkedQueue<Parked> parked = new ConcurrentLinkedQueue<>();
        try (RpcFixture fx = parkingServer(parked)) {
            CompletableFuture<Response> bulk = park(fx, 1, RpcClient.Lane.BULK);
            Eventually.await("the bulk call reached the server", T, () -> parked.size() == 1);
            CompletableFuture<Response> foreground = park(fx, 2, RpcClient.Lane.FOREGROUND);
            Eventually.await("the foreground call reached the server beside it", T, () -> parked.size() == 2);

            Parked[] both = parked.toArray(Parked[]::new);
            assertThat(both[1].peer()).as("the lanes use different connections").isNotEqualTo(both[0].peer());
            both[1].answer().complete(Reply.of(new CoreMessage.Echoed(0, 0)));
            Futures.join(foreground, T).close();
            assertThat(bulk).as("the bulk call is still parked").isNotDone();
            both[0].answer().complete(Reply.of(new CoreMessage.Echoed(0, 0)));
            Futures.join(bulk, T).close();
        }
    }

    @Test
    void callsOnOneLaneShareItsConnectionAndQueueInOrder() throws Exception {
        ConcurrentLinkedQueue<Parked> parked = new ConcurrentLinkedQueue<>();
        try (RpcFixture fx = parkingServer(parked)) {
            CompletableFuture<Response> first = park(fx, 1, RpcClient.Lane.BULK);
            Eventually.await("the first call reached the server", T, () -> parked.size() == 1);
            CompletableFuture<Response> second = park(fx, 2, RpcClient.Lane.BULK);
            Thread.sleep(300);
            assertThat(parked).as("the second call waits behind the first on their connection").hasSize(1);

            parked.poll().answer().complete(Reply.of(new CoreMessage.Echoed(0, 0)));
            Futures.join(first, T).close();
            Eventually.await("the second call is read once the first is answered", T, () -> parked.size() == 1);
            parked.poll().answer().complete(Reply.of(new CoreMessage.Echoed(0, 0)));
            Futures.join(second, T).close();
        }
    }
}
