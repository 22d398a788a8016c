package io.strata.core.qos;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.strata.core.tier.QosClass;
import io.strata.core.time.StrataClock;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The bytes one client may have in flight per QoS class. A class with a limit waits, without
 * holding a thread, until its earlier transfers have completed; a class without one is never
 * held. It keeps bulk work (a checkpoint save, a prefetch, a drain) from filling the client's
 * connections and the storage nodes' queues, where latency-sensitive reads would wait behind it.
 *
 * <p>A transfer larger than its class's limit runs when nothing else of the class is in flight,
 * so no size is refused. Waiters of a class are admitted in arrival order.
 *
 * <p>Recorded per class (tag {@code class}): {@code strata.client.qos.queued} (time transfers
 * waited for budget), {@code strata.client.qos.delayed.bytes} (bytes of the transfers that
 * waited at all) and {@code strata.client.qos.in.flight} (bytes in flight now).
 */
public final class InFlightBudget {
    /** A granted share; {@link #close} returns it (once). */
    public interface Grant extends AutoCloseable {
        @Override
        void close();
    }

    private static final Grant NONE = () -> { };

    private final Map<QosClass, ClassState> classes = new EnumMap<>(QosClass.class);
    private final StrataClock clock;

    /** {@code limits}: bytes per class; a class missing or mapped to 0 is not limited. */
    public InFlightBudget(Map<QosClass, Long> limits, StrataClock clock, MeterRegistry meters) {
        this.clock = clock;
        for (QosClass c : QosClass.values()) {
            long limit = limits.getOrDefault(c, 0L);
            if (limit < 0) {
                throw new IllegalArgumentException("in-flight limit of " + c.policyName() + " must be >= 0, got " + limit);
            }
            if (limit > 0) {
                classes.put(c, new ClassState(c, limit, meters));
            }
        }
    }

    /** Whether {@code c} is limited at all. */
    public boolean limits(QosClass c) {
        return classes.containsKey(c);
    }

    /** Completes when {@code bytes} of class {@code c} may go out; close the grant when they are done. */
    public CompletableFuture<Grant> acquire(QosClass c, long bytes) {
        ClassState lane = classes.get(c);
        if (lane == null || bytes <= 0) {
            return CompletableFuture.completedFuture(NONE);
        }
        return lane.acquire(bytes);
    }

    /** Bytes of class {@code c} in flight now (0 for a class without a limit). */
    public long inFlight(QosClass c) {
        ClassState lane = classes.get(c);
        return lane == null ? 0 : lane.used();
    }

    private final class ClassState {
        private final long limit;
        private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
        private final Timer queued;
        private final Counter delayed;
        private long used;

        ClassState(QosClass c, long limit, MeterRegistry meters) {
            this.limit = limit;
            this.queued = Timer.builder("strata.client.qos.queued").description("time transfers waited for their class's in-flight budget")
                    .tag("class", c.policyName()).register(meters);
            this.delayed = Counter.builder("strata.client.qos.delayed.bytes").description("bytes of transfers that waited for budget")
                    .tag("class", c.policyName()).register(meters);
            Gauge.builder("strata.client.qos.in.flight", this, ClassState::used).description("bytes in flight")
                    .tag("class", c.policyName()).baseUnit("bytes").register(meters);
        }

        CompletableFuture<Grant> acquire(long bytes) {
            long charge = Math.min(bytes, limit);
            synchronized (this) {
                if (waiters.isEmpty() && used + charge <= limit) {
                    used += charge;
                    queued.record(0, TimeUnit.NANOSECONDS);
                    return CompletableFuture.completedFuture(grant(charge));
                }
                Waiter w = new Waiter(charge, bytes, clock.nanoTime(), new CompletableFuture<>());
                waiters.add(w);
                return w.done;
            }
        }

        private Grant grant(long charge) {
            return new Grant() {
                private boolean closed;

                @Override
                public void close() {
                    synchronized (ClassState.this) {
                        if (closed) {
                            return;
                        }
                        closed = true;
                    }
                    release(charge);
                }
            };
        }

        private void release(long charge) {
            List<Waiter> admitted = new ArrayList<>();
            synchronized (this) {
                used -= charge;
                while (!waiters.isEmpty() && used + waiters.peek().charge <= limit) {
                    Waiter w = waiters.poll();
                    used += w.charge;
                    admitted.add(w);
                }
            }
            long now = clock.nanoTime();
            for (Waiter w : admitted) { // completed outside the lock: the continuation sends the transfer
                queued.record(now - w.since, TimeUnit.NANOSECONDS);
                delayed.increment(w.bytes);
                w.done.complete(grant(w.charge));
            }
        }

        synchronized long used() {
            return used;
        }
    }

    private record Waiter(long charge, long bytes, long since, CompletableFuture<Grant> done) {
    }
}
