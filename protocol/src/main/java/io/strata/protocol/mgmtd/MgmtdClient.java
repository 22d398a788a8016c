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
import java.util.Optional;
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

    /** Per attempt and overall, for the hint calls: the budget spans a manager failover (a few seconds). */
    private static final Duration HINT_ATTEMPT = Duration.ofSeconds(5);
    private static final Duration HINT_BUDGET = Duration.ofSeconds(30);

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
        // a routing long poll waits by design: on its own connection, never reported as slow
        RpcClient.Lane lane = message instanceof MgmtdMessage.GetRouting g && g.waitMillis() > 0 ? RpcClient.Lane.WAIT : RpcClient.Lane.FOREGROUND;
        rpc.call(target, message, Payload.NONE, t, lane).whenComplete((resp, err) -> {
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

    // ---- scheduler hints ----------------------------------------------------------------

    /**
     * Stores a scheduler hint (see {@link MgmtdMessage.PutHint}): {@code id} 0 creates one,
     * otherwise the hint's value is replaced if it is at {@code expectedVersion}. Completes with
     * the hint as stored (its id, new version, and {@code value}, which must not change
     * afterwards); fails with a {@link StrataException} of status {@code TXN_CONFLICT},
     * {@code NOT_FOUND}, {@code INVALID_ARGUMENT} or {@code NO_SPACE}.
     *
     * <p>Like every write through this client, a put whose answer was lost (a timeout, a dropped
     * connection, a failover) is sent again, and may then be applied twice: a create makes a
     * second hint, a replace fails with {@code TXN_CONFLICT} although its value was stored.
     */
    public CompletableFuture<StoredHint> putHintAsync(long id, long expectedVersion, byte[] value) {
        return call(new MgmtdMessage.PutHint(id, expectedVersion, value), MgmtdMessage.HintPut.class, HINT_ATTEMPT, HINT_BUDGET)
                .thenApply(r -> new StoredHint(r.id(), r.version(), value));
    }

    /**
     * Deletes a scheduler hint: unconditionally with {@code expectedVersion} 0, else only at that
     * version ({@code TXN_CONFLICT}); {@code NOT_FOUND} if there is no such hint.
     */
    public CompletableFuture<Void> deleteHintAsync(long id, long expectedVersion) {
        return call(new MgmtdMessage.DeleteHint(id, expectedVersion), MgmtdMessage.HintDeleted.class, HINT_ATTEMPT, HINT_BUDGET)
                .thenApply(r -> null);
    }

    /**
     * Every scheduler hint, in id order, read page by page from the leader. Each page is read at
     * its own moment, so hints changed during a long listing may show either value, and a hint
     * created meanwhile may be missing (ids only grow, so it is never out of order).
     */
    public CompletableFuture<List<StoredHint>> hintsAsync() {
        return hintsFrom(1, new ArrayList<>());
    }

    private CompletableFuture<List<StoredHint>> hintsFrom(long fromId, List<StoredHint> got) {
        return call(new MgmtdMessage.GetHints(fromId, MgmtdMessages.MAX_HINTS_PAGE), MgmtdMessage.Hints.class, HINT_ATTEMPT, HINT_BUDGET)
                .thenCompose(page -> {
                    got.addAll(page.hints());
                    if (!page.more() || page.hints().isEmpty()) {
                        return CompletableFuture.completedFuture(List.copyOf(got));
                    }
                    return hintsFrom(page.hints().getLast().id() + 1, got);
                });
    }

    /** The scheduler hint {@code id}, or empty if there is none. */
    public CompletableFuture<Optional<StoredHint>> hintAsync(long id) {
        return call(new MgmtdMessage.GetHints(id, 1), MgmtdMessage.Hints.class, HINT_ATTEMPT, HINT_BUDGET)
                .thenApply(page -> page.hints().stream().filter(h -> h.id() == id).findFirst());
    }

    /**
     * Admin: revokes token {@code tokenId} until {@code expiresAt} (epoch seconds,
     * {@link MgmtdMessage.Revocation#FOR_GOOD} when not known); the number of revocations held.
     */
    public CompletableFuture<Integer> revokeAsync(String tokenId, long expiresAt) {
        return call(new MgmtdMessage.RevokeToken(tokenId, expiresAt), MgmtdMessage.TokenRevoked.class, HINT_ATTEMPT, HINT_BUDGET)
                .thenApply(MgmtdMessage.TokenRevoked::held);
    }

    /** The revoked tokens that have not expired, in id order. */
    public CompletableFuture<List<MgmtdMessage.Revocation>> revokedAsync(Duration attemptTimeout, Duration budget) {
        return call(new MgmtdMessage.GetRevoked(), MgmtdMessage.Revoked.class, attemptTimeout, budget)
                .thenApply(MgmtdMessage.Revoked::tokens);
    }

    @Override
    public void close() {
        if (ownsRpc) {
            rpc.close();
        }
    }
}
