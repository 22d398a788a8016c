package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.rpc.CoreMessage;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Response;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.core.util.JavaProcess;
import io.strata.fuse.FuseMount;
import io.strata.core.util.Eventually;
import io.strata.store.PrivateFiles;
import java.io.Reader;
import java.net.InetSocketAddress;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata up} / {@code down} with real child processes: the whole embedded cluster (cluster
 * manager, meta service, three storage nodes, a FUSE mount where FUSE works), the native client
 * commands against it, files kept across a restart; and two Strata processes talking over the
 * RPC layer: bulk data both ways, and a peer killed with SIGKILL mid-request.
 */
class UpDownIT {
    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void upStartsTheClusterAndItsMountNativeCommandsWorkAndFilesSurviveARestart(@TempDir Path data, @TempDir Path local) throws Exception {
        Optional<String> noFuse = FuseMount.unavailable();
        CliTest.Run up = CliTest.strata("up", "--data", data.toString());
        assertThat(up.code()).as(up.err()).isZero();
        List<ClusterDir.Member> members = new ClusterDir(data).members();
        List<String> expected = new ArrayList<>(List.of("mgmtd", "meta", "storage-1", "storage-2", "storage-3", "l2-1", "l2-2", "hooks"));
        if (noFuse.isEmpty()) {
            expected.add("mount");
        }
        assertThat(members).extracting(ClusterDir.Member::name).containsExactlyElementsOf(expected);
        for (ClusterDir.Member m : members) {
            assertThat(ClusterDir.alive(m.pid())).as(m.name()).isTrue();
            assertThat(up.out()).contains("pid " + m.pid());
        }
        assertThat(up.out()).contains("strata down --data " + data).contains("strata put FILE");
        String d = "--data=" + data;
        byte[] content = new byte[3 << 20];
        new Random(42).nextBytes(content);
        Path src = Files.write(local.resolve("src.bin"), content);
        try {
            CliTest.Run again = CliTest.strata("up", "--data", data.toString());
            assertThat(again.code()).isEqualTo(1);
            assertThat(again.err()).contains("already running").contains(String.valueOf(members.get(0).pid()));

            CliTest.Run nodes = CliTest.strata("admin", "nodes", d);
            assertThat(nodes.code()).as(nodes.err()).isZero();
            assertThat(nodes.out()).contains("storage-1 pid " + members.get(2).pid()).contains("meta pid " + members.get(1).pid());

            assertThat(CliTest.strata("mkdir", "-p", "/ds/a", d).code()).isZero();
            CliTest.Run put = CliTest.strata("put", src.toString(), "/ds/a/", d);
            assertThat(put.code()).as(put.err()).isZero();
            CliTest.Run ls = CliTest.strata("ls", "-l", "/ds/a", d);
            assertThat(ls.out()).contains("src.bin").contains(String.valueOf(content.length));
            CliTest.Run stat = CliTest.strata("stat", "/ds/a/src.bin", d);
            assertThat(stat.out()).contains("size: " + content.length).contains("3 replicas");
            CliTest.Run nonexistent = CliTest.strata("stat", "/nonexistent", d);
            assertThat(nonexistent.code()).isEqualTo(1);
            assertThat(nonexistent.err().strip()).isEqualTo("strata: /nonexistent: no such file or directory");

            // policy finds the meta service of the local cluster as the file commands do: no --meta
            CliTest.Run policy = CliTest.strata("policy", "get", "/", d);
            assertThat(policy.code()).as(policy.err()).isZero();
            assertThat(policy.out()).contains("policy of /").containsPattern("replicas +\\|");
            // and with no flag at all, from the environment (set for a child process)
            CliTest.Run bare = strataWithEnv(local, Map.of("STRATA_DATA", data.toString(), "STRATA_MGMTD", ""), "policy", "get", "/");
            assertThat(bare.code()).as(bare.out()).isZero();
            assertThat(bare.out()).contains(policy.out());
            String mgmtd = UpLayout.find(data).orElseThrow().mgmtdAddress();
            CliTest.Run byManager = strataWithEnv(local, Map.of("STRATA_MGMTD", mgmtd, "STRATA_DATA", local.resolve("none").toString()),
                    "ls", "/ds/a", "--token-file", data.resolve(UpAuth.CLIENT_TOKEN).toString(),
                    "--tls-config", data.resolve(ClientSource.CLIENT_TOML).toString());
            assertThat(byManager.code()).as(byManager.out()).isZero();
            assertThat(byManager.out().lines()).contains("src.bin");
            if (noFuse.isEmpty()) {
                Path mnt = data.resolve("mnt");
                assertThat(Files.readAllBytes(mnt.resolve("ds/a/src.bin"))).isEqualTo(content);
                Files.write(mnt.resolve("ds/viafuse.bin"), content);
                assertThat(CliTest.strata("cp", "strata:/ds/viafuse.bin", local.resolve("back.bin").toString(), d).code()).isZero();
                assertThat(Files.readAllBytes(local.resolve("back.bin"))).isEqualTo(content);
                // df: the storage nodes' disk (one file system under all three, counted once) over the root's 3 replicas
                FileStore disk = Files.getFileStore(data);
                FileStore mounted = Files.getFileStore(mnt);
                long capacity = disk.getTotalSpace() - disk.getUnallocatedSpace() + disk.getUsableSpace();
                Eventually.await("df on the mount shows the cluster's disk", T, () -> {
                    try {
                        return Math.abs(mounted.getTotalSpace() - capacity / 3) <= (64L << 20);
                    } catch (java.io.IOException e) {
                        return false;
                    }
                });
                assertThat(mounted.getUsableSpace()).isBetween(disk.getUsableSpace() / 3 - (1L << 30), disk.getUsableSpace() / 3 + (1L << 30));
            }
            // a checkpoint directory staged in the L2 pool: the two agents take the writes, the drain makes them durable in L3
            assertThat(CliTest.strata("mkdir", "-p", "/ckpt", d).code()).isZero();
            CliTest.Run stage = CliTest.strata("policy", "set", "/ckpt", "tiers.l2=stage", "durability=l2", d);
            assertThat(stage.code()).as(stage.err()).isZero();
            CliTest.Run staged = CliTest.strata("put", src.toString(), "/ckpt/", d);
            assertThat(staged.code()).as(staged.err()).isZero();
            CliTest.Run l2 = CliTest.strata("admin", "l2", d);
            assertThat(l2.code()).as(l2.err()).isZero();
            assertThat(l2.out()).contains("2001").contains("2002").contains("live");
            Eventually.await("the staged file durable in L3", T,
                    () -> CliTest.strata("stat", "/ckpt/src.bin", d).out().contains("durable in: l3"));
            assertThat(CliTest.strata("cp", "strata:/ckpt/src.bin", local.resolve("staged.bin").toString(), d).code()).isZero();
            assertThat(Files.readAllBytes(local.resolve("staged.bin"))).isEqualTo(content);
            if (noFuse.isEmpty()) {
                Path viaMount = data.resolve("mnt").resolve("ckpt/rank-0.pt");
                Files.write(viaMount, content);
                assertThat(Files.readAllBytes(viaMount)).isEqualTo(content);
                assertThat(CliTest.strata("stat", "/ckpt/rank-0.pt", d).out()).contains("durable in: l");
            }

            CliTest.Run self = CliTest.strata("cp", "strata:/ds/a/src.bin", "strata:/ds/a", d);
            assertThat(self.code()).isEqualTo(1);
            assertThat(self.err()).contains("are the same file");
            assertThat(CliTest.strata("stat", "/ds/a/src.bin", d).out()).as("a copy onto itself leaves the file whole")
                    .contains("size: " + content.length);
            CliTest.Run missing = CliTest.strata("cat", "/ds/nope", d);
            assertThat(missing.code()).isNotZero();
            assertThat(missing.err()).contains("nope").doesNotContain("Exception");
        } finally {
            CliTest.Run down = CliTest.strata("down", "--data", data.toString());
            assertThat(down.code()).isZero();
            assertThat(down.out()).contains("stopped storage-1").contains("stopped mgmtd");
        }
        for (ClusterDir.Member m : members) {
            Eventually.await(m.name() + " gone", T, () -> !ClusterDir.alive(m.pid()));
        }
        assertThat(FuseMount.isMounted(data.resolve("mnt"))).isFalse();
        assertThat(Files.exists(data.resolve(ClusterDir.STATE))).isFalse();
        assertThat(CliTest.strata("down", "--data", data.toString()).out()).contains("nothing is running");
        // at rest, every directory and file the cluster left is this user's alone, except Ratis's own files (made with
        // the umask's modes, inside its private storage directory) and the mount point (the mounted file system's)
        Path ratis = data.resolve("mgmtd").resolve("ratis");
        assertThat(Files.getPosixFilePermissions(ratis)).isEqualTo(PrivateFiles.DIRECTORY);
        try (Stream<Path> all = Files.walk(data)) {
            assertThat(all.filter(p -> !p.startsWith(ratis) && !p.equals(data.resolve("mnt"))).toList())
                    .contains(data.resolve("logs/storage-1.log"), data.resolve("storage-1/storage-1.toml"))
                    .allSatisfy(p -> assertThat(Files.getPosixFilePermissions(p)).as(p.toString())
                            .isEqualTo(Files.isDirectory(p) ? PrivateFiles.DIRECTORY : PrivateFiles.FILE));
        }

        // the same data directory brings back the same cluster with its files
        // (mounted through libfuse3 this time, where it works here)
        CliTest.Run badFuse = CliTest.strata("up", "--data", data.toString(), "--fuse", "libfuse9");
        assertThat(badFuse.code()).isEqualTo(1);
        assertThat(badFuse.err()).contains("--fuse").contains("libfuse9");
        boolean fuse3 = FuseMount.unavailable(io.strata.fuse.MountOptions.Libfuse.LIBFUSE3).isEmpty();
        CliTest.Run up2 = fuse3 ? CliTest.strata("up", "--data", data.toString(), "--fuse", "libfuse3")
                : CliTest.strata("up", "--data", data.toString(), "--no-mount");
        assertThat(up2.code()).as(up2.err()).isZero();
        try {
            if (fuse3) {
                assertThat(up2.out()).contains("Mounted at " + data.resolve("mnt") + " (libfuse3)");
                assertThat(Files.readAllBytes(data.resolve("mnt").resolve("ds/a/src.bin"))).as("through libfuse3").isEqualTo(content);
            } else {
                assertThat(up2.out()).contains("No FUSE mount (--no-mount was given)");
            }
            Path back = local.resolve("restart.bin");
            CliTest.Run cp = CliTest.strata("cp", "strata:/ds/a/src.bin", back.toString(), d);
            assertThat(cp.code()).as(cp.err()).isZero();
            assertThat(Files.readAllBytes(back)).isEqualTo(content);
            Path stagedBack = local.resolve("staged-restart.bin");
            CliTest.Run cp2 = CliTest.strata("cp", "strata:/ckpt/src.bin", stagedBack.toString(), d);
            assertThat(cp2.code()).as(cp2.err()).isZero();
            assertThat(Files.readAllBytes(stagedBack)).isEqualTo(content);
            assertThat(CliTest.strata("rm", "-r", "/ds", d).code()).isZero();
            assertThat(CliTest.strata("ls", "/", d).out()).doesNotContain("ds");
        } finally {
            assertThat(CliTest.strata("down", "--data", data.toString()).code()).isZero();
        }
    }

