package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChainId;
import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.tier.CacheHints;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.Tier;
import io.strata.core.util.Futures;
import io.strata.testing.Buffers;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;

/** Small helpers shared by L1's tests. */
final class Fixture {
    static final Duration T = Duration.ofSeconds(30);

    private Fixture() {
    }

    static ChunkAddress chunk(long inode, int index, int chunkSize) {
        return new ChunkAddress(ChunkId.of(inode, index), ChainId.of(1), chunkSize);
    }

    static IoOptions io(long dataVersion) {
        return new IoOptions(dataVersion, QosClass.INTERACTIVE, T, CacheHints.DEFAULT);
    }

    static IoOptions io(long dataVersion, CacheHints hints) {
        return new IoOptions(dataVersion, QosClass.INTERACTIVE, T, hints);
    }

    static CacheHints writeBack(Duration maxAge, long maxBytes) {
        return new CacheHints(true, true, maxAge, maxBytes, false, Optional.empty());
    }

    static CacheHints pinned(boolean pin, Optional<Duration> ttl) {
        return new CacheHints(true, false, Duration.ofSeconds(5), 4L << 20, pin, ttl);
    }

    /** A config with small blocks: memory only when {@code nvmeDir} is null. */
    static L1Config config(String name, DataSize memory, DataSize block, Path nvmeDir, DataSize nvmeCapacity) {
        return new L1Config(name, memory, block, Duration.ofHours(1),
                nvmeDir == null ? Optional.empty() : Optional.of(L1Config.Nvme.at(nvmeDir, nvmeCapacity).withMinFree(DataSize.ZERO).withFsync(false)),
                L1Config.WriteBack.DEFAULTS);
    }

    static byte[] read(Tier t, ChunkAddress c, long offset, int length, IoOptions io) {
        return Buffers.drain(Futures.join(t.readAsync(c, offset, length, io), T));
    }

    static void write(Tier t, ChunkAddress c, long offset, byte[] data, IoOptions io) {
        ByteBuf b = Unpooled.wrappedBuffer(data);
        try {
            Futures.join(t.writeAsync(c, offset, b, io), T);
        } finally {
            b.release();
        }
    }

    static byte[] bytes(long seed, int n) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }
}
