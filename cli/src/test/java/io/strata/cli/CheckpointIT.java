package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.core.util.Eventually;
import io.strata.fuse.FuseMount;
import io.strata.testing.Slow;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checkpoint generations on a {@code strata up} cluster through its FUSE mount, with processes
 * that die: a writer killed with SIGKILL mid-generation leaves the previous generation as latest
 * and its partial generation is collected after the grace period; an L2 agent killed right
 * after a commit returned leaves the generation restorable and it still becomes durable in L3;
 * and the Python package's tests (python/strata-ckpt) run on the mount.
 */
@Slow
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CheckpointIT {
    private static final Duration T = Duration.ofSeconds(120);

    @TempDir
    static Path data;
    @TempDir
    static Path local;
    static String d;
    static Path mnt;

    @BeforeAll
    static void up() {
        assumeTrue(FuseMount.unavailable().isEmpty(), () -> "FUSE is not available: " + FuseMount.unavailable().orElse(""));
        CliTest.Run up = CliTest.strata("up", "--data", data.toString());
        assertThat(up.code()).as(up.err()).isZero();
        d = "--data=" + data;
        mnt = data.resolve("mnt");
    }

    @AfterAll
    static void down() {
        if (d != null) {
            assertThat(CliTest.strata("down", "--data", data.toString()).code()).isZero();
        }
    }

    private static Process sh(String script) throws IOException {
        return new ProcessBuilder("sh", "-c", script).redirectErrorStream(true).redirectOutput(local.resolve("sh.log").toFile()).start();
    }

    private static void root(String path, String... policy) {
        assertThat(CliTest.strata("mkdir", "-p", path, d).code()).isZero();
        List<String> args = new ArrayList<>(List.of("policy", "set", path, "profile=checkpoint"));
        args.addAll(List.of(policy));
        args.add(d);
        CliTest.Run set = CliTest.strata(args.toArray(String[]::new));
        assertThat(set.code()).as(set.err()).isZero();
    }

    @Test
    @Order(1)
    void aWriterKilledMidGenerationLeavesThePreviousOneLatestAndItsPartialOneIsCollected() throws Exception {
        // the grace must outlast g1's write and the start of the commit's own JVM: with 2 s, a
        // loaded machine let the keeper collect g1 as a partial generation before its commit
        root("/ckpt/kill", "checkpoint.grace=10s");
        Path g1 = Files.createDirectories(mnt.resolve("ckpt/kill/g1"));
        byte[] model = new byte[4 << 20];
        new Random(1).nextBytes(model);
        Files.write(g1.resolve("model.bin"), model);
        CliTest.Run commit = CliTest.strata("ckpt", "commit", "/ckpt/kill/g1", "--level", "l2", d);
        assertThat(commit.code()).as(commit.err()).isZero();

        Path g2 = Files.createDirectories(mnt.resolve("ckpt/kill/g2"));
        Process writer = sh("exec dd if=/dev/zero of=" + g2.resolve("model.bin") + " bs=1M count=100000");
        Eventually.await("the writer is writing", T, () -> g2.resolve("model.bin").toFile().length() > 0);
        writer.destroyForcibly();
        assertThat(writer.waitFor(30, TimeUnit.SECONDS)).isTrue();

        CliTest.Run latest = CliTest.strata("ckpt", "latest", "/ckpt/kill", d);
        assertThat(latest.out().strip()).isEqualTo("/ckpt/kill/g1");
        Eventually.await("the partial generation is collected", T, () -> !Files.exists(g2));
        assertThat(CliTest.strata("ckpt", "latest", "/ckpt/kill", d).out().strip()).isEqualTo("/ckpt/kill/g1");
        assertThat(Files.readAllBytes(g1.resolve("model.bin"))).isEqualTo(model);
    }

    @Test
    @Order(2)
    void anAgentKilledRightAfterACommitLeavesTheGenerationRestorable() throws Exception {
        root("/ckpt/agent");
        Path g = Files.createDirectories(mnt.resolve("ckpt/agent/step-1"));
        byte[][] shards = new byte[4][];
        List<Process> writers = new ArrayList<>();
        for (int r = 0; r < shards.length; r++) {
            shards[r] = new byte[32 << 20];
            new Random(10 + r).nextBytes(shards[r]);
            Path src = Files.write(local.resolve("shard-" + r), shards[r]);
            writers.add(sh("exec dd if=" + src + " of=" + g.resolve("__" + r + "_0.distcp") + " bs=1M conv=fsync status=none"));
        }
        for (Process w : writers) {
            assertThat(w.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(w.exitValue()).isZero();
        }
        CliTest.Run commit = CliTest.strata("ckpt", "commit", "/ckpt/agent/step-1", "--level", "l2", d);
        assertThat(commit.code()).as(commit.err()).isZero();
        ClusterDir.Member agent = new ClusterDir(data).members().stream().filter(m -> m.name().equals("l2-1")).findFirst().orElseThrow();
        ProcessHandle.of(agent.pid()).ifPresent(ProcessHandle::destroyForcibly);
        Eventually.await("l2-1 gone", Duration.ofSeconds(10), () -> !ClusterDir.alive(agent.pid()));

        CliTest.Run wait = CliTest.strata("ckpt", "wait", "/ckpt/agent/step-1", "--level", "l3", "--timeout", "2m", d);
        assertThat(wait.code()).as(wait.out() + wait.err()).isZero();
        for (int r = 0; r < shards.length; r++) {
            assertThat(Files.readAllBytes(g.resolve("__" + r + "_0.distcp"))).as("shard " + r).isEqualTo(shards[r]);
        }
        CliTest.Run verify = CliTest.strata("ckpt", "verify", "/ckpt/agent/step-1", d);
        assertThat(verify.code()).as(verify.out() + verify.err()).isZero();
        assertThat(verify.out()).contains("4 files").contains("every file matches its manifest");
    }

    @Test
    @Order(3)
    void thePythonPackagesTestsPassOnTheMount() throws Exception {
        Path pkg = Path.of("..", "python", "strata-ckpt").toAbsolutePath().normalize();
        String python = System.getenv().getOrDefault("STRATA_PYTHON", "python3");
        assumeTrue(new ProcessBuilder(python, "--version").start().waitFor() == 0, python + " is not installed");
        root("/ckpt/python");
        ProcessBuilder pb = new ProcessBuilder(python, "-m", "unittest", "discover", "-s", "tests", "-v").directory(pkg.toFile())
                .redirectErrorStream(true);
        pb.environment().put("STRATA_CKPT_ROOT", mnt.resolve("ckpt/python").toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(10, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("test_many_writers").doesNotContain("STRATA_CKPT_ROOT not set");
        System.out.println(out.lines().filter(l -> l.contains("skipped")).reduce("", (a, b) -> a + b + "\n"));
    }
}
