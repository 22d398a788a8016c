package io.strata.core.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.rpc.CoreMessage.Ping;
import io.strata.core.rpc.CoreMessage.Pong;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An authenticating server runs at most {@code serverMaxInFlightPerIdentity} requests of one
 * identity at once, however many connections it opens: its further requests wait (the
 * connections stop reading) and all are served once earlier ones finish, while another
 * identity's requests are served at once.
 */
class IdentityLimitTest {
    private static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES);
    private static final Duration T = Duration.ofSeconds(20);
    private static final int LIMIT = 4;

    private final ClusterKey key = ClusterKey.generate();
    private final List<AutoCloseable> open = new ArrayList<>();
    /** Requests being served: the nonce (alice's are below 1000) and the answer the test completes. */
    private final ConcurrentLinkedQueue<Object[]> pending = new ConcurrentLinkedQueue<>();
    private final AtomicInteger aliceRunning = new AtomicInteger();
    private final AtomicInteger aliceMax = new AtomicInteger();
    private final AtomicInteger bobServed = new AtomicInteger();

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <C extends AutoCloseable> C keep(C c) {
        open.add(c);
        return c;
    }

    private RpcClient client(String subject) {
        Credentials who = Credentials.of(Token.issue(key, Role.CLIENT, subject, Instant.now(), Duration.ofHours(1)));
        return keep(new RpcClient(keep(NodeContext.builder(subject).eventLoopThreads(1).credentials(who).build()), PROTOCOL, RpcOptions.DEFAULTS));
    }

    /** Pings below 1000 are alice's, counted; 1000-1999 bob's; from 2000 long polls (they wait by design). */
    private RpcServer server(NodeContext sctx) {
        return keep(RpcServer.builder(sctx, PROTOCOL).options(RpcOptions.DEFAULTS.withServerMaxInFlightPerIdentity(LIMIT))
                .handle(CoreMessages.PING, req -> {
                    long nonce = req.message().nonce();
                    CompletableFuture<Reply> answer = new CompletableFuture<>();
                    if (nonce >= 2000) {
                        req.waitsByDesign();
                    } else if (nonce < 1000) {
                        aliceMax.accumulateAndGet(aliceRunning.incrementAndGet(), Math::max);
                    } else {
                        bobServed.incrementAndGet();
                    }
                    pending.add(new Object[] {nonce, answer});
                    return answer;
                }).bind("127.0.0.1", 0));
    }

    @Test
    void oneIdentityRunsAtMostItsLimitOverAllItsConnectionsAndAnotherIsNotHeldUp() throws Exception {
        // three event loops: connections on different loops count apart (at most one more per other loop)
        NodeContext sctx = keep(NodeContext.builder("server").eventLoopThreads(3).verifier(new TokenVerifier(key)).build());
        RpcServer server = server(sctx);
        List<CompletableFuture<Pong>> calls = new ArrayList<>();
        for (int c = 0; c < 3; c++) {
            RpcClient alice = client("alice"); // three connections of one identity
            for (int i = 0; i < 10; i++) {
                calls.add(alice.call(server.address(), new Ping(c * 10 + i), Pong.class));
            }
        }
        Eventually.await("alice's first requests run", T, () -> aliceRunning.get() >= LIMIT);
        Thread.sleep(300);
        assertThat(aliceRunning.get()).as("alice, 30 requests over 3 connections").isBetween(LIMIT, LIMIT + 2);

        CompletableFuture<Pong> bob = client("bob").call(server.address(), new Ping(1000), Pong.class);
        Eventually.await("bob is served while alice waits", T, () -> bobServed.get() == 1);

        while (calls.stream().anyMatch(f -> !f.isDone()) || !bob.isDone()) {
            Object[] p = pending.poll();
            if (p == null) {
                Thread.sleep(5);
                continue;
            }
            long nonce = (Long) p[0];
            @SuppressWarnings("unchecked")
            CompletableFuture<Reply> answer = (CompletableFuture<Reply>) p[1];
            if (nonce < 1000) {
                aliceRunning.decrementAndGet(); // before the answer: the server may start the next at once
            }
            answer.complete(Reply.of(new Pong(nonce, "server", "test")));
        }
        for (int i = 0; i < calls.size(); i++) {
            assertThat(Futures.join(calls.get(i), T).nonce()).isEqualTo(i);
        }
        assertThat(Futures.join(bob, T).nonce()).isEqualTo(1000);
        assertThat(aliceMax.get()).as("alice never ran more than her limit (and one per other event loop)").isBetween(LIMIT, LIMIT + 2);
        assertThat(sctx.meters().find("strata.rpc.server.identity.paused").counter().count()).isPositive();
    }

    @Test
    void longPollsHoldNoSlotOfTheirIdentity() throws Exception {
        NodeContext sctx = keep(NodeContext.builder("server").eventLoopThreads(1).verifier(new TokenVerifier(key)).build());
        RpcServer server = server(sctx);
        List<CompletableFuture<Pong>> polls = new ArrayList<>();
        for (int c = 0; c < 2; c++) {
            RpcClient processes = client("lab"); // processes sharing one token, each parking long polls
            for (int i = 0; i < LIMIT; i++) {
                polls.add(processes.call(server.address(), new Ping(2000 + c * 10 + i), Pong.class));
            }
        }
        Eventually.await("the long polls are parked", T, () -> pending.size() == 2 * LIMIT);
        CompletableFuture<Pong> call = client("lab").call(server.address(), new Ping(1500), Pong.class);
        Eventually.await("a call of the same identity is served while " + 2 * LIMIT + " long polls wait", T, () -> bobServed.get() == 1);
        Object[] p;
        while ((p = pending.poll()) != null) {
            @SuppressWarnings("unchecked")
            CompletableFuture<Reply> answer = (CompletableFuture<Reply>) p[1];
            answer.complete(Reply.of(new Pong((Long) p[0], "server", "test")));
        }
        assertThat(Futures.join(call, T).nonce()).isEqualTo(1500);
        for (CompletableFuture<Pong> f : polls) {
            assertThat(Futures.join(f, T).nonce()).isGreaterThanOrEqualTo(2000);
        }
        assertThat(sctx.meters().find("strata.rpc.server.identity.paused").counter().count()).as("never paused").isZero();
    }
}