    /**
     * {@code strata ARGS} in a child process whose environment adds {@code env} (this JVM's cannot
     * be changed): its exit code, and stdout and stderr together (with any log lines) as {@code out}.
     */
    private static CliTest.Run strataWithEnv(Path logs, Map<String, String> env, String... args) throws Exception {
        Path log = Files.createTempFile(logs, "strata-", ".log");
        JavaProcess p = JavaProcess.start("strata", StrataMain.class.getName(), List.of(args), List.of("-Xmx256m"), env, log);
        assertThat(p.waitFor(T)).as("strata " + String.join(" ", args) + " finished").isTrue();
        return new CliTest.Run(p.exitValue(), Files.readString(log), "");
    }

    @Test
    void twoNodeProcessesExchangeBulkDataBothWays(@TempDir Path data) throws Exception {
        JavaProcess node = startNode(data);
        try {
            CliTest.Run ping = CliTest.strata("ping", rpcOf(data), "--count", "2");
            assertThat(ping.code()).as(ping.err()).isZero();
            assertThat(ping.out()).contains("pong from").contains("node-1");
            exchangeBulkData(resolve(rpcOf(data)));
        } finally {
            node.stop(Duration.ofSeconds(10));
        }
    }

    /** A bare {@code strata node} child process with its ready file under {@code data}. */
    private static JavaProcess startNode(Path data) throws Exception {
        Path config = Files.writeString(data.resolve("node.toml"), """
                [node]
                name = "node-1"
                listen = "127.0.0.1:0"
                data = "%s"
                """.formatted(data));
        JavaProcess p = JavaProcess.start("node-1", StrataMain.class.getName(), List.of("node", "--config", config.toString()),
                List.of("-Xmx256m"), Map.of(), data.resolve("node.log"));
        p.awaitReady(() -> Files.exists(data.resolve(DaemonRuntime.READY_FILE)), T);
        return p;
    }

