package io.strata.core.rpc;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.core.auth.Token;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The requests one server runs at once per identity (a token's role and subject), over all of
 * that identity's connections: {@link RpcOptions#serverMaxInFlightPerIdentity()}. Opening more
 * connections does not get an identity more of the server; a connection whose identity is at its
 * limit stops reading (its peer's sends wait in the socket) until a request of that identity
 * finishes, as a connection at its own limit does. Connections on different event loops check
 * and count apart, so the count may pass the limit by at most one request per other event loop.
 * A long poll ({@link Request#waitsByDesign()}) gives its slot back as soon as its handler says
 * so: processes that share a token each park one, and those must not use the identity up.
 */
final class IdentityLimits {
    private final int limit;
    private final ConcurrentHashMap<String, Identity> identities = new ConcurrentHashMap<>();
    private final Counter paused;

    IdentityLimits(int limit, MeterRegistry meters) {
        this.limit = limit;
        this.paused = Counter.builder("strata.rpc.server.identity.paused")
                .description("times a connection stopped reading because its identity had as many requests running as "
                        + "rpc.server-max-in-flight-per-identity allows").register(meters);
    }

    Identity of(Token t) {
        return identities.computeIfAbsent(t.role().id() + ":" + t.subject(), k -> new Identity());
    }

    /** One identity's requests running on this server, and the connections waiting for one to finish. */
    final class Identity {
        private final AtomicInteger running = new AtomicInteger();
        private final Set<Runnable> waiting = ConcurrentHashMap.newKeySet();

        boolean full() {
            return running.get() >= limit;
        }

        void started() {
            running.incrementAndGet();
        }

        void finished() {
            running.decrementAndGet();
            wakeAll();
        }

        /** {@code wake} runs (once) when a request of this identity finishes; at once if one did meanwhile. */
        void await(Runnable wake) {
            waiting.add(wake);
            if (!full()) {
                wakeAll();
            }
        }

        /** A connection of this identity stopped reading for its limit (counted once per pause). */
        void paused() {
            paused.increment();
        }

        void forget(Runnable wake) {
            waiting.remove(wake);
        }

        private void wakeAll() {
            for (Runnable r : waiting) {
                if (waiting.remove(r)) {
                    r.run();
                }
            }
        }
    }
}
