package io.strata.fuse;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.client.ClientConfig;
import io.strata.client.StrataFileSystem;
import io.strata.core.NodeContext;
import io.strata.harness.LocalCluster;
import io.strata.harness.StorageCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * The libfuse2 and the libfuse3 mount of one local cluster side by side (a program, not a test):
 * three storage nodes as their own processes (3-replica chains), the meta service and two
 * mounts in this JVM, each mount with its own client and meters. Per round and mount: {@code dd
 * if=/dev/zero bs=1M count=N conv=fsync}, then the kernel's page cache dropped ({@code echo 3 >
 * /proc/sys/vm/drop_caches}; these clients have no L1) and {@code dd of=/dev/null bs=1M}; prints
 * MB/s and FUSE requests per GiB from {@code strata.fuse.request.bytes}. Needs root.
 *
 * <pre>
 * java -cp FUSE_MOUNT_TEST_CLASSPATH io.strata.fuse.LibfuseSideBySide DIR [MIB] [ROUNDS]
 * </pre>
 * The baseline is the libfuse2 mount in the same run; the two alternate, libfuse2 first.
 */
final class LibfuseSideBySide {
    private LibfuseSideBySide() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int mib = args.length > 1 ? Integer.parseInt(args[1]) : 1024;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 2;
        Files.createDirectories(dir);
        try (LocalCluster c = LocalCluster.builder(dir.resolve("cluster"), 7).storageNodes(3).chains(6)
                .storageMode(StorageCluster.Mode.PROCESSES).metaInProcess().start();
             NodeContext ctx2 = NodeContext.seeded("mount2", 2); NodeContext ctx3 = NodeContext.seeded("mount3", 3);
             StrataFileSystem fs2 = StrataFileSystem.connect(ctx2, config(c, "mount2"));
             StrataFileSystem fs3 = StrataFileSystem.connect(ctx3, config(c, "mount3"));
             FuseMount m2 = FuseMount.mount(fs2, MountOptions.at(Files.createDirectories(dir.resolve("mnt2"))), ctx2.meters());
             FuseMount m3 = FuseMount.mount(fs3, MountOptions.at(Files.createDirectories(dir.resolve("mnt3")))
                     .withFuse(MountOptions.Libfuse.LIBFUSE3), ctx3.meters())) {
            for (int r = 1; r <= rounds; r++) {
                round(r, "libfuse2", m2.dir(), ctx2.meters(), mib);
                round(r, "libfuse3", m3.dir(), ctx3.meters(), mib);
            }
        }
    }

    private static ClientConfig config(LocalCluster c, String name) {
        return ClientConfig.of(List.of(c.metaAddress()), c.routing()).withName(name);
    }

    private static void round(int r, String name, Path mnt, MeterRegistry meters, int mib) throws Exception {
        Path f = mnt.resolve("dd-" + r + ".bin");
        DistributionSummary w = meters.get("strata.fuse.request.bytes").tag("op", "write").summary();
        DistributionSummary rd = meters.get("strata.fuse.request.bytes").tag("op", "read").summary();
        long w0 = w.count();
        long t0 = System.nanoTime();
        sh("dd", "if=/dev/zero", "of=" + f, "bs=1M", "count=" + mib, "conv=fsync", "status=none");
        long t1 = System.nanoTime();
        long w1 = w.count();
        sh("sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches");
        long r0 = rd.count();
        long t2 = System.nanoTime();
        sh("dd", "if=" + f, "of=/dev/null", "bs=1M", "status=none");
        long t3 = System.nanoTime();
        long r1 = rd.count();
        double gib = mib / 1024.0;
        double bytes = mib * 1048576.0;
        System.out.printf(Locale.ROOT, "round %d %s: write %.0f MB/s, %.0f requests/GiB | cold read %.0f MB/s, %.0f requests/GiB | load %s%n",
                r, name, bytes / 1e6 / ((t1 - t0) / 1e9), (w1 - w0) / gib, bytes / 1e6 / ((t3 - t2) / 1e9), (r1 - r0) / gib,
                Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        Files.delete(f);
    }

    private static void sh(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed");
        }
    }
}
