package io.strata.storage;

import io.netty.buffer.ByteBuf;
import io.strata.core.ChainId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.RpcClient;
import io.strata.core.util.Crc32c;
import io.strata.protocol.storage.UpdateKind;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.routing.TargetState;
import io.strata.protocol.storage.StorageMessage.ForwardUpdate;
import io.strata.protocol.storage.StorageMessage.QueryVersion;
import io.strata.protocol.storage.StorageMessage.UpdateAcked;
import io.strata.protocol.storage.StorageMessage.VersionIs;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbound side of CRAQ: forwarding an update to the successor and asking the tail for a
 * chunk's committed version. Both re-read routing on every attempt, so after a chain change a
 * predecessor with a write in flight retries against its <em>new</em> successor (or, when it
 * became the tail itself, learns so and commits). Retryable failures (timeouts, lost
 * connections, a successor that is busy or not serving yet) are retried with backoff until the
 * deadline (so are I/O errors of the successor's disk: it takes a failing target out of service
 * and routing moves on); a routing change wakes the waiting retries at once.
 */
final class Replicator {
    private static final Logger LOG = LoggerFactory.getLogger(Replicator.class);

    private final NodeContext ctx;
    private final RpcClient rpc;
    private final StorageNode node;
    private final Duration attemptTimeout;

    Replicator(NodeContext ctx, RpcClient rpc, StorageNode node, Duration attemptTimeout) {
        this.ctx = ctx;
        this.rpc = rpc;
        this.node = node;
        this.attemptTimeout = attemptTimeout;
    }

    /**
     * Forwards {@code msg} down the chain from {@code self} until the successor acknowledges it.
     * Completes with the acknowledgement, or with {@code Optional.empty()} when routing now makes
     * {@code self} the tail. {@code payload} is <b>borrowed</b> until the future completes (each
     * attempt sends a retained duplicate).
     *
     * <p>When the successor is {@code syncing}, a WRITE or TRUNCATE is sent as a REPLACE of the
     * same version carrying the whole new content ({@code whole} supplies it, an owned buffer,
     * read at most once and released when the forward completes): a syncing target may not hold
     * the base the update applies to (docs/internals/resync.md).
     */
    CompletableFuture<Optional<UpdateAcked>> forward(ChainId chain, TargetId self, ForwardUpdate msg, ByteBuf payload,
                                                     Supplier<ByteBuf> whole, long deadlineNanos) {
        ByteBuf[] content = new ByteBuf[1];
        CompletableFuture<Optional<UpdateAcked>> f = retrying("forward " + msg.chunk() + " v" + msg.version(), deadlineNanos, view -> {
            Optional<TargetId> succ = view.successor();
            if (succ.isEmpty()) {
                return CompletableFuture.completedFuture(Optional.<UpdateAcked>empty());
            }
            boolean partial = msg.kind() == UpdateKind.WRITE || msg.kind() == UpdateKind.TRUNCATE;
            ForwardUpdate m;
            Payload p;
            if (partial && view.routing().target(succ.get()).state() == TargetState.SYNCING) {
                synchronized (content) {
                    if (content[0] == null) {
                        content[0] = whole.get();
                    }
                }
                ByteBuf c = content[0];
                m = new ForwardUpdate(msg.chunk(), view.version(), msg.request(), msg.version(), UpdateKind.REPLACE, 0,
                        c.readableBytes(), Crc32c.of(c), msg.qos());
                p = c.isReadable() ? Payload.of(c.retainedDuplicate()) : Payload.NONE;
            } else {
                m = new ForwardUpdate(msg.chunk(), view.version(), msg.request(), msg.version(), msg.kind(), msg.offset(),
                        msg.length(), msg.crc32c(), msg.qos());
                p = payload.isReadable() ? Payload.of(payload.retainedDuplicate()) : Payload.NONE;
            }
            return rpc.call(view.nodeOf(succ.get()).address(), m, p, budget(deadlineNanos), msg.qos().lane(p.length())).thenApply(r -> {
                try (r) {
                    return Optional.of(r.message(UpdateAcked.class));
                }
            });
        }, chain, self);
        return f.whenComplete((r, e) -> {
            synchronized (content) {
                if (content[0] != null) {
                    content[0].release();
                    content[0] = null;
                }
            }
        });
    }

    /** Asks the chain's tail which version of the chunk is committed. */
    CompletableFuture<Long> committedAtTail(ChainId chain, TargetId self, ChunkRef chunk, long deadlineNanos) {
        return retrying("query " + chunk, deadlineNanos, view -> {
            TargetId tail = view.tail();
            if (tail.equals(self)) {
                throw new StrataException(Status.CHUNK_BUSY, "this replica became the tail of " + chain + " meanwhile");
            }
            return rpc.call(view.nodeOf(tail).address(), new QueryVersion(chunk, view.version()), Payload.NONE, budget(deadlineNanos))
                    .thenApply(r -> {
                        try (r) {
                            return r.message(VersionIs.class).committedVersion();
                        }
                    });
        }, chain, self);
    }

    private Duration budget(long deadlineNanos) {
        long left = deadlineNanos - ctx.clock().nanoTime();
        return Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(1), Math.min(left, attemptTimeout.toNanos())));
    }

    private <T> CompletableFuture<T> retrying(String what, long deadlineNanos, Function<ChainView, CompletableFuture<T>> attempt,
                                              ChainId chain, TargetId self) {
        CompletableFuture<T> result = new CompletableFuture<>();
        new Object() {
            long backoffMillis = 10;
            int attempts;

            void run() {
                attempts++;
                CompletableFuture<T> f;
                long routingVersion = node.routing().current().version();
                try {
                    f = attempt.apply(node.viewOf(chain, self));
                } catch (Throwable t) {
                    f = CompletableFuture.failedFuture(t);
                }
                f.whenCompleteAsync((v, err) -> {
                    if (err == null) {
                        result.complete(v);
                        return;
                    }
                    StrataException se = StrataException.wrap(err);
                    // an I/O error on the successor's disk is retried too: the successor takes a failing
                    // target out of service after a few, and the routing change brings a new successor
                    boolean again = se.retryable() || se.status() == Status.IO_ERROR;
                    if (!again || ctx.clock().nanoTime() > deadlineNanos || node.isClosed()) {
                        result.completeExceptionally(se);
                        return;
                    }
                    if (attempts % 20 == 1) {
                        LOG.info("{}: {} failed ({}), retrying", ctx.name(), what, se.toString());
                    }
                    if (se.status() == Status.STALE_CHAIN_VERSION) {
                        node.routing().refreshAsync(routingVersion); // a newer version wakes us through onChange
                    }
                    CompletableFuture<?> wake = node.routingChanged();
                    long delay = backoffMillis;
                    backoffMillis = Math.min(500, backoffMillis * 2);
                    CompletableFuture<Void> timer = new CompletableFuture<>();
                    try {
                        ctx.scheduler().schedule(() -> timer.complete(null), delay, TimeUnit.MILLISECONDS);
                    } catch (java.util.concurrent.RejectedExecutionException e) {
                        result.completeExceptionally(se);
                        return;
                    }
                    CompletableFuture.anyOf(timer, wake).whenCompleteAsync((x, e) -> run(), node.io());
                }, node.io());
            }
        }.run();
        return result;
    }
}