    private static String rpcOf(Path data) throws Exception {
        Properties props = new Properties();
        try (Reader r = Files.newBufferedReader(data.resolve(DaemonRuntime.READY_FILE))) {
            props.load(r);
        }
        return props.getProperty("rpc");
    }

    private static void exchangeBulkData(InetSocketAddress node) {
        try (NodeContext ctx = NodeContext.builder("it-client").build();
             RpcClient client = new RpcClient(ctx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS)) {
            int size = 16 << 20;
            ByteBuf data = Unpooled.directBuffer(size);
            EchoService.fill(data, size, 7);
            int crc = EchoService.crc32c(data);
            try (Response r = Futures.join(client.call(node, new CoreMessage.Echo(CoreMessage.Echo.FLAG_RETURN | CoreMessage.Echo.FLAG_CHECKSUM),
                    Payload.of(data), T), T)) {
                assertThat(r.message(CoreMessage.Echoed.class).crc32c()).isEqualTo(crc);
                assertThat(EchoService.crc32c(r.payload())).isEqualTo(crc);
            }
            try (Response r = Futures.join(client.call(node, new CoreMessage.Pull(size, 3), Payload.NONE, T), T)) {
                assertThat(r.payload().readableBytes()).isEqualTo(size);
            }
        }
    }

