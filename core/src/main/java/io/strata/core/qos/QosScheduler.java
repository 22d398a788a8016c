package io.strata.core.qos;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.strata.core.time.StrataClock;
import io.strata.core.tier.QosClass;
import io.strata.core.trace.SlowOps;
import io.strata.core.trace.Trace;
import java.util.ArrayDeque;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Orders one device's operations by class, in the manner of mClock: at most {@code slots}
 * operations run at once, and when a slot frees the next operation is chosen in two phases.
 * First, a class behind its reservation (its reservation clock is not ahead of now) is served,
 * the one furthest behind first. Otherwise the classes under their limit compete by weight: each
 * class's proportional clock advances by cost / weight when served, and the smallest clock wins,
 * so over a busy period each class gets bytes in proportion to its weight. A class that was idle
 * starts at the clock of the busiest competitor, so idling earns no credit. When every waiting
 * class is over its limit the scheduler waits for the earliest limit clock.
 *
 * <p>An operation is a function returning a future; its slot is held until the future
 * completes. Per class it records time queued ({@code strata.qos.queued}), bytes that had to
 * wait ({@code strata.qos.delayed.bytes}) and the queue's depth, tagged with the device.
 */
public final class QosScheduler {
    /** Nanoseconds one byte advances a proportional clock at weight 1 (1 GiB/s nominal). */
    private static final double NANOS_PER_BYTE = 1e9 / (1L << 30);

    private final StrataClock clock;
    private final String device;
    private final SlowOps slowOps;
    private final ScheduledExecutorService timer;
    private final QosShares shares;
    private final Map<QosClass, ClassState> classes = new EnumMap<>(QosClass.class);
    private int running;
    private boolean timerArmed;
    /** Set while this thread dispatches: an operation that completes at once must not recurse into another dispatch. */
    private final ThreadLocal<Boolean> dispatching = ThreadLocal.withInitial(() -> false);

    private final class ClassState {
        final QosShares.Share share;
        final ArrayDeque<Pending<?>> queue = new ArrayDeque<>();
        final Timer queued;
        final Counter delayed;
        long reservationClock;
        long limitClock;
        double proportionalClock;

        ClassState(QosClass c, String device, MeterRegistry meters) {
            this.share = shares.share(c);
            this.queued = Timer.builder("strata.qos.queued").description("time operations waited for a device slot")
                    .tag("class", c.policyName()).tag("device", device).register(meters);
            this.delayed = Counter.builder("strata.qos.delayed.bytes").description("bytes of operations that had to wait")
                    .tag("class", c.policyName()).tag("device", device).register(meters);
            Gauge.builder("strata.qos.queue", this, s -> depth(s)).description("operations waiting for a device slot")
                    .tag("class", c.policyName()).tag("device", device).register(meters);
        }
    }

    private record Pending<T>(QosClass c, long bytes, long arrived, long trace, Consumer<Supplier<String>> notes,
                              Supplier<CompletableFuture<T>> op, CompletableFuture<T> result) {
    }

    public QosScheduler(String device, QosShares shares, StrataClock clock, ScheduledExecutorService timer, MeterRegistry meters) {
        this(device, shares, clock, timer, meters, null);
    }

    /**
     * A scheduler that also keeps every operation that took at least the slow-op threshold from
     * submission to completion in {@code slowOps} (hop {@code disk}: how long it queued for a
     * slot and how long the device took), under the trace id of the thread that submitted it.
     */
    public QosScheduler(String device, QosShares shares, StrataClock clock, ScheduledExecutorService timer, MeterRegistry meters,
                        SlowOps slowOps) {
        this.device = device;
        this.slowOps = slowOps;
        this.shares = shares;
        this.clock = clock;
        this.timer = timer;
        for (QosClass c : QosClass.values()) {
            classes.put(c, new ClassState(c, device, meters));
        }
    }

    public QosShares shares() {
        return shares;
    }

    /**
     * Runs {@code op} when its class's turn comes (at once when scheduling is off); the returned
     * future completes as the operation's does. {@code bytes} is what the operation moves.
     */
    public <T> CompletableFuture<T> submit(QosClass c, long bytes, Supplier<CompletableFuture<T>> op) {
        long now = clock.nanoTime();
        if (!shares.enabled()) {
            return timed(c, bytes, now, now, Trace.current(), Trace.notes(), op);
        }
        CompletableFuture<T> result = new CompletableFuture<>();
        Pending<T> p = new Pending<>(c, Math.max(0, bytes), now, Trace.current(), Trace.notes(), op, result);
        synchronized (this) {
            ClassState s = classes.get(c);
            if (s.queue.isEmpty()) {
                activate(s, p.arrived);
            }
            s.queue.add(p);
        }
        dispatch();
        return result;
    }

    /** Operations running now (tests, metrics). */
    public synchronized int running() {
        return running;
    }

    private synchronized int depth(ClassState s) {
        return s.queue.size();
    }

