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
import io.strata.testing.Eventually;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata up} / {@code down} with real child processes, and two Strata processes talking
 * over the RPC layer: bulk data both ways, and a peer killed with SIGKILL mid-request.
 */
class UpDownIT {
    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void upStartsANodeOtherProcessesCanTalkToAndDownStopsIt(@TempDir Path data) throws Exception {
        CliTest.Run up = CliTest.strata("up", "--data", data.toString());
        assertThat(up.code()).as(up.err()).isZero();
        List<ClusterDir.Member> members = new ClusterDir(data).members();
        assertThat(members).hasSize(1);
        ClusterDir.Member node = members.get(0);
        assertThat(up.out()).contains("pid " + node.pid()).contains(node.rpc()).contains("strata down --data");
        assertThat(ClusterDir.alive(node.pid())).isTrue();
        try {
            CliTest.Run again = CliTest.strata("up", "--data", data.toString());
            assertThat(again.code()).isEqualTo(1);
            assertThat(again.err()).contains("already running").contains(String.valueOf(node.pid()));

            CliTest.Run ping = CliTest.strata("ping", node.rpc(), "--count", "2");
            assertThat(ping.code()).as(ping.err()).isZero();
            assertThat(ping.out()).contains("pong from").contains("node-1");

            exchangeBulkData(resolve(node.rpc()));
        } finally {
            CliTest.Run down = CliTest.strata("down", "--data", data.toString());
            assertThat(down.code()).isZero();
            assertThat(down.out()).contains("stopped node-1");
        }
        Eventually.await("node process gone", T, () -> !ClusterDir.alive(node.pid()));
        assertThat(Files.exists(data.resolve(ClusterDir.STATE))).isFalse();
        assertThat(CliTest.strata("down", "--data", data.toString()).out()).contains("nothing is running");
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
        assertThat(CliTest.strata("up", "--data", data.toString()).code()).isZero();
        ClusterDir.Member node = new ClusterDir(data).members().get(0);
        try (NodeContext ctx = NodeContext.builder("it-client").build();
             RpcClient client = new RpcClient(ctx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS)) {
            InetSocketAddress addr = resolve(node.rpc());
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
            CliTest.strata("down", "--data", data.toString());
        }
    }

    static InetSocketAddress resolve(String hostPort) {
        int i = hostPort.lastIndexOf(':');
        return new InetSocketAddress(hostPort.substring(0, i), Integer.parseInt(hostPort.substring(i + 1)));
    }
}