    @Test
    void aPeerKilledMidRequestFailsItsCallersPromptly(@TempDir Path data) throws Exception {
        JavaProcess node = startNode(data);
        try (NodeContext ctx = NodeContext.builder("it-client").build();
             RpcClient client = new RpcClient(ctx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS)) {
            InetSocketAddress addr = resolve(rpcOf(data));
            Futures.join(client.call(addr, new CoreMessage.Ping(1)), T).close();
            List<CompletableFuture<Response>> calls = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                ByteBuf b = Unpooled.directBuffer(4 << 20);
                b.writeZero(4 << 20);
                calls.add(client.call(addr, new CoreMessage.Echo(CoreMessage.Echo.FLAG_RETURN), Payload.of(b), Duration.ofSeconds(60)));
            }
            long t0 = System.nanoTime();
            ProcessHandle.of(node.pid()).orElseThrow().destroyForcibly(); // SIGKILL
            int lost = 0;
            for (CompletableFuture<Response> c : calls) {
                try {
                    c.get(10, TimeUnit.SECONDS).close();
                } catch (java.util.concurrent.ExecutionException e) {
                    StrataException se = StrataException.wrap(e.getCause());
                    assertThat(se.status()).isIn(Status.CONNECTION_LOST, Status.CONNECTION_FAILED);
                    lost++;
                }
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(lost).as("requests in flight when the peer died").isPositive();
            assertThat(ms).as("callers learn of the death long before their 60 s deadline").isLessThan(10_000);
        } finally {
            node.stop(Duration.ofSeconds(10));
        }
    }

    static InetSocketAddress resolve(String hostPort) {
        int i = hostPort.lastIndexOf(':');
        return new InetSocketAddress(hostPort.substring(0, i), Integer.parseInt(hostPort.substring(i + 1)));
    }
}
