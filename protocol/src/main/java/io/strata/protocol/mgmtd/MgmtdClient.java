package io.strata.protocol.mgmtd;

import io.strata.core.rpc.Addresses;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Message;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls the cluster manager, whichever of its peers leads. A call goes to the peer believed to
 * lead; {@code NOT_LEADER} with an address moves there at once; {@code NOT_LEADER} without one
 * (an election is running), a connection failure or a timeout moves to the next peer after a
 * short pause. The call fails once its overall budget is spent, with the last error.
 */
public final class MgmtdClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MgmtdClient.class);

    private final NodeContext ctx;
    private final RpcClient rpc;
    private final boolean ownsRpc;
    private final List<InetSocketAddress> managers;
    private volatile InetSocketAddress leader;

    /** A client with its own RPC connections. */
    public MgmtdClient(NodeContext ctx, List<InetSocketAddress> managers) {
        this(ctx, new RpcClient(ctx, MgmtdMessages.PROTOCOL, RpcOptions.DEFAULTS), true, managers);
    }

    /** A client over an existing RPC client, whose protocol must include {@link MgmtdMessages#TYPES}. */
    public MgmtdClient(NodeContext ctx, RpcClient rpc, List<InetSocketAddress> managers) {
        this(ctx, rpc, false, managers);
    }

    private MgmtdClient(NodeContext ctx, RpcClient rpc, boolean ownsRpc, List<InetSocketAddress> managers) {
        if (managers.isEmpty()) {
            throw new IllegalArgumentException("at least one cluster manager address is needed");
        }
        this.ctx = ctx;
        this.rpc = rpc;
        this.ownsRpc = ownsRpc;
        List<InetSocketAddress> resolved = new ArrayList<>();
        for (InetSocketAddress a : managers) {
            resolved.add(resolve(a));
        }
        this.managers = List.copyOf(resolved);
        this.leader = this.managers.get(0);
    }

    /** Parses "host:port,host:port". */
    public static List<InetSocketAddress> parse(String addresses) {
        List<InetSocketAddress> out = new ArrayList<>();
        for (String s : addresses.split(",")) {
            if (!s.isBlank()) {
                out.add(resolve(Addresses.parse(s.trim())));
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no cluster manager address in '" + addresses + "'");
        }
        return out;
    }

    private static InetSocketAddress resolve(InetSocketAddress a) {
        return a.isUnresolved() ? new InetSocketAddress(a.getHostString(), a.getPort()) : a;
    }

    public List<InetSocketAddress> managers() {
        return managers;
    }

    /** The peer this client currently believes leads. */
    public InetSocketAddress leaderGuess() {
        return leader;
    }

    /**
     * Calls the leader with {@code message}, expecting a {@code type} reply. Each attempt may
     * take {@code attemptTimeout}; the whole call at most {@code budget}.
     */
    public <R extends Message> CompletableFuture<R> call(MgmtdMessage message, Class<R> type, Duration attemptTimeout, Duration budget) {
        CompletableFuture<R> out = new CompletableFuture<>();
        long deadline = ctx.clock().nanoTime() + budget.toNanos();
        attempt(message, type, attemptTimeout, deadline, 0, leader, out);
        return out;
    }

    private <R extends Message> void attempt(MgmtdMessage message, Class<R> type, Duration timeout, long deadline, int n,
                                             InetSocketAddress target, CompletableFuture<R> out) {
        long left = deadline - ctx.clock().nanoTime();
        Duration t = Duration.ofNanos(Math.max(1_000_000, Math.min(timeout.toNanos(), left)));
        rpc.call(target, message, Payload.NONE, t).whenComplete((resp, err) -> {
            if (err == null) {
                try (resp) {
                    leader = target;
                    out.complete(resp.message(type));
                } catch (RuntimeException e) {
                    out.completeExceptionally(e);
                }
                return;
            }
            StrataException e = StrataException.wrap(err);
            InetSocketAddress next;
            long pauseMs;
            if (e instanceof StrataException.NotLeader nl && !nl.leader().isEmpty()) {
                next = resolve(Addresses.parse(nl.leader()));
                pauseMs = next.equals(target) ? 50 : 0;
            } else if (e.status() == Status.NOT_LEADER || e.status() == Status.CONNECTION_FAILED
                    || e.status() == Status.CONNECTION_LOST || e.status() == Status.TIMEOUT || e.status() == Status.SHUTTING_DOWN) {
                next = managers.get((managers.indexOf(target) + 1) % managers.size());
                pauseMs = Math.min(500, 50L * (n + 1));
            } else {
                out.completeExceptionally(e);
                return;
            }
            if (ctx.clock().nanoTime() + TimeUnit.MILLISECONDS.toNanos(pauseMs) >= deadline) {
                out.completeExceptionally(e);
                return;
            }
            LOG.debug("{} to {} failed ({}); trying {}", message.getClass().getSimpleName(), target, e, next);
            leader = next;
            try {
                ctx.scheduler().schedule(() -> attempt(message, type, timeout, deadline, n + 1, next, out), pauseMs, TimeUnit.MILLISECONDS);
            } catch (RuntimeException rejected) { // the context is shutting down
                out.completeExceptionally(e);
            }
        });
    }

    @Override
    public void close() {
        if (ownsRpc) {
            rpc.close();
        }
    }
}
