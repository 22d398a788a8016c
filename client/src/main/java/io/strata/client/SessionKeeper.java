package io.strata.client;

import io.strata.core.NodeContext;
import io.strata.core.StrataException;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Meta;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this client's open sessions alive in the namespace: while it has a file open it sends a
 * keep-alive ({@link Meta#keepAliveAsync}) every quarter of the meta service's session lease, at
 * most every {@link #MAX_INTERVAL}. A client that stops (killed, its node dead) has its sessions
 * ended by the meta service once the lease passes: unlinked files it held are freed, and bytes it
 * wrote but never published are trimmed.
 *
 * <p>Only while files are open, not always: a client with nothing open has no session to keep,
 * and thousands of idle mounts then cost the namespace nothing. This is safe because the meta
 * service counts a session's lease from the later of its client's last keep-alive and the
 * session's own open, and the first open after a quiet spell sends a keep-alive at once (which
 * also tells the client the lease). The timer runs on the context's scheduler and only starts an
 * asynchronous call; one keep-alive is in flight at a time. A keep-alive that fails is logged
 * (once until one succeeds again) and the next tick tries again: the lease is several intervals
 * long, so one lost keep-alive ends nothing.
 */
final class SessionKeeper implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SessionKeeper.class);
    /** The longest pause between two keep-alives, whatever the lease. */
    static final Duration MAX_INTERVAL = Duration.ofSeconds(5);
    static final Duration MIN_INTERVAL = Duration.ofMillis(25);

    private final NodeContext ctx;
    private final Meta meta;
    private final long clientId;
    private final Caller caller;
    private final BooleanSupplier active;
    private final String name;
    private final AtomicBoolean inFlight = new AtomicBoolean();
    private volatile long intervalMs = MAX_INTERVAL.toMillis();
    private volatile long lastSentNanos;
    private volatile boolean sentOnce;
    private volatile boolean failing;
    private volatile boolean closed;
    /** The next tick (guarded by this). */
    private ScheduledFuture<?> next;

    /** {@code active}: whether the client has sessions to keep (files open). */
    SessionKeeper(NodeContext ctx, Meta meta, long clientId, Caller caller, BooleanSupplier active, String name) {
        this.ctx = ctx;
        this.meta = meta;
        this.clientId = clientId;
        this.caller = caller;
        this.active = active;
        this.name = name;
    }

    void start() {
        schedule();
    }

    /** The pause between keep-alives now (a quarter of the lease the meta service last answered, at most {@link #MAX_INTERVAL}). */
    Duration interval() {
        return Duration.ofMillis(intervalMs);
    }

    /** A file was opened: unless a keep-alive went out within the interval, one goes now. */
    void opened() {
        if (!sentOnce || ctx.clock().nanoTime() - lastSentNanos >= TimeUnit.MILLISECONDS.toNanos(intervalMs)) {
            send();
        }
    }

    private synchronized void schedule() {
        if (closed) {
            return;
        }
        try {
            next = ctx.scheduler().schedule(this::tick, intervalMs, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            closed = true; // the context is closing
        }
    }

    /** The interval became shorter: the tick already scheduled (at the old interval) could come too late, so it is moved up. */
    private synchronized void reschedule() {
        if (next != null && next.cancel(false)) {
            schedule();
        }
    }

    private void tick() {
        try {
            if (!closed && active.getAsBoolean()) {
                send();
            }
        } finally {
            schedule();
        }
    }

    private void send() {
        if (closed || !inFlight.compareAndSet(false, true)) {
            return;
        }
        lastSentNanos = ctx.clock().nanoTime();
        sentOnce = true;
        meta.keepAliveAsync(caller, clientId).whenComplete((lease, e) -> {
            inFlight.set(false);
            if (e == null) {
                long ms = Math.clamp(lease.toMillis() / 4, MIN_INTERVAL.toMillis(), MAX_INTERVAL.toMillis());
                long before = intervalMs;
                intervalMs = ms;
                if (ms < before) {
                    reschedule();
                }
                if (failing) {
                    failing = false;
                    LOG.info("{}: keep-alives reach the meta service again (lease {} ms)", name, lease.toMillis());
                }
            } else if (!closed && !failing) {
                failing = true;
                LOG.warn("{}: keep-alive failed (will retry every {} ms; open files' sessions end if none gets through within the lease): {}",
                        name, intervalMs, StrataException.wrap(e).toString());
            }
        });
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (next != null) {
            next.cancel(false);
        }
    }
}
