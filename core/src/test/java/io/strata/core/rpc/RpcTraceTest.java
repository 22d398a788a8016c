package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.trace.SlowOps;
import io.strata.core.trace.Trace;
import io.strata.core.util.Futures;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A call carries the trace id of the operation it was made for to the server, whose handler
 * runs under it; a slow call is kept on both sides under that id, so the hops join up.
 */
class RpcTraceTest {
    private static final Duration T = Duration.ofSeconds(10);

    @Test
    void theCallersTraceReachesTheHandlerAndBothSidesKeepTheSlowCallUnderIt() {
        AtomicLong seen = new AtomicLong(-1);
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS, b -> b.handle(TestMessages.PARK, req -> {
            seen.set(Trace.current());
            CompletableFuture<Reply> f = new CompletableFuture<>();
            req.note("waited for a test");
            CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS)
                    .execute(() -> f.complete(Reply.of(new CoreMessage.Echoed(0, 0))));
            return f;
        }))) {
            long id = Trace.newId();
            try (Trace.Scope s = Trace.open(id)) {
                Futures.join(fx.client.call(fx.address(), new TestMessages.Park(1)), T).close();
            }
            assertThat(seen.get()).as("the handler ran under the caller's trace").isEqualTo(id);

            List<SlowOps.Op> called = fx.clientCtx.slowOps().recent();
            assertThat(called).singleElement().satisfies(op -> {
                assertThat(op.trace()).isEqualTo(id);
                assertThat(op.hop()).isEqualTo("call");
                assertThat(op.what()).startsWith("Park to 127.0.0.1:");
                assertThat(op.millis()).isGreaterThanOrEqualTo(300);
                assertThat(op.detail()).isEqualTo("OK");
            });
            Eventually.awaitTrue(() -> !fx.serverCtx.slowOps().recent().isEmpty());
            assertThat(fx.serverCtx.slowOps().recent()).singleElement().satisfies(op -> {
                assertThat(op.trace()).isEqualTo(id);
                assertThat(op.hop()).isEqualTo("serve");
                assertThat(op.what()).startsWith("Park from ");
                assertThat(op.detail()).isEqualTo("OK; waited for a test");
            });

            Futures.join(fx.client.call(fx.address(), new TestMessages.Park(2)), T).close();
            assertThat(seen.get()).as("a call made outside any operation carries none").isZero();
            assertThat(fx.clientCtx.slowOps().recent()).last().extracting(SlowOps.Op::trace).isEqualTo(0L);
        }
    }

    @Test
    void aCallThatWaitsByDesignIsNotKeptOnEitherSide() {
        try (RpcFixture fx = new RpcFixture(RpcOptions.DEFAULTS, b -> b.handle(TestMessages.PARK, req -> {
            req.waitsByDesign();
            CompletableFuture<Reply> f = new CompletableFuture<>();
            CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS)
                    .execute(() -> f.complete(Reply.of(new CoreMessage.Echoed(0, 0))));
            return f;
        }))) {
            try (Trace.Scope s = Trace.begin()) {
                Futures.join(fx.client.call(fx.address(), new TestMessages.Park(1), Payload.NONE, T, RpcClient.Lane.WAIT), T).close();
            }
            assertThat(fx.clientCtx.slowOps().recent()).isEmpty();
            assertThat(fx.serverCtx.slowOps().recent()).isEmpty();
        }
    }

    @Test
    void aFastCallIsNotKept() {
        try (RpcFixture fx = new RpcFixture()) {
            try (Trace.Scope s = Trace.begin()) {
                Futures.join(fx.client.call(fx.address(), new CoreMessage.Ping(1), CoreMessage.Pong.class), T);
            }
            assertThat(fx.clientCtx.slowOps().recent()).isEmpty();
            assertThat(fx.serverCtx.slowOps().recent()).isEmpty();
        }
    }

    private static final class Eventually {
        static void awaitTrue(java.util.function.BooleanSupplier c) {
            io.strata.core.util.Eventually.await("the server kept the slow request", T, c);
        }
    }
}
