package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.MetaMessages;
import io.strata.core.rpc.Addresses;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.StrataException;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.core.util.JavaProcess;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.protocol.meta.MetaClient;
import io.strata.namespace.service.MetaServer;
import io.strata.store.PrivateFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A meta service process (LMDB, fsync on) is killed with SIGKILL in the middle of a stream of
 * creates. After a restart every create it acknowledged is there and the keyspace is consistent.
 */
class MetaServerCrashIT {
    @TempDir
    Path tmp;

    private JavaProcess startServer(Path config, Path data) throws Exception {
        Files.deleteIfExists(data.resolve("meta.address"));
        JavaProcess p = JavaProcess.start("meta", MetaServer.class.getName(), List.of("--config", config.toString()),
                List.of("-Xmx256m"), Map.of(), tmp.resolve("meta.log"));
        p.awaitReady(() -> Files.exists(data.resolve("meta.address")), Duration.ofSeconds(60));
        return p;
    }

    /** A meta service config: LMDB with every commit synced, no collector, {@code meta} added to its [meta] table. */
    private static void writeConfig(Path config, String name, Path data, String meta) throws java.io.IOException {
        Files.writeString(config, """
                [node]
                name = "%s"
                listen = "127.0.0.1:0"
                data = "%s"
                [meta]
                gc-interval = "0s"
                %s[meta.lmdb]
                sync = true
                [[meta.chain-tables]]
                id = 1
                replicas = 3
                chains = [1, 2, 3, 4]
                """.formatted(name, data, meta));
    }

    @Test
    void acknowledgedCreatesSurviveAKill() throws Exception {
        Path data = tmp.resolve("data");
        Path config = tmp.resolve("meta.toml");
        writeConfig(config, "meta-crash", data, "");
        List<String> acked = new ArrayList<>();
        try (NodeContext ctx = NodeContext.seeded("crash-client", 5)) {
            JavaProcess p = startServer(config, data);
            try (RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
                MetaClient c = new MetaClient(ctx, rpc, List.of(Addresses.parse(Files.readString(data.resolve("meta.address")))),
                        Duration.ofSeconds(5), 1);
                Random r = new Random(1);
                long killAt = System.nanoTime() + Duration.ofMillis(800 + r.nextInt(400)).toNanos();
                List<java.util.concurrent.CompletableFuture<InodeAttrs>> inflight = new ArrayList<>();
                List<String> names = new ArrayList<>();
                int i = 0;
                while (System.nanoTime() < killAt) {
                    String name = "f" + i++;
                    names.add(name);
                    inflight.add(c.createAsync(Caller.ROOT, InodeId.ROOT, name, 0644, true, RequestId.random(r)));
                    if (inflight.size() >= 8) {
                        collect(inflight, names, acked);
                    }
                }
                p.kill();
                collect(inflight, names, acked);
            } finally {
                p.close();
            }
            assertThat(acked).isNotEmpty();
            // restart: the service comes back over the same store and serves every acknowledged file
            JavaProcess again = startServer(config, data);
            try (RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
                MetaClient c = new MetaClient(ctx, rpc, List.of(Addresses.parse(Files.readString(data.resolve("meta.address")))));
                for (String name : acked) {
                    assertThat(Futures.join(c.lookupAsync(Caller.ROOT, InodeId.ROOT, name)).isFile()).isTrue();
                }
                Futures.join(c.createAsync(Caller.ROOT, InodeId.ROOT, "after-restart", 0644, true, null));
            } finally {
                again.stop(Duration.ofSeconds(10));
            }
        }
        // what the service process left at rest is its user's alone: the LMDB store and meta.address
        try (var all = Files.walk(data)) {
            assertThat(all.toList()).contains(data.resolve("meta.address"), data.resolve("meta/data.mdb"))
                    .allSatisfy(f -> assertThat(Files.getPosixFilePermissions(f)).as(f.toString())
                            .isEqualTo(Files.isDirectory(f) ? PrivateFiles.DIRECTORY : PrivateFiles.FILE));
        }
        try (LmdbKvStore kv = LmdbKvStore.open(data.resolve("meta"))) {
            Fsck.check(kv);
        }
    }

    /**
     * Many creates in flight at once (more than the service's worker threads, so they share
     * LMDB write transactions and fsyncs): the process is killed right after the last answer,
     * and every answered create is there after a restart.
     */
    @Test
    void concurrentCreatesAnsweredSurviveAKillRightAfterTheAnswers() throws Exception {
        Path data = tmp.resolve("data");
        Path config = tmp.resolve("meta.toml");
        writeConfig(config, "meta-crash-group", data, "workers = 2\n");
        int n = 300;
        List<InodeAttrs> answered = new ArrayList<>();
        try (NodeContext ctx = NodeContext.seeded("crash-client", 6)) {
            JavaProcess p = startServer(config, data);
            try (RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
                MetaClient c = new MetaClient(ctx, rpc, List.of(Addresses.parse(Files.readString(data.resolve("meta.address")))),
                        Duration.ofSeconds(30), 1);
                Random r = new Random(2);
                InodeAttrs dir = Futures.join(c.mkdirAsync(Caller.ROOT, InodeId.ROOT, "d", 0755, RequestId.random(r)));
                List<java.util.concurrent.CompletableFuture<InodeAttrs>> inflight = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    inflight.add(c.createAsync(Caller.ROOT, dir.id(), "f" + i, 0644, true, RequestId.random(r)));
                }
                java.util.concurrent.CompletableFuture.allOf(inflight.toArray(new java.util.concurrent.CompletableFuture[0]))
                        .get(60, java.util.concurrent.TimeUnit.SECONDS);
                p.kill(); // SIGKILL as soon as the last answer arrived
                for (var f : inflight) {
                    answered.add(f.join());
                }
            } finally {
                p.close();
            }
            JavaProcess again = startServer(config, data);
            try (RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
                MetaClient c = new MetaClient(ctx, rpc, List.of(Addresses.parse(Files.readString(data.resolve("meta.address")))));
                InodeAttrs dir = Futures.join(c.lookupAsync(Caller.ROOT, InodeId.ROOT, "d"));
                for (int i = 0; i < n; i++) {
                    InodeAttrs a = Futures.join(c.lookupAsync(Caller.ROOT, dir.id(), "f" + i));
                    assertThat(a.id()).as("f%d", i).isEqualTo(answered.get(i).id());
                }
            } finally {
                again.stop(Duration.ofSeconds(10));
            }
        }
        try (LmdbKvStore kv = LmdbKvStore.open(data.resolve("meta"))) {
            Fsck.check(kv);
        }
    }

    private static void collect(List<java.util.concurrent.CompletableFuture<InodeAttrs>> inflight, List<String> names, List<String> acked) {
        for (int k = 0; k < inflight.size(); k++) {
            try {
                Futures.join(inflight.get(k), Duration.ofSeconds(10));
                acked.add(names.get(k));
            } catch (StrataException e) {
                // in flight when the process died: may or may not exist, never half-made (fsck checks)
            }
        }
        inflight.clear();
        names.clear();
    }
}
