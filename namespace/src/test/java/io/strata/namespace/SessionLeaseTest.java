package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Counter;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.namespace.service.MetaService;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.RequestId;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Client leases and trims, on two meta instances sharing one LMDB store (as instances share a
 * FoundationDB cluster) with clients on real sockets: the client talks to instance A, and either
 * instance's pruner may end its sessions, so a keep-alive recorded by A must hold B's pruner back.
 * The lease is short (800 ms). Chunks are files in a directory ({@link ChunkDir}), counted.
 */
class SessionLeaseTest {
    static final Duration LEASE = Duration.ofMillis(800);
    static final long MIB = 1 << 20;

    @TempDir
    Path tmp;
    LmdbKvStore kv;
    ChunkDir chunks;
    NodeContext ctxA;
    NodeContext ctxB;
    NodeContext clientCtx;
    MetaStore metaA;
    MetaStore metaB;
    RpcServer server;
    RpcClient rpc;
    MetaClient client;

    MetaStore.Options options() {
        return MetaStore.Options.DEFAULTS.withGc(Duration.ZERO, Duration.ZERO).withSessionLease(LEASE);
    }

    @BeforeEach
    void start() throws IOException {
        ctxA = NodeContext.seeded("meta-a", 21);
        ctxB = NodeContext.seeded("meta-b", 22);
        clientCtx = NodeContext.seeded("client", 23);
        kv = LmdbKvStore.open(tmp.resolve("kv"), LmdbKvStore.Options.DEFAULTS.withSync(false), null);
        chunks = new ChunkDir(tmp.resolve("chunks"));
        metaA = new MetaStore(ctxA, kv, StaticChainTables.uniform(6), chunks, options());
        metaB = new MetaStore(ctxB, kv, StaticChainTables.uniform(6), chunks, options());
        server = MetaService.register(RpcServer.builder(ctxA, MetaMessages.PROTOCOL), metaA).bind("127.0.0.1", 0);
        rpc = new RpcClient(clientCtx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        client = new MetaClient(clientCtx, rpc, List.of(server.address()), Duration.ofSeconds(5), 3);
    }

    @AfterEach
    void stop() {
        rpc.close();
        server.close();
        metaA.close();
        metaB.close();
        kv.close();
        ctxA.close();
        ctxB.close();
        clientCtx.close();
    }

    static <T> T join(CompletableFuture<T> f) {
        return Futures.join(f, Duration.ofSeconds(30));
    }

    static RequestId req() {
        return RequestId.random(new Random());
    }

    private InodeAttrs create(String name) {
        return join(client.createAsync(Caller.ROOT, InodeId.ROOT, name, 0644, true, req()));
    }

    private OpenResult open(InodeAttrs f, int flags, long clientId) {
        return join(client.openAsync(Caller.ROOT, f.id(), flags, clientId, req()));
    }

    /** Keep-alives of {@code clientId} through the service every 150 ms, until cancelled. */
    private ScheduledFuture<?> keepAlive(long clientId) {
        return clientCtx.scheduler().scheduleAtFixedRate(() -> client.keepAliveAsync(Caller.ROOT, clientId), 0, 150, TimeUnit.MILLISECONDS);
    }

    private double pruned() {
        double n = 0;
        for (NodeContext c : List.of(ctxA, ctxB)) {
            Counter k = c.meters().find("strata.meta.sessions.pruned").counter();
            n += k == null ? 0 : k.count();
        }
        return n;
    }

    @Test
    void theServiceAnswersItsLease() {
        assertThat(join(client.keepAliveAsync(Caller.ROOT, 5))).isEqualTo(LEASE);
    }

    @Test
    void aSilentClientsSessionsEndAfterTheLeaseWhileAClientThatKeepsAliveKeepsItsOwn() throws Exception {
        // client 88 keeps alive all along and holds a file open for writing far longer than the lease
        InodeAttrs live = create("live.bin");
        ScheduledFuture<?> alive88 = keepAlive(88);
        OpenResult liveSession = open(live, OpenFlags.WRITE, 88);
        chunks.writeBytes(live, 0, (int) MIB);
        chunks.writeBytes(live, 1, 1000);

        // client 77 keeps alive for a while, holds an unlinked file open and writes past a published length, then goes silent
        ScheduledFuture<?> alive77 = keepAlive(77);
        InodeAttrs held = create("held.bin");
        OpenResult w = open(held, OpenFlags.WRITE, 77);
        chunks.writeBytes(held, 0, (int) MIB);
        chunks.writeBytes(held, 1, (int) MIB);
        join(client.closeAsync(Caller.ROOT, held.id(), w.sessionId(), 2 * MIB, true, req()));
        open(held, OpenFlags.READ | OpenFlags.TRACK, 77); // as 77 pins a file it reads before its own unlink
        join(client.unlinkAsync(Caller.ROOT, InodeId.ROOT, "held.bin", req()));
        assertThat(join(client.getattrAsync(Caller.ROOT, held.id())).nlink()).as("kept for its open session").isZero();

        InodeAttrs partial = create("partial.bin");
        OpenResult p = open(partial, OpenFlags.WRITE, 77);
        chunks.writeBytes(partial, 0, (int) MIB);
        chunks.writeBytes(partial, 1, (int) MIB / 2);
        join(client.fsyncAsync(Caller.ROOT, partial.id(), p.sessionId(), MIB + MIB / 2, req())); // 1.5 MiB published
        chunks.writeBytes(partial, 1, (int) MIB);  // then 2.5 MiB more that close never publishes
        chunks.writeBytes(partial, 2, (int) MIB);
        chunks.writeBytes(partial, 3, (int) MIB);

        // client 66 never keeps alive: its session counts from its open
        InodeAttrs quiet = create("quiet.bin");
        open(quiet, OpenFlags.READ | OpenFlags.TRACK, 66);

        Thread.sleep(LEASE.toMillis() * 2);
        assertThat(pruned()).as("nothing ended while 77 keeps alive (66's read session aside)").isLessThanOrEqualTo(1);
        assertThat(join(client.getattrAsync(Caller.ROOT, held.id())).nlink()).isZero();
        alive77.cancel(false); // 77 dies

        Eventually.await("the unlinked file 77 held is freed", Duration.ofSeconds(10), () -> {
            try {
                join(client.getattrAsync(Caller.ROOT, held.id()));
                return false;
            } catch (StrataException e) {
                return e.status() == Status.NOT_FOUND;
            }
        });
        Eventually.await("the trim of partial.bin", Duration.ofSeconds(10), () -> join(metaB.trimQueueLengthAsync()) == 0
                && join(metaA.trimQueueLengthAsync()) == 0 && sizeOr(partial, 2) == -1);
        assertThat(pruned()).as("77's two open sessions and 66's one").isEqualTo(3);
        assertThat(chunks.size(partial, 0)).as("below the length: untouched").isEqualTo(MIB);
        assertThat(chunks.size(partial, 1)).as("cut at the published length").isEqualTo(MIB / 2);
        assertThat(chunks.size(partial, 3)).as("past the length: removed").isEqualTo(-1);
        assertThat(join(client.getattrAsync(Caller.ROOT, partial.id())).length()).as("nothing published").isEqualTo(MIB + MIB / 2);
        assertThatThrownBy(() -> join(client.closeAsync(Caller.ROOT, partial.id(), p.sessionId(), 4 * MIB, true, req())))
                .satisfies(e -> assertThat(StrataException.wrap(e).status()).isEqualTo(Status.STALE_HANDLE));

        // the deleted file's chunks go through the GC queue
        join(metaA.collectGarbageAsync());
        assertThat(chunks.count(held.id())).isZero();

        // 88 kept alive through more than three leases: its session is there and its close publishes
        alive88.cancel(false);
        assertThat(join(client.closeAsync(Caller.ROOT, live.id(), liveSession.sessionId(), MIB + 1000, true, req())).length())
                .isEqualTo(MIB + 1000);
        assertThat(chunks.size(live, 1)).isEqualTo(1000);
        Fsck.check(kv);
    }

    private long sizeOr(InodeAttrs f, long index) {
        try {
            return chunks.size(f, index);
        } catch (IOException e) {
            return -2;
        }
    }

    @Test
    void aTrimWaitsForALiveWriterAndNewWritersWaitForTheTrim() throws Exception {
        InodeAttrs f = create("shared.bin");
        OpenResult dead = open(f, OpenFlags.WRITE, 77);
        ScheduledFuture<?> alive88 = keepAlive(88);
        OpenResult live = open(f, OpenFlags.WRITE, 88);
        chunks.writeBytes(f, 0, (int) MIB);
        chunks.writeBytes(f, 1, (int) MIB);
        chunks.writeBytes(f, 2, (int) MIB);
        join(client.fsyncAsync(Caller.ROOT, f.id(), live.sessionId(), MIB, req())); // 88 published 1 MiB; 77 wrote the rest
        Eventually.await("77's session ended", Duration.ofSeconds(10), () -> pruned() == 1);
        assertThat(join(metaA.trimQueueLengthAsync())).isEqualTo(1);
        join(metaA.collectGarbageAsync());
        assertThat(chunks.count(f.id())).as("nothing trimmed while 88 may still write and publish").isEqualTo(3);
        // another writer may join 88 meanwhile
        OpenResult third = open(f, OpenFlags.WRITE, 88);
        join(client.closeAsync(Caller.ROOT, f.id(), third.sessionId(), -1, false, req()));

        // 88 closes: the trim may run now; while it runs (its listing held), an open for writing waits
        join(client.closeAsync(Caller.ROOT, f.id(), live.sessionId(), MIB, true, req()));
        chunks.hang.set(true);
        CompletableFuture<Integer> pass = metaA.collectGarbageAsync();
        Thread.sleep(200);
        CompletableFuture<OpenResult> writer = client.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 88, req());
        OpenResult reader = open(f, OpenFlags.READ | OpenFlags.TRACK, 88); // reading needs no fence, tracked or not
        Thread.sleep(1000);
        assertThat(writer).as("an open for writing while the trim runs").isNotDone();
        chunks.hang.set(false);
        chunks.release();
        join(pass);
        OpenResult w = join(writer);
        assertThat(chunks.count(f.id())).as("chunk 0 holds the whole length").isEqualTo(1);
        assertThat(join(metaA.trimQueueLengthAsync())).isZero();
        join(client.closeAsync(Caller.ROOT, f.id(), w.sessionId(), -1, false, req()));
        join(client.closeAsync(Caller.ROOT, f.id(), reader.sessionId(), -1, false, req()));
        alive88.cancel(false);
        Fsck.check(kv);
    }

