package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.util.Eventually;
import io.strata.core.util.JavaProcess;
import io.strata.testing.Slow;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * L2 agents are processes that die: on a {@code strata up} cluster (two agents, lease 10 s), an
 * agent is killed with SIGKILL as soon as a staged checkpoint's file exists (while its 96 MiB are
 * written), then the other one right
 * after a second checkpoint's close returned (its bytes acknowledged in L2, not yet drained). No
 * acknowledged byte is lost: every file reads back whole and becomes durable in L3; the killed
 * agent restarts from its own store and serves again.
 */
@Slow
class L2AgentKillIT {
    private static final Duration T = Duration.ofSeconds(90);

    private static ClusterDir.Member member(Path data, String name) throws Exception {
        return new ClusterDir(data).members().stream().filter(m -> m.name().equals(name)).findFirst().orElseThrow();
    }

    private static void kill9(ClusterDir.Member m) {
        ProcessHandle.of(m.pid()).ifPresent(ProcessHandle::destroyForcibly);
        Eventually.await(m.name() + " gone", Duration.ofSeconds(10), () -> !ClusterDir.alive(m.pid()));
    }

    @Test
    void killedAgentsLoseNoAcknowledgedByte(@TempDir Path data, @TempDir Path local) throws Exception {
        CliTest.Run up = CliTest.strata("up", "--data", data.toString(), "--no-mount");
        assertThat(up.code()).as(up.err()).isZero();
        String d = "--data=" + data;
        JavaProcess restarted = null;
        try {
            assertThat(CliTest.strata("mkdir", "-p", "/ckpt", d).code()).isZero();
            assertThat(CliTest.strata("policy", "set", "/ckpt", "tiers.l2=stage", "durability=l2", d).code()).isZero();
            byte[] first = new byte[96 << 20];
            new Random(1).nextBytes(first);
            Path src1 = Files.write(local.resolve("rank-0.pt"), first);

            // 1. an agent dies while the checkpoint is written
            ClusterDir.Member l21 = member(data, "l2-1");
            CompletableFuture<CliTest.Run> put = CompletableFuture.supplyAsync(() -> CliTest.strata("put", src1.toString(), "/ckpt/", d));
            Eventually.await("the put has created its file", T, () -> CliTest.strata("stat", "/ckpt/rank-0.pt", d).code() == 0);
            kill9(l21);
            assertThat(put.isDone()).as("the agent died while the file was being written").isFalse();
            CliTest.Run done = put.get();
            assertThat(done.code()).as("the write survives the agent: " + done.err()).isZero();
            Path back1 = local.resolve("back-0.pt");
            assertThat(CliTest.strata("cp", "strata:/ckpt/rank-0.pt", back1.toString(), d).code()).isZero();
            assertThat(Files.readAllBytes(back1)).isEqualTo(first);
            Eventually.await("rank-0.pt durable in L3", T, () -> CliTest.strata("stat", "/ckpt/rank-0.pt", d).out().contains("durable in: l3"));

            // the killed agent restarts from its store and serves again
            Path config = data.resolve("l2-1").resolve("l2-1.toml");
            Path ready = data.resolve("l2-1").resolve(DaemonRuntime.READY_FILE);
            Files.deleteIfExists(ready);
            restarted = JavaProcess.start("l2-1", StrataMain.class.getName(), List.of("l2", "--config", config.toString()),
                    List.of("-Xmx384m"), Map.of(), local.resolve("l2-1-restart.log"));
            restarted.awaitReady(() -> Files.exists(ready), T);
            Eventually.await("both agents live", T, () -> {
                String out = CliTest.strata("admin", "l2", d).out();
                return out.contains("2001") && out.contains("2002") && !out.contains("expired") && !out.contains("unreachable");
            });

            // 2. the other agent dies after close returned: its copies are acknowledged, the drain has not finished
            byte[] second = new byte[64 << 20];
            new Random(2).nextBytes(second);
            Path src2 = Files.write(local.resolve("rank-1.pt"), second);
            CliTest.Run put2 = CliTest.strata("put", src2.toString(), "/ckpt/", d);
            assertThat(put2.code()).as(put2.err()).isZero();
            kill9(member(data, "l2-2"));
            Eventually.await("rank-1.pt durable in L3", T, () -> CliTest.strata("stat", "/ckpt/rank-1.pt", d).out().contains("durable in: l3"));
            Path back2 = local.resolve("back-1.pt");
            assertThat(CliTest.strata("cp", "strata:/ckpt/rank-1.pt", back2.toString(), d).code()).isZero();
            assertThat(Files.readAllBytes(back2)).isEqualTo(second);
            assertThat(CliTest.strata("admin", "l2", d).out()).contains("Every staged file is durable in L3");
        } finally {
            if (restarted != null) {
                restarted.stop(Duration.ofSeconds(10));
            }
            assertThat(CliTest.strata("down", "--data", data.toString()).code()).isZero();
        }
    }
}
