package io.strata.namespace.service;

import io.strata.protocol.meta.MetaClient;
import io.strata.protocol.meta.MetaMessages;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.namespace.ChunkReclaimer;
import io.strata.protocol.meta.DeviceNumber;
import io.strata.protocol.meta.DirPage;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.namespace.MetaStore;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.StatFs;
import io.strata.namespace.StaticChainTables;
import io.strata.namespace.kv.LmdbKvStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two stateless meta service instances over one store (as several instances serve one
 * FoundationDB cluster; here one LMDB store shared in process), a client on real sockets that
 * retries on the other instance.
 */
class MetaServiceTest {
    @TempDir
    Path tmp;
    LmdbKvStore kv;
    NodeContext ctxA;
    NodeContext ctxB;
    NodeContext clientCtx;
    MetaStore metaA;
    MetaStore metaB;
    RpcServer a;
    RpcServer b;
    RpcClient rpc;
    MetaClient client;

    @BeforeEach
    void start() {
        ctxA = NodeContext.seeded("meta-a", 11);
        ctxB = NodeContext.seeded("meta-b", 12);
        clientCtx = NodeContext.seeded("client", 13);
        kv = LmdbKvStore.open(tmp.resolve("kv"), LmdbKvStore.Options.DEFAULTS.withSync(false), null);
        MetaStore.Options o = MetaStore.Options.DEFAULTS.withGc(Duration.ZERO, Duration.ZERO);
        metaA = new MetaStore(ctxA, kv, StaticChainTables.uniform(6), ChunkReclaimer.NONE, o);
        metaB = new MetaStore(ctxB, kv, StaticChainTables.uniform(6), ChunkReclaimer.NONE, o);
        a = MetaService.register(RpcServer.builder(ctxA, MetaMessages.PROTOCOL), metaA).bind("127.0.0.1", 0);
        b = MetaService.register(RpcServer.builder(ctxB, MetaMessages.PROTOCOL), metaB).bind("127.0.0.1", 0);
        rpc = new RpcClient(clientCtx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS);
        client = new MetaClient(clientCtx, rpc, List.of(a.address(), b.address()), Duration.ofSeconds(2), 6);
    }

