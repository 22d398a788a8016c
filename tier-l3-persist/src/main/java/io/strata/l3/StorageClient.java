package io.strata.l3;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.TargetId;
import io.strata.core.qos.InFlightBudget;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.ChunkId;
import io.strata.core.InodeId;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.FileChunks;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.Tier;
import io.strata.core.tier.TierKind;
import io.strata.core.util.Crc32c;
import io.strata.protocol.storage.RequestId;
import io.strata.protocol.storage.UpdateKind;
import io.strata.core.ChainId;
import io.strata.protocol.storage.ChunkRef;
import io.strata.protocol.storage.ChunkSummary;
import io.strata.protocol.storage.StorageMessage.ChunkList;
import io.strata.protocol.storage.StorageMessage.ChunkStat;
import io.strata.protocol.storage.StorageMessage.InodeChunks;
import io.strata.protocol.storage.StorageMessage.ListChunks;
import io.strata.protocol.storage.StorageMessage.ListInodeChunks;
import io.strata.protocol.storage.StorageMessages;
import io.strata.protocol.storage.StorageMessage.ReadChunk;
import io.strata.protocol.storage.StorageMessage.ReadDone;
import io.strata.protocol.storage.StorageMessage.StatChunk;
import io.strata.protocol.storage.StorageMessage.WriteChunk;
import io.strata.protocol.storage.StorageMessage.WriteDone;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.placement.RoutingSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;

/**
 * The L3 tier as a client sees it: chunk reads and writes on CRAQ chains of storage nodes.
 *
 * <p>Writes go to the chain's head with a fresh request id; every retry (after a timeout, a lost
 * connection, a node that is busy) reuses that id, so the chain applies the write once. Reads go
 * to a serving replica chosen by the {@link ReadPolicy} and move on to the next replica when one
 * fails or returns bytes that do not match their CRC32C. A {@code STALE_CHAIN_VERSION} (or an
 * unknown chain or target) refreshes routing from the {@link RoutingSource} before the retry.
 * Calls on different chains are independent and run in parallel. Every call gives up with the
 * last error at {@link IoOptions#timeout()}.
 *
 * <p>QoS in the client: a transfer waits for its class's share of the bytes in flight
 * ({@link StorageClientOptions#inFlight()}) before its first attempt; its deadline starts when
 * it is granted, and the wait is bounded since every transfer ahead of it ends by its own
 * deadline. It goes on the connections of the lane its class and size give
 * ({@link QosClass#lane}), so that a dataloader's small reads never queue on a socket behind a
 * checkpoint's payloads.
 *
 * <p>Buffer ownership follows {@link Tier}: reads return an <b>owned</b> buffer; writes
 * <b>borrow</b> {@code data} until their future completes.
 */
public final class StorageClient implements Tier {
    private final NodeContext ctx;
    private final RoutingSource routing;
    private final RpcClient rpc;
    private final StorageClientOptions options;
    private final long clientId;
    private final AtomicLong seq = new AtomicLong();
    private final AtomicInteger roundRobin = new AtomicInteger();
    private final InFlightBudget budget;

    /** A client with its own connections ({@code rpc} settings), routing by {@code routing}. */
    public StorageClient(NodeContext ctx, RoutingSource routing, RpcOptions rpc, StorageClientOptions options) {
        this.ctx = ctx;
        this.routing = routing;
        this.rpc = new RpcClient(ctx, StorageMessages.PROTOCOL, rpc);
        this.options = options;
        this.clientId = ctx.random().nextLong() | 1L;
        this.budget = new InFlightBudget(options.inFlight(), ctx.clock(), ctx.meters());
    }

    /** What a read returned: the committed version served, the chunk's length then, and the bytes (owned). */
    public record ChunkRead(long version, long chunkLength, ByteBuf data) {
    }

    @Override
    public TierKind kind() {
        return TierKind.L3;
    }

    public RoutingSource routing() {
        return routing;
    }

    // ---- writes ----

    @Override
    public CompletableFuture<Void> writeAsync(ChunkAddress chunk, long offset, ByteBuf data, IoOptions io) {
        return updateAsync(chunk, UpdateKind.WRITE, offset, data.readableBytes(), data, io).thenApply(d -> null);
    }

