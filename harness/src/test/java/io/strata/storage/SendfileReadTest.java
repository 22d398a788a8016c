package io.strata.storage;

import io.strata.harness.StorageCluster;
import io.strata.l3.StorageClient;
import io.strata.l3.StorageClientOptions;
import static io.strata.testing.Buffers.drain;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.TargetId;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.storage.engine.ChunkMeta;
import io.strata.storage.engine.EngineOptions;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With {@code verify-reads = false} replicas send chunk bytes with sendfile and the stored
 * CRC32C; the client checks them end to end and reads another replica when they are damaged.
 */
class SendfileReadTest {
    static final int SIZE = 1 << 20;
    static final IoOptions IO = IoOptions.DEFAULT.withTimeout(Duration.ofSeconds(20));

    @TempDir
    Path dir;

    @Test
    void zeroCopyReadsAreCheckedByTheClient() throws Exception {
        try (StorageCluster f = StorageCluster.builder(dir, 51).nodes(3).chains(1).engine(EngineOptions.DEFAULTS.withVerifyReads(false)).start()) {
            StorageClient c = f.client("c", StorageClientOptions.DEFAULTS);
            ChunkAddress a = StorageCluster.chunk(60, 0, 1, SIZE);
            byte[] data = new byte[300_000];
            new Random(5).nextBytes(data);
            ByteBuf b = Unpooled.wrappedBuffer(data);
            Futures.join(c.writeAsync(a, 0, b, IO));
            b.release();
            for (int n = 1; n <= 3; n++) {
                TargetId t = StorageCluster.target(n, 1);
                assertThat(drain(Futures.join(c.readChunkAsync(a, 0, SIZE, IO, Optional.of(t))).data())).isEqualTo(data);
                assertThat(drain(Futures.join(c.readChunkAsync(a, 1000, 5000, IO, Optional.of(t))).data()))
                        .as("an unaligned range (sent unchecked)").isEqualTo(Arrays.copyOfRange(data, 1000, 6000));
            }
            // damage node 2's copy on disk: reads through node 2 notice and move on to another replica
            ChunkMeta m = f.node(2).engine(StorageCluster.target(2, 1)).meta(a.id(), SIZE);
            try (RandomAccessFile raf = new RandomAccessFile(f.node(2).engine(StorageCluster.target(2, 1)).dataPath(m.committed()).toFile(), "rw")) {
                raf.seek(70_000);
                raf.write(raf.read() ^ 1);
            }
            StorageClient.ChunkRead r = Futures.join(c.readChunkAsync(a, 0, SIZE, IO, Optional.of(StorageCluster.target(2, 1))));
            assertThat(drain(r.data())).isEqualTo(data);
            double served = f.context(1).meters().find("strata.storage.requests").tag("op", "read").counters().stream()
                    .mapToDouble(x -> x.count()).sum() + f.context(3).meters().find("strata.storage.requests").tag("op", "read").counters()
                    .stream().mapToDouble(x -> x.count()).sum();
            assertThat(served).as("the damaged read was answered by another replica").isEqualTo(5.0);
        }
    }
}
