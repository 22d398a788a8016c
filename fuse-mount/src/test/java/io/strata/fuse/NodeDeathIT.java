package io.strata.fuse;

import io.strata.testing.Slow;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import io.strata.core.util.Eventually;
import io.strata.harness.StorageCluster;
import java.io.IOException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Storage nodes as real processes, killed with SIGKILL while {@code cp} copies through the mount:
 * a copy out completes from the other replicas; a copy in completes once the node is back (the
 * chain waits for its member: static routing, no manager to drop it); and with the node left
 * down, a write fails with EIO within the mount's timeout instead of hanging.
 */
@RequiresFuse
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Slow
class NodeDeathIT {
    static final Duration IO_TIMEOUT = Duration.ofSeconds(15);
    @TempDir
    static Path dir;
    static MountedCluster c;
    static Path local;

    @BeforeAll
    static void start() throws IOException {
        c = MountedCluster.start(dir.resolve("cluster"), 91, StorageCluster.Mode.PROCESSES, cfg -> cfg.withIoTimeout(IO_TIMEOUT)
                .withAttemptTimeout(Duration.ofSeconds(2)));
        local = Files.createDirectories(dir.resolve("local"));
    }

    @AfterAll
    static void stop() {
        if (c != null) {
            c.close();
        }
    }

    static Process cp(Path from, Path to) throws IOException {
        return new ProcessBuilder("cp", from.toString(), to.toString()).redirectErrorStream(true).start();
    }

    static String finish(Process p) throws Exception {
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("cp finished").isTrue();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.exitValue()).as("cp: " + out).isZero();
        return out;
    }

    static String sha256(StrataFileSystem fs, String path) throws Exception {
        MessageDigest d = MessageDigest.getInstance("SHA-256");
        try (StrataFile f = fs.openRead(path)) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 << 20);
            for (long off = 0; ; off += b.position()) {
                b.clear();
                if (f.read(off, b) <= 0) {
                    break;
                }
                d.update(b.array(), 0, b.position());
            }
        }
        return HexFormat.of().formatHex(d.digest());
    }

    @Test
    @Order(1)
    void aCopyOutOfTheMountCompletesWhenAReplicaDiesMidway() throws Exception {
        // written through the Java API, so the kernel has none of it cached: cp reads it all through FUSE
        long size = 200L << 20;
        try (StrataFileSystem w = c.client("writer"); StrataFile f = w.create("/out.bin")) {
            SplittableRandom r = new SplittableRandom(5);
            byte[] b = new byte[4 << 20];
            for (long off = 0; off < size; off += b.length) {
                r.nextBytes(b);
                f.write(off, b, 0, b.length);
            }
        }
        Process p = cp(c.mnt.resolve("out.bin"), local.resolve("out.bin"));
        Eventually.await("the copy under way", Duration.ofSeconds(60), () -> sizeOf(local.resolve("out.bin")) > (20L << 20));
        c.cluster.storage().kill(3);
        finish(p);
        assertThat(Sh.sha256(local.resolve("out.bin"))).isEqualTo(sha256(c.fs, "/out.bin"));
        c.cluster.storage().restart(3);
    }

    @Test
    @Order(2)
    void aCopyIntoTheMountCompletesWhenANodeIsKilledAndComesBack() throws Exception {
        Path src = local.resolve("in.bin");
        Sh.randomFile(src, 300L << 20, 6);
        Process p = cp(src, c.mnt.resolve("in.bin"));
        Eventually.await("the copy under way", Duration.ofSeconds(60), () -> sizeOf(c.mnt.resolve("in.bin")) > (30L << 20));
        c.cluster.storage().kill(2);
        Thread.sleep(1000);
        c.cluster.storage().restart(2);
        finish(p);
        try (StrataFileSystem other = c.client("checker")) {
            assertThat(other.stat("/in.bin").size()).isEqualTo(300L << 20);
            assertThat(sha256(other, "/in.bin")).isEqualTo(Sh.sha256(src));
        }
    }

    @Test
    @Order(3)
    void aWriteToAChainWithAMemberDownFailsWithEioWithinTheTimeout() throws Exception {
        c.cluster.storage().kill(1);
        try {
            long t0 = System.nanoTime();
            Sh.Result r = Sh.run(local, 120, "dd", "if=/dev/urandom", "of=" + c.mnt.resolve("stuck.bin"), "bs=1M", "count=8",
                    "conv=fsync", "status=none");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(r.code()).as(r.out()).isNotZero();
            assertThat(r.out()).contains("Input/output error");
            assertThat(ms).as("failed within the io timeout (%s) plus the namespace's, not hung", IO_TIMEOUT)
                    .isLessThan(IO_TIMEOUT.multipliedBy(2).plusSeconds(20).toMillis());
        } finally {
            c.cluster.storage().restart(1);
        }
        // and once the node is back, the same write goes through
        Sh.run(local, 120, "dd", "if=/dev/urandom", "of=" + c.mnt.resolve("after.bin"), "bs=1M", "count=8", "conv=fsync", "status=none").ok();
    }

    static long sizeOf(Path p) {
        try {
            return Files.size(p);
        } catch (IOException e) {
            return 0;
        }
    }

}