    @Override
    public CompletableFuture<Void> truncateAsync(ChunkAddress chunk, long length, IoOptions io) {
        return updateAsync(chunk, UpdateKind.TRUNCATE, 0, length, Unpooled.EMPTY_BUFFER, io).thenApply(d -> null);
    }

    /** One REPLACE update: readers see the old content or the new, never a mix. */
    @Override
    public CompletableFuture<Void> replaceAsync(ChunkAddress chunk, ByteBuf data, IoOptions io) {
        return updateAsync(chunk, UpdateKind.REPLACE, 0, data.readableBytes(), data, io).thenApply(d -> null);
    }

    @Override
    public CompletableFuture<Void> removeAsync(ChunkAddress chunk, IoOptions io) {
        return updateAsync(chunk, UpdateKind.REMOVE, 0, 0, Unpooled.EMPTY_BUFFER, io).thenApply(d -> null);
    }

    /**
     * Applies one update and returns what the head reported: the committed version, the chunk's
     * length and CRC32C after it. {@code data} is borrowed until the future completes.
     */
    public CompletableFuture<WriteDone> updateAsync(ChunkAddress chunk, UpdateKind kind, long offset, long length, ByteBuf data,
                                                    IoOptions io) {
        try {
            if (kind == UpdateKind.WRITE) {
                chunk.checkRange(offset, length);
            } else if (length < 0 || length > chunk.chunkSize()) {
                chunk.checkRange(0, length);
            }
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        boolean hasData = kind == UpdateKind.WRITE || kind == UpdateKind.REPLACE;
        int crc = hasData ? Crc32c.of(data) : 0;
        RequestId id = new RequestId(clientId, seq.incrementAndGet());
        long bytes = hasData ? length : 0;
        RpcClient.Lane lane = io.qos().lane(bytes);
        return withBudget(io, bytes, () -> retry(io, "write " + chunk.id(), (attempt, budget) -> {
            RoutingInfo r = routing.current();
            ChainInfo c = r.chain(chunk.chain());
            List<TargetId> path = r.writePath(c.id());
            if (path.isEmpty()) {
                throw new StrataException(Status.NOT_SERVING, c.id() + " has no writable target in routing v" + r.version());
            }
            NodeInfo head = r.nodeOf(path.get(0));
            WriteChunk m = new WriteChunk(ChunkRef.of(chunk), c.version(), id, kind, offset, length, crc, io.qos(), io.minAck());
            Payload p = hasData && data.isReadable() ? Payload.of(data.retainedDuplicate()) : Payload.NONE;
            return rpc.call(head.address(), m, p, budget, lane, io.trace()).thenApply(resp -> {
                try (resp) {
                    return resp.message(WriteDone.class);
                }
            });
        }));
    }

    /**
     * Runs {@code call} once {@code bytes} of the class's in-flight budget are granted, and
     * returns them when it completes, however it completes.
     */
    private <T> CompletableFuture<T> withBudget(IoOptions io, long bytes, java.util.function.Supplier<CompletableFuture<T>> call) {
        if (!budget.limits(io.qos())) {
            return call.get();
        }
        return budget.acquire(io.qos(), bytes).thenCompose(grant -> {
            CompletableFuture<T> f;
            try {
                f = call.get();
            } catch (RuntimeException e) {
                grant.close();
                throw e;
            }
            return f.whenComplete((v, t) -> grant.close());
        });
    }

    // ---- reads ----

    @Override
    public CompletableFuture<ByteBuf> readAsync(ChunkAddress chunk, long offset, int length, IoOptions io) {
        return readChunkAsync(chunk, offset, length, io, Optional.empty()).thenApply(ChunkRead::data);
    }

    /**
     * Reads with the version served; {@code replica}, when given, is tried first (tests and tools
     * that want a particular replica), else the {@link ReadPolicy} picks. The result's buffer is owned.
     */
    public CompletableFuture<ChunkRead> readChunkAsync(ChunkAddress chunk, long offset, int length, IoOptions io,
                                                       Optional<TargetId> replica) {
        try {
            chunk.checkRange(offset, length);
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        int start = roundRobin.getAndIncrement();
        long pick = ctx.random().nextLong();
        RpcClient.Lane lane = io.qos().lane(length);
        return withBudget(io, length, () -> retry(io, "read " + chunk.id(), (attempt, budget) -> {
            RoutingInfo r = routing.current();
            ChainInfo c = r.chain(chunk.chain());
            List<TargetId> replicas = order(r, r.readable(c.id()), start, pick, chunk, replica);
            if (replicas.isEmpty()) {
                throw new StrataException(Status.NOT_SERVING, c.id() + " has no serving replica in routing v" + r.version());
            }
            TargetId t = replicas.get(attempt % replicas.size());
            ReadChunk m = new ReadChunk(ChunkRef.of(chunk), c.version(), offset, length, io.qos());
            return rpc.call(r.nodeOf(t).address(), m, Payload.NONE, budget, lane, io.trace()).thenApply(resp -> {
                try (resp) {
                    ReadDone d = resp.message(ReadDone.class);
                    ByteBuf data = resp.takePayload();
                    if (d.checked() && Crc32c.of(data) != d.crc32c()) {
                        data.release();
                        throw new StrataException(Status.CHECKSUM_MISMATCH, "read of chunk " + chunk.id() + " from " + t
                                + " arrived damaged (CRC32C mismatch)");
                    }
                    return new ChunkRead(d.version(), d.chunkLength(), data);
                }
            });
        }));
    }

    /** The read order for one call: the policy's first choice, then the others in chain order. */
    private List<TargetId> order(RoutingInfo r, List<TargetId> readable, int rr, long random, ChunkAddress chunk,
                                 Optional<TargetId> forced) {
        List<TargetId> out = new ArrayList<>(readable);
        if (out.isEmpty()) {
            return out;
        }
        int first = switch (options.readPolicy()) {
            case ROUND_ROBIN -> Math.floorMod(rr, out.size());
            case RANDOM -> (int) Math.floorMod(random, (long) out.size());
            case BY_CHUNK -> (int) Math.floorMod(chunk.id().mix(), (long) out.size());
            case PREFER_LOCAL -> {
                int local = -1;
                for (int i = 0; i < out.size() && options.localHost() != null; i++) {
                    if (options.localHost().equals(r.nodeOf(out.get(i)).domain("host"))) {
                        local = i;
                        break;
                    }
                }
                yield local >= 0 ? local : (int) Math.floorMod(random, (long) out.size());
            }
        };
        if (forced.isPresent() && out.contains(forced.get())) {
            first = out.indexOf(forced.get());
        }
        java.util.Collections.rotate(out, -first);
        return out;
    }

    /** Routing that knows {@code chain}: the current one, else a refreshed one (a client that just started has none yet). */
    private CompletableFuture<RoutingInfo> routingWith(ChainId chain) {
        RoutingInfo r = routing.current();
        if (r.chains().containsKey(chain)) {
            return CompletableFuture.completedFuture(r);
        }
        return routing.refreshAsync(r.version()).thenApply(fresh -> {
            fresh.chain(chain); // NO_SUCH_CHAIN when still unknown
            return fresh;
        });
    }

    // ---- a file's chunks ----

    /**
     * Lists, on the head of each of the file's chains, the file's chunks at or past
     * {@code fromIndex}: one page per 16 Ki chunks and chain, so the cost follows the chunks that
     * exist. The head is asked because every update enters there: it holds every chunk any
     * replica of the chain holds, including one a crashed writer left pending.
     */
    @Override
    public CompletableFuture<long[]> chunksOfAsync(FileChunks file, long fromIndex, IoOptions io) {
        if (fromIndex > ChunkId.MAX_INDEX) {
            return CompletableFuture.completedFuture(new long[0]);
        }
        List<CompletableFuture<List<Integer>>> perChain = new ArrayList<>();
        for (ChainId chain : file.distinctChains()) {
            perChain.add(inodeChunksAsync(chain, file.inode(), (int) Math.max(0, fromIndex), io));
        }
        return CompletableFuture.allOf(perChain.toArray(CompletableFuture[]::new)).thenApply(v -> {
            java.util.TreeSet<Long> all = new java.util.TreeSet<>();
            for (int c = 0; c < perChain.size(); c++) {
                ChainId chain = file.distinctChains().get(c);
                for (int i : perChain.get(c).join()) {
                    if (file.chainOf(i).equals(chain)) {
                        all.add((long) i); // a chunk on a chain its layout does not map it to is not this file's
                    }
                }
            }
            return all.stream().mapToLong(Long::longValue).toArray();
        });
    }

    private CompletableFuture<List<Integer>> inodeChunksAsync(ChainId chain, InodeId inode, int from, IoOptions io) {
        List<Integer> out = new ArrayList<>();
        CompletableFuture<List<Integer>> result = new CompletableFuture<>();
        new Object() {
            void page(int start) {
                retry(io, "list chunks of " + inode + " on " + chain, (attempt, budget) -> {
                    RoutingInfo r = routing.current();
                    ChainInfo c = r.chain(chain);
                    List<TargetId> path = r.writePath(c.id());
                    if (path.isEmpty()) {
                        throw new StrataException(Status.NOT_SERVING, c.id() + " has no writable target in routing v" + r.version());
                    }
                    ListInodeChunks m = new ListInodeChunks(chain.value(), c.version(), inode.value(), start,
                            StorageMessages.MAX_INODE_CHUNKS);
                    return rpc.call(r.nodeOf(path.get(0)).address(), m, Payload.NONE, budget).thenApply(resp -> {
                        try (resp) {
                            return resp.message(InodeChunks.class);
                        }
                    });
                }).whenComplete((p, err) -> {
                    if (err != null) {
                        result.completeExceptionally(StrataException.wrap(err));
                        return;
                    }
                    out.addAll(p.indexes());
                    int last = p.indexes().isEmpty() ? -1 : p.indexes().get(p.indexes().size() - 1);
                    if (p.more() && last >= 0 && last < ChunkId.MAX_INDEX) {
                        page(last + 1);
                    } else {
                        result.complete(out);
                    }
                });
            }
        }.page(from);
        return result;
    }

    /** What one replica holds for the chunk (tests and tools). */
    public CompletableFuture<ChunkStat> statAsync(ChunkAddress chunk, TargetId replica, Duration timeout) {
        return routingWith(chunk.chain()).thenCompose(r -> rpc.call(r.nodeOf(replica).address(),
                        new StatChunk(ChunkRef.of(chunk), r.chain(chunk.chain()).version()), Payload.NONE, timeout))
                .thenApply(resp -> {
                    try (resp) {
                        return resp.message(ChunkStat.class);
                    }
                });
    }

    /**
     * Every chunk {@code replica} holds on {@code chain}, in key order, as resync compares them
     * (tools and tests: do all replicas of a chain hold the same chunks?).
     */
    public CompletableFuture<List<ChunkSummary>> listChunksAsync(ChainId chain, TargetId replica, Duration timeout) {
        List<ChunkSummary> out = new ArrayList<>();
        CompletableFuture<List<ChunkSummary>> result = new CompletableFuture<>();
        new Object() {
            void page(boolean first, long inode, int index) {
                routingWith(chain).thenCompose(r -> {
                    ListChunks m = new ListChunks(chain.value(), r.chain(chain).version(), first, inode, index, 4096);
                    return rpc.call(r.nodeOf(replica).address(), m, Payload.NONE, timeout);
                }).whenComplete((resp, err) -> {
                    if (err != null) {
                        result.completeExceptionally(StrataException.wrap(err));
                        return;
                    }
                    ChunkList page;
                    try (resp) {
                        page = resp.message(ChunkList.class);
                    } catch (RuntimeException e) {
                        result.completeExceptionally(e);
                        return;
                    }
                    out.addAll(page.chunks());
                    if (page.more() && !page.chunks().isEmpty()) {
                        ChunkSummary last = page.chunks().get(page.chunks().size() - 1);
                        page(false, last.inode(), last.index());
                    } else {
                        result.complete(out);
                    }
                });
            }
        }.page(true, 0, 0);
        return result;
    }

    // ---- retries ----

    private static boolean routingError(Status s) {
        return s == Status.STALE_CHAIN_VERSION || s == Status.NO_SUCH_CHAIN || s == Status.NO_SUCH_TARGET || s == Status.NOT_SERVING;
    }

    /**
     * Statuses the client's RPC layer reports when no answer came (the attempt's time ran out,
     * the connection was lost or could not be made). A server's own TIMEOUT says no more than
     * that, so it is counted with them.
     */
    private static boolean noAnswer(Status s) {
        return s == Status.TIMEOUT || s == Status.CONNECTION_LOST || s == Status.CONNECTION_FAILED;
    }

    /** After this many answers that the bytes are damaged, a read fails with that answer. */
    static final int MAX_DAMAGED_ANSWERS = 9;

    /** Errors a read survives by asking another replica. */
    private static boolean replicaError(Status s) {
        return s.retryable() || s == Status.CHUNK_CORRUPT || s == Status.CHECKSUM_MISMATCH || s == Status.IO_ERROR;
    }

    private <T> CompletableFuture<T> retry(IoOptions io, String what, BiFunction<Integer, Duration, CompletableFuture<T>> attempt) {
        long deadline = ctx.clock().nanoTime() + io.timeout().toNanos();
        boolean read = what.startsWith("read");
        CompletableFuture<T> result = new CompletableFuture<>();
        new Object() {
            int n;
            long backoff = 5;
            /** Answers that said the bytes are damaged (corrupt copy, or a payload failing its check), and the last one. */
            int damaged;
            StrataException lastDamage;
            /**
             * A write's last answer from a server, whatever its status (TOO_FEW_REPLICAS from a
             * head short of replicas, IO_ERROR from a failing disk, ...): what a write that runs
             * out of time reports instead of the timeout or lost connection its last attempt
             * ended with, which says less.
             */
            StrataException lastAnswer;

            void run() {
                long left = deadline - ctx.clock().nanoTime();
                Duration budget = Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(1), Math.min(left, options.attemptTimeout().toNanos())));
                long routingVersion = routing.current().version();
                CompletableFuture<T> f;
                try {
                    f = attempt.apply(n, budget);
                } catch (Throwable t) {
                    f = CompletableFuture.failedFuture(t);
                }
                f.whenComplete((v, err) -> {
                    if (err == null) {
                        result.complete(v);
                        return;
                    }
                    StrataException se = StrataException.wrap(err);
                    // writes are retried on I/O errors too (same request id, so applied once): the
                    // node whose disk fails takes the target out of service and routing moves on
                    boolean again = read ? replicaError(se.status()) : se.retryable() || se.status() == Status.IO_ERROR;
                    if (read && (se.status() == Status.CHUNK_CORRUPT || se.status() == Status.CHECKSUM_MISMATCH)) {
                        damaged++;
                        lastDamage = se;
                    }
                    // every replica damaged, round after round (each repairs behind a read that met
                    // it, so a later round may find a good copy): the bytes are lost, say so
                    if (damaged >= MAX_DAMAGED_ANSWERS || (lastDamage != null && again && ctx.clock().nanoTime() >= deadline)) {
                        result.completeExceptionally(lastDamage);
                        return;
                    }
                    if (!read && !noAnswer(se.status())) {
                        lastAnswer = se;
                    }
                    if (!again || ctx.clock().nanoTime() >= deadline) {
                        StrataException report = again && lastAnswer != null ? lastAnswer : se;
                        if (report != se) {
                            report.addSuppressed(se); // how the last attempt ended
                        }
                        result.completeExceptionally(report);
                        return;
                    }
                    n++;
                    CompletableFuture<?> before = CompletableFuture.completedFuture(null);
                    if (routingError(se.status())) {
                        before = routing.refreshAsync(routingVersion);
                    }
                    // a read tries the next replica at once; after a full round, and for writes, back off
                    long delay = read && n % 3 != 0 ? 0 : backoff;
                    if (!(read && n % 3 != 0)) {
                        backoff = Math.min(200, backoff * 2);
                    }
                    before.whenComplete((x, e) -> {
                        try {
                            ctx.scheduler().schedule(this::run, delay, TimeUnit.MILLISECONDS);
                        } catch (java.util.concurrent.RejectedExecutionException rejected) {
                            result.completeExceptionally(se);
                        }
                    });
                });
            }
        }.run();
        return result;
    }

    @Override
    public void close() {
        rpc.close();
    }
}