    @Test
    void aQueuedTrimSurvivesARestartAndFencesWritersUntilItIsDone() throws Exception {
        InodeAttrs f = create("f.bin");
        OpenResult w = open(f, OpenFlags.WRITE, 77);
        chunks.writeBytes(f, 0, 4096);
        join(client.fsyncAsync(Caller.ROOT, f.id(), w.sessionId(), 4096, req()));
        chunks.writeBytes(f, 0, (int) MIB);
        chunks.writeBytes(f, 5, (int) MIB);
        // the operator's prune ends the sessions at once and queues the trim without running it
        assertThat(join(metaB.pruneSessionsAsync(77))).isEqualTo(1);
        assertThat(join(metaB.trimQueueLengthAsync())).isEqualTo(1);

        // both instances go down before any collector pass; a new one starts on the same store
        rpc.close();
        server.close();
        metaA.close();
        metaB.close();
        kv.close();
        kv = LmdbKvStore.open(tmp.resolve("kv"), LmdbKvStore.Options.DEFAULTS.withSync(false), null);
        metaA = new MetaStore(ctxA, kv, StaticChainTables.uniform(6), chunks, options());
        metaB = new MetaStore(ctxB, kv, StaticChainTables.uniform(6), ChunkReclaimer.NONE, options());
        server = MetaService.register(RpcServer.builder(ctxA, MetaMessages.PROTOCOL), metaA).bind("127.0.0.1", 0);
        rpc = new RpcClient(clientCtx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        client = new MetaClient(clientCtx, rpc, List.of(server.address()), Duration.ofSeconds(5), 3);

        assertThat(join(metaA.trimQueueLengthAsync())).as("the queued trim after the restart").isEqualTo(1);
        assertThat(chunks.count(f.id())).isEqualTo(2);
        // a writer's open waits (the layer retries the conflict) until a collector pass has trimmed the file
        CompletableFuture<OpenResult> writer = client.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 88, req());
        Thread.sleep(500);
        assertThat(writer).isNotDone();
        assertThat(join(metaA.collectGarbageAsync())).isZero();
        OpenResult o = join(writer);
        assertThat(chunks.size(f, 0)).isEqualTo(4096);
        assertThat(chunks.size(f, 5)).isEqualTo(-1);
        assertThat(join(metaA.trimQueueLengthAsync())).isZero();
        join(client.closeAsync(Caller.ROOT, f.id(), o.sessionId(), -1, false, req()));
        Fsck.check(kv);
    }

    @Test
    void deletingAFileDropsItsQueuedTrim() {
        InodeAttrs f = create("gone.bin");
        open(f, OpenFlags.WRITE, 77);
        assertThat(join(metaA.pruneSessionsAsync(77))).isEqualTo(1);
        assertThat(join(metaA.trimQueueLengthAsync())).isEqualTo(1);
        join(client.unlinkAsync(Caller.ROOT, InodeId.ROOT, "gone.bin", req()));
        assertThat(join(metaA.trimQueueLengthAsync())).isZero();
        assertThat(join(metaA.gcQueueLengthAsync())).isEqualTo(1);
        Fsck.check(kv);
    }
}