    @AfterEach
    void stop() {
        rpc.close();
        a.close();
        b.close();
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

    @Test
    void everyOperationWorksThroughTheService() {
        Caller root = Caller.ROOT;
        InodeAttrs d = join(client.mkdirAsync(root, io.strata.core.InodeId.ROOT, "data", 0755, req()));
        InodeAttrs f = join(client.createAsync(root, d.id(), "f", 0644, true, req()));
        assertThat(f.layout().stripeWidth()).isEqualTo(4);
        assertThat(join(client.lookupAsync(root, d.id(), "f")).id()).isEqualTo(f.id());
        assertThat(join(client.resolveAsync(root, "/data/f")).id()).isEqualTo(f.id());
        assertThat(join(client.getattrAsync(root, f.id())).mode()).isEqualTo(0644);
        assertThat(join(client.setattrAsync(root, f.id(), SetAttr.mode(0600), req())).mode()).isEqualTo(0600);
        InodeAttrs s = join(client.symlinkAsync(root, d.id(), "s", "f", req()));
        assertThat(join(client.readlinkAsync(root, s.id()))).isEqualTo("f");
        assertThat(join(client.linkAsync(root, f.id(), d.id(), "g", req())).nlink()).isEqualTo(2);
        DirPage page = join(client.readdirAsync(root, d.id(), null, 2, true));
        assertThat(page.entries()).extracting(e -> e.name()).containsExactly("f", "g");
        assertThat(page.next()).isEqualTo("g");
        assertThat(join(client.readdirAsync(root, d.id(), page.next(), 2, false)).entries()).extracting(e -> e.name()).containsExactly("s");
        OpenResult o = join(client.openAsync(root, f.id(), OpenFlags.WRITE, 5, req()));
        assertThat(join(client.fsyncAsync(root, f.id(), o.sessionId(), 10, req())).length()).isEqualTo(10);
        assertThat(join(client.closeAsync(root, f.id(), o.sessionId(), 100, true, req())).length()).isEqualTo(100);
        join(client.setxattrAsync(root, f.id(), "user.k", new byte[] {9}, 0, req()));
        assertThat(join(client.getxattrAsync(root, f.id(), "user.k"))).containsExactly(9);
        assertThat(join(client.listxattrAsync(root, f.id()))).containsExactly("user.k");
        join(client.removexattrAsync(root, f.id(), "user.k", req()));
        assertThat(join(client.policySetAsync(root, d.id(), List.of("replicas=2"), req())).overrides()).containsEntry("replicas", "2");
        assertThat(join(client.policyGetAsync(root, d.id())).path()).isEqualTo("/data");
        InodeAttrs dev = join(client.mknodAsync(root, d.id(), "dev", InodeType.CHAR_DEVICE, 0620, DeviceNumber.of(4, 1), req()));
        assertThat(join(client.lookupAsync(root, d.id(), "dev")).rdev()).isEqualTo(DeviceNumber.of(4, 1));
        assertThat(join(client.readdirAsync(root, d.id(), null, 1, false)).entries().get(0).type()).isEqualTo(InodeType.CHAR_DEVICE);
        Caller alice = Caller.of(1000, 1000);
        join(client.setattrAsync(root, d.id(), SetAttr.mode(0777), req()));
        OpenResult made = join(client.createOpenAsync(alice, d.id(), "zero", 0, true, OpenFlags.READ | OpenFlags.WRITE, 5, req()));
        assertThat(made.attrs().mode()).isZero();
        assertThat(join(client.setattrAsync(alice.through(made.sessionId()), made.attrs().id(), SetAttr.size(3), req())).length())
                .isEqualTo(3);
        join(client.closeAsync(alice, made.attrs().id(), made.sessionId(), 0, false, req()));
        assertThat(join(client.getattrAsync(root, d.id())).nlink()).isEqualTo(2);
        join(client.unlinkAsync(root, d.id(), "dev", req()));
        join(client.unlinkAsync(root, d.id(), "zero", req()));
        assertThatThrownBy(() -> join(client.mknodAsync(alice, d.id(), "dev", InodeType.BLOCK_DEVICE, 0600, 1, req())))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.NOT_PERMITTED));
        join(client.renameAsync(root, d.id(), "g", d.id(), "h", false, req()));
        join(client.unlinkAsync(root, d.id(), "h", req()));
        join(client.unlinkAsync(root, d.id(), "s", req()));
        join(client.unlinkAsync(root, d.id(), "f", req()));
        join(client.rmdirAsync(root, io.strata.core.InodeId.ROOT, "data", req()));
        assertThat(join(client.statfsAsync(root))).isEqualTo(new StatFs(1, 0));
        // errors keep their errno-style status across the wire
        assertThatThrownBy(() -> join(client.createAsync(root, io.strata.core.InodeId.ROOT, "a/b", 0644, true, req())))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.INVALID_NAME));
        assertThatThrownBy(() -> join(client.createAsync(root, io.strata.core.InodeId.ROOT, "n".repeat(300), 0644, true, req())))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.NAME_TOO_LONG));
        assertThatThrownBy(() -> join(client.mkdirAsync(Caller.of(5, 5), io.strata.core.InodeId.ROOT, "x", 0755, req())))
                .satisfies(e -> assertThat(((StrataException) e).status()).isEqualTo(Status.PERMISSION_DENIED));
    }

    @Test
    void theClientMovesToAnotherInstanceWhenOneStops() {
        join(client.mkdirAsync(Caller.ROOT, io.strata.core.InodeId.ROOT, "before", 0755, req()));
        assertThat(client.currentInstance()).isEqualTo(a.address());
        a.close();
        InodeAttrs after = join(client.mkdirAsync(Caller.ROOT, io.strata.core.InodeId.ROOT, "after", 0755, req()));
        assertThat(client.currentInstance()).isEqualTo(b.address());
        assertThat(join(client.lookupAsync(Caller.ROOT, io.strata.core.InodeId.ROOT, "after")).id()).isEqualTo(after.id());
        assertThat(join(client.lookupAsync(Caller.ROOT, io.strata.core.InodeId.ROOT, "before")).isDirectory()).isTrue();
    }

    @Test
    void aRetryOnAnotherInstanceOfACommittedCreateReturnsTheSameFile() {
        // instance A commits the create but its answer is lost; the client times out and asks B
        var rule = ctxA.faults().arm(FaultPoint.RPC_SEND, new Fault.Drop()).when(s -> s.message().equals("Create")).times(1);
        InodeAttrs f = join(client.createAsync(Caller.ROOT, io.strata.core.InodeId.ROOT, "once", 0644, true, req()));
        assertThat(rule.fired()).isEqualTo(1);
        assertThat(client.currentInstance()).isEqualTo(b.address());
        assertThat(join(client.lookupAsync(Caller.ROOT, io.strata.core.InodeId.ROOT, "once")).id()).isEqualTo(f.id());
        assertThat(join(client.statfsAsync(Caller.ROOT)).inodes()).isEqualTo(2);
    }
}