    /** A class with nothing queued starts again from now and from the busiest competitor's clock. */
    private void activate(ClassState s, long now) {
        s.reservationClock = Math.max(s.reservationClock, now);
        s.limitClock = Math.max(s.limitClock, now);
        double least = Double.MAX_VALUE;
        for (ClassState o : classes.values()) {
            if (o != s && !o.queue.isEmpty()) {
                least = Math.min(least, o.proportionalClock);
            }
        }
        s.proportionalClock = Math.max(s.proportionalClock, least == Double.MAX_VALUE ? now : least);
    }

    private void dispatch() {
        if (dispatching.get()) {
            return; // the dispatch loop further up this thread's stack looks again
        }
        dispatching.set(true);
        try {
            dispatchLoop();
        } finally {
            dispatching.set(false);
        }
    }

    private void dispatchLoop() {
        while (true) {
            Pending<?> next;
            long wait;
            synchronized (this) {
                if (running >= shares.slots()) {
                    return;
                }
                long now = clock.nanoTime();
                ClassState pick = pick(now);
                if (pick == null) {
                    wait = earliestLimit(now);
                    if (wait > 0 && !timerArmed) {
                        timerArmed = true;
                        timer.schedule(() -> {
                            synchronized (this) {
                                timerArmed = false;
                            }
                            dispatch();
                        }, wait, TimeUnit.NANOSECONDS);
                    }
                    return;
                }
                next = pick.queue.poll();
                running++;
                long waited = now - next.arrived;
                pick.queued.record(waited, TimeUnit.NANOSECONDS);
                if (waited > TimeUnit.MILLISECONDS.toNanos(1)) {
                    pick.delayed.increment(next.bytes);
                }
            }
            start(next);
        }
    }

    /** The class whose head runs next, advancing its clocks; null when none may run now. */
    private ClassState pick(long now) {
        ClassState reserved = null;
        ClassState weighted = null;
        for (ClassState s : classes.values()) {
            if (s.queue.isEmpty()) {
                continue;
            }
            if (s.share.reservation() > 0 && s.reservationClock <= now
                    && (reserved == null || s.reservationClock < reserved.reservationClock)) {
                reserved = s;
            }
            if ((s.share.limit() == 0 || s.limitClock <= now)
                    && (weighted == null || s.proportionalClock < weighted.proportionalClock)) {
                weighted = s;
            }
        }
        ClassState s = reserved != null ? reserved : weighted;
        if (s == null) {
            return null;
        }
        long cost = s.queue.peek().bytes + shares.opCost();
        if (s == reserved) {
            s.reservationClock = Math.max(s.reservationClock, now - TimeUnit.MILLISECONDS.toNanos(100))
                    + (long) (cost * 1e9 / s.share.reservation());
        } else {
            s.proportionalClock += cost * NANOS_PER_BYTE / s.share.weight();
        }
        if (s.share.limit() > 0) {
            s.limitClock = Math.max(s.limitClock, now) + (long) (cost * 1e9 / s.share.limit());
        }
        return s;
    }

    /** Nanoseconds until the first waiting class is under its limit again (0: none is waiting). */
    private long earliestLimit(long now) {
        long best = Long.MAX_VALUE;
        for (ClassState s : classes.values()) {
            if (!s.queue.isEmpty()) {
                best = Math.min(best, s.limitClock - now);
            }
        }
        return best == Long.MAX_VALUE ? 0 : Math.max(1, best);
    }

    private <T> void start(Pending<T> p) {
        CompletableFuture<T> f = timed(p.c, p.bytes, p.arrived, clock.nanoTime(), p.trace, p.notes, p.op);
        f.whenComplete((v, e) -> {
            synchronized (this) {
                running--;
            }
            if (e != null) {
                p.result.completeExceptionally(e);
            } else {
                p.result.complete(v);
            }
            dispatch();
        });
    }

    /**
     * Runs {@code op} under {@code trace}; tells {@code notes} (the request it serves, if any) how
     * long it queued and took on the device, and keeps it as a slow {@code disk} hop if it was one.
     */
    private <T> CompletableFuture<T> timed(QosClass c, long bytes, long arrived, long started, long trace, Consumer<Supplier<String>> notes,
                                           Supplier<CompletableFuture<T>> op) {
        CompletableFuture<T> f;
        try (Trace.Scope scope = Trace.open(trace, notes)) {
            f = op.get();
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        if (slowOps == null && notes == null) {
            return f;
        }
        return f.whenComplete((v, e) -> {
            long done = clock.nanoTime();
            if (notes != null) {
                notes.accept(() -> device + ": " + times(arrived, started, done));
            }
            if (slowOps != null && slowOps.isSlow(done - arrived)) {
                slowOps.record(trace, "disk", c.policyName() + " " + bytes + " bytes on " + device, done - arrived,
                        times(arrived, started, done) + (e == null ? "" : ", failed: " + e.getMessage()));
            }
        });
    }

    private static String times(long arrived, long started, long done) {
        return String.format("queued %.1f ms for a slot, device %.1f ms", (started - arrived) / 1e6, (done - started) / 1e6);
    }
}
