package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.core.util.Eventually;
import io.strata.core.util.JavaProcess;
import io.strata.fuse.FuseMount;
import io.strata.testing.Slow;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A compute node's mount holding a client token limited to uids and gids 1000-1999, as a lab's
 * nodes would get: its users in that range work as themselves, anyone else is refused by the meta
 * service, and root is squashed to nobody. The users are real processes of other uids
 * ({@code setpriv}) on a real FUSE mount of a {@code strata up} cluster with authentication and
 * TLS on; a second mount with the cluster's unrestricted client token prepares the directory.
 */
@Slow
class TokenRangeMountIT {
    private static final Duration T = Duration.ofSeconds(60);

    @Test
    void aRangedTokenLetsItsUsersActAsThemselvesRefusesOthersAndSquashesRoot(@TempDir Path data, @TempDir Path local) throws Exception {
        Optional<String> noFuse = FuseMount.unavailable();
        assumeTrue(noFuse.isEmpty(), () -> "FUSE is not available: " + noFuse.orElse(""));
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "setpriv (util-linux) runs the test's users");
        assumeTrue(new com.sun.security.auth.module.UnixSystem().getUid() == 0, "needs root to act as other users");
        CliTest.Run up = CliTest.strata("up", "--data", data.toString(), "--no-mount");
        assertThat(up.code()).as(up.err()).isZero();
        String d = "--data=" + data;
        // mount points other users can reach (the test's temporary directories are private to root)
        Path open = Files.createTempDirectory(Path.of("/tmp"), "strata-uids-");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path admin = Files.createDirectories(open.resolve("all"));
        Path lab = Files.createDirectories(open.resolve("lab"));
        List<JavaProcess> mounts = new ArrayList<>();
        try {
            CliTest.Run token = CliTest.strata("admin", "token", "create", "--role", "client", "--ttl", "1h", "--subject", "lab-nodes",
                    "--uids", "1000-1999", "--gids", "1000-1999", d);
            assertThat(token.code()).as(token.err()).isZero();
            Path tokenFile = Files.writeString(local.resolve("lab.token"), token.out().strip() + "\n");

            mounts.add(mount(data, local, "all", admin, List.of()));
            Files.createDirectories(admin.resolve("shared"));
            Files.setPosixFilePermissions(admin.resolve("shared"), PosixFilePermissions.fromString("rwxrwxrwx"));
            mounts.add(mount(data, local, "lab", lab, List.of("--token-file", tokenFile.toString())));
            Path shared = lab.resolve("shared");

            // a user in the range works as itself
            assertThat(as(1000, 1000, "touch", shared.resolve("mine").toString()).code()).isZero();
            assertThat(owner(shared.resolve("mine"))).isEqualTo("1000:1000");
            assertThat(as(1000, 1000, "sh", "-c", "echo hello > " + shared.resolve("mine")).code()).isZero();
            assertThat(Files.readString(admin.resolve("shared/mine"), StandardCharsets.UTF_8)).as("seen through the other mount")
                    .isEqualTo("hello\n");

            // a user outside it is refused, although the directory's mode would let anyone in
            Sh outside = as(3000, 3000, "touch", shared.resolve("theirs").toString());
            assertThat(outside.code()).isNotZero();
            assertThat(outside.out()).containsIgnoringCase("permission denied");
            assertThat(Files.exists(admin.resolve("shared/theirs"))).isFalse();
            // so is a user in the range whose group is not
            Sh badGroup = as(1000, 3000, "touch", shared.resolve("group").toString());
            assertThat(badGroup.code()).isNotZero();
            assertThat(Files.exists(admin.resolve("shared/group"))).isFalse();

            // root on this node is nobody to the cluster
            Files.writeString(shared.resolve("by-root"), "x");
            assertThat(owner(admin.resolve("shared/by-root"))).isEqualTo("65534:65534");
            assertThat(as(0, 0, "chown", "0:0", shared.resolve("by-root").toString()).code()).as("a squashed root cannot chown").isNotZero();
            // while the unrestricted mount's root stays root
            Files.writeString(admin.resolve("shared/by-admin"), "y");
            assertThat(owner(admin.resolve("shared/by-admin"))).isEqualTo("0:0");
        } finally {
            for (JavaProcess m : mounts) {
                m.stop(Duration.ofSeconds(10));
            }
            for (Path p : List.of(lab, admin)) {
                if (FuseMount.isMounted(p)) {
                    FuseMount.unmount(p, true);
                }
            }
            assertThat(CliTest.strata("down", "--data", data.toString()).code()).isZero();
            for (Path p : List.of(lab, admin, open)) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** {@code strata mount --data DATA [extra] DIR} as its own process; returns once it is mounted. */
    private static JavaProcess mount(Path data, Path local, String name, Path dir, List<String> extra) throws Exception {
        List<String> args = new ArrayList<>(List.of("mount", "--data", data.toString()));
        args.addAll(extra);
        args.add(dir.toString());
        JavaProcess p = JavaProcess.start("mount-" + name, StrataMain.class.getName(), args, List.of("-Xmx512m"), Map.of(),
                local.resolve("mount-" + name + ".log"));
        Eventually.await(name + " mounted", T, () -> {
            assertThat(p.isAlive()).as(p.tail(20)).isTrue();
            return FuseMount.isMounted(dir);
        });
        return p;
    }

    private static String owner(Path p) throws Exception {
        return Files.getAttribute(p, "unix:uid") + ":" + Files.getAttribute(p, "unix:gid");
    }

    record Sh(int code, String out) {
    }

    /** Runs {@code cmd} as {@code uid}:{@code gid} with no supplementary groups. */
    private static Sh as(int uid, int gid, String... cmd) throws Exception {
        List<String> c = new ArrayList<>(List.of("setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups"));
        c.addAll(List.of(cmd));
        Process p = new ProcessBuilder(c).redirectErrorStream(true).start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).as(String.join(" ", c)).isTrue();
        return new Sh(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
}
