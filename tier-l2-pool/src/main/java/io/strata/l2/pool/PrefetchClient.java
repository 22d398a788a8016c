package io.strata.l2.pool;

import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.QosClass;
import io.strata.l2.Holders;
import io.strata.placement.RoutingSource;
import io.strata.protocol.l2.L2Message;
import io.strata.protocol.l2.L2Messages;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.storage.ChunkRef;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What a prefetch planner says to L2 agents (docs/internals/l2.md, "Prefetched copies"): fetch a
 * chunk into an agent and pin it for a hint's owner, and let an owner's pins go. Agents are found
 * in routing; one that routing lists as not serving (or does not list) fails at once with
 * NOT_SERVING, without a call. Place a chunk of a file never staged with
 * {@link Holders#cachedRanking}, as its readers look for it.
 */
public final class PrefetchClient implements AutoCloseable {
    private final RoutingSource routing;
    private final RpcClient rpc;

    public PrefetchClient(NodeContext ctx, RoutingSource routing, RpcOptions rpcOptions) {
        this.routing = routing;
        this.rpc = new RpcClient(ctx, L2Messages.PROTOCOL, rpcOptions);
    }

    /**
     * Has agent {@code agent} hold {@code chunk} pinned for {@code owner}. A chunk of a file never
     * staged is fetched with epoch 0 at the file's data version {@code version} (its readers find
     * it with {@link io.strata.core.tier.CachedCopies} of that version); a chunk of a staged file
     * whose record is durable with the record's epoch, on the chunk's {@code holders}. The agent
     * reads the chunk from L3 and writes its copy in class {@code qos}.
     */
    public CompletableFuture<L2Message.Fetched> fetchAsync(int agent, ChunkAddress chunk, long epoch, long version, List<Integer> holders,
                                                           long owner, QosClass qos, Duration timeout) {
        return call(agent, new L2Message.Fetch(ChunkRef.of(chunk), epoch, version, holders, owner, qos), L2Message.Fetched.class, timeout);
    }

    /** Drops every pin {@code owner} holds on agent {@code agent}; how many chunks it had pinned there. */
    public CompletableFuture<Long> unpinAsync(int agent, long owner, Duration timeout) {
        return call(agent, new L2Message.Unpin(owner), L2Message.Unpinned.class, timeout).thenApply(L2Message.Unpinned::chunks);
    }

    private <M extends L2Message> CompletableFuture<M> call(int agent, L2Message m, Class<M> reply, Duration timeout) {
        InetSocketAddress to;
        try {
            to = addressOf(agent);
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return rpc.call(to, m, Payload.NONE, timeout).thenApply(resp -> {
            try (resp) {
                return resp.message(reply);
            }
        });
    }

    /** Agent {@code agent}'s RPC address if routing says it serves; NOT_SERVING otherwise. */
    private InetSocketAddress addressOf(int agent) {
        RoutingInfo r = routing.current();
        if (!Holders.serving(r, agent)) {
            throw new StrataException(Status.NOT_SERVING, "L2 agent " + agent + " is not serving (routing v" + r.version() + ")");
        }
        return Holders.address(r, agent);
    }

    @Override
    public void close() {
        rpc.close();
    }
}
