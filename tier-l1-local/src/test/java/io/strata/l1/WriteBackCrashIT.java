package io.strata.l1;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.NodeContext;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.util.JavaProcess;
import io.strata.l3.StorageClient;
import io.strata.testing.Seeded;
import io.strata.harness.StorageCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Write-back under SIGKILL: a client process (L1 with write-back over the real L3 storage
 * client; storage nodes in this JVM) streams small writes to four files, fsyncs one of them every
 * 25 writes and records each completed fsync. It is killed at a random moment. Then, for every
 * file, L3 holds exactly the result of a prefix of that file's writes (in order: never a later
 * write without an earlier one, never a torn or foreign byte) that covers every write an fsync
 * promised; the writes after the last fsync are the only ones a crash may lose. A new L1 opened
 * on the dead client's NVMe directory reads what L3 holds: no absorbed write survives as if it
 * had been stored.
 */
class WriteBackCrashIT {
    @TempDir
    Path dir;

    @Test
    @Seeded
    void aKilledClientLosesOnlyUnflushedWritesAndKeepsTheirOrder(long seed) throws Exception {
        try (StorageCluster cluster = StorageCluster.builder(dir.resolve("storage"), seed).nodes(3).chains(1).start()) {
            Path work = dir.resolve("client");
            Files.createDirectories(work);
            CrashChild.writeRouting(cluster.routing().current(), work);
            Path promised = work.resolve("promised");
            try (JavaProcess p = JavaProcess.start("l1-writer", CrashChild.class.getName(),
                    List.of("writeback", work.toString(), Long.toString(seed)),
                    List.of("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), Map.of(), work.resolve("child.log"))) {
                p.awaitReady(() -> lines(promised).size() >= 20, Duration.ofSeconds(90));
                Thread.sleep(new Random(seed).nextInt(300));
                p.kill();
            }
            List<String> promises = lines(promised);
            int[] mustHave = new int[CrashChild.FILES];
            int[] bound = new int[CrashChild.FILES];
            for (String line : promises) {
                String[] f = line.trim().split(" ");
                if (f.length != 2 + CrashChild.FILES) {
                    continue; // a line cut by the kill (written, not yet fsync'ed)
                }
                int g = Integer.parseInt(f[0]);
                mustHave[g] = Math.max(mustHave[g], Integer.parseInt(f[1]));
                for (int k = 0; k < CrashChild.FILES; k++) {
                    bound[k] = Math.max(bound[k], Integer.parseInt(f[2 + k]));
                }
            }
            StorageClient l3 = cluster.client("checker");
            IoOptions io = new IoOptions(1, QosClass.INTERACTIVE, Duration.ofSeconds(20));
            byte[][] stored = new byte[CrashChild.FILES][];
            int lost = 0;
            for (int f = 0; f < CrashChild.FILES; f++) {
                stored[f] = Fixture.read(l3, CrashChild.wbChunk(f), 0, CrashChild.WB_CHUNK, io);
                int prefix = prefixLength(seed, f, stored[f], mustHave[f], bound[f] + 50);
                assertThat(prefix).as("file %d: L3 holds a prefix of its writes covering the %d that fsync promised", f, mustHave[f])
                        .isGreaterThanOrEqualTo(mustHave[f]);
                lost += Math.max(0, bound[f] - prefix);
            }
            System.out.println("write-back crash: " + promises.size() + " fsyncs promised; up to " + lost
                    + " unflushed writes lost by the kill (allowed)");
            // the dead client's cache holds no absorbed write: reading through a new L1 gives what L3 holds
            NodeContext ctx = NodeContext.seeded("l1-after", seed);
            try (L1Tier l1 = new L1Tier(ctx, CrashChild.config(work.resolve("nvme")), cluster.client("after"))) {
                for (int f = 0; f < CrashChild.FILES; f++) {
                    assertThat(Fixture.read(l1, CrashChild.wbChunk(f), 0, CrashChild.WB_CHUNK, io)).isEqualTo(stored[f]);
                }
            } finally {
                ctx.close();
            }
        }
    }

    /** The length n >= from of the prefix of file f's writes whose result is {@code content}, or -1. */
    static int prefixLength(long seed, int f, byte[] content, int from, int max) {
        byte[] state = new byte[0];
        for (int n = 0; n <= max; n++) {
            if (n >= from && Arrays.equals(state, content)) {
                return n;
            }
            if (n == max) {
                break;
            }
            CrashChild.Op op = CrashChild.op(seed, f, n);
            int end = op.offset() + op.data().length;
            if (end > state.length) {
                state = Arrays.copyOf(state, end);
            }
            System.arraycopy(op.data(), 0, state, op.offset(), op.data().length);
        }
        return -1;
    }

    private static List<String> lines(Path p) {
        try {
            return Files.exists(p) ? Files.readAllLines(p) : new ArrayList<>();
        } catch (java.io.IOException e) {
            return new ArrayList<>();
        }
    }
}
