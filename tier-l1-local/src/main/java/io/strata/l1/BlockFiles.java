package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.strata.core.fault.FaultInjector;
import io.strata.store.AtomicFiles;
import io.strata.store.BlockCrcs;
import io.strata.store.CheckedReads;
import io.strata.store.OrphanSweep;
import io.strata.store.PrivateFiles;
import io.strata.store.StoreDir;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NVMe tier's block files: {@code blocks/<2 hex>/<key>.blk}, one file per block in 256
 * shard directories (so that no directory grows huge). A block is written crash-safely
 * ({@link AtomicFiles}: {@code .blk.tmp}, fdatasync when {@code fsync}, rename) and read back
 * checked against its index entry (length, then the CRC32C of each sub-block read), so a torn,
 * truncated, vanished or altered file is reported, never returned.
 */
final class BlockFiles {
    private static final Logger LOG = LoggerFactory.getLogger(BlockFiles.class);
    private static final int SHARDS = 256;

    private final Path root;
    private final AtomicFiles writer;
    private final BlockCrcs crcs;
    private final boolean fsync;

    BlockFiles(Path root, int blockSize, FaultInjector faults, AtomicFiles.Faults points, boolean fsync) {
        this.root = root;
        this.writer = new AtomicFiles(faults, points);
        this.crcs = new BlockCrcs(BlockEntry.subBlock(blockSize));
        this.fsync = fsync;
    }

    Path root() {
        return root;
    }

    Path path(BlockKey k) {
        return root.resolve(k.shard()).resolve(k.fileName());
    }

    /** Creates the block directory and its shard directories (again, after a wipe), all private to the process's user. */
    void createShards() throws IOException {
        PrivateFiles.createDirectories(root);
        for (int i = 0; i < SHARDS; i++) {
            PrivateFiles.createDirectories(shard(i));
        }
    }

    private Path shard(int i) {
        return root.resolve(String.format("%02x", i));
    }

    /** Deletes every block file and shard directory. */
    void wipe() throws IOException {
        StoreDir.deleteContents(root);
    }

    /** The CRC32C of each sub-block of {@code data} (borrowed). */
    int[] subCrcs(ByteBuf data) {
        return crcs.of(data);
    }

    /** The whole block's CRC32C from its sub-blocks' (no second pass over the bytes). */
    int crc(int[] subCrcs, int length) {
        return crcs.combine(subCrcs, length);
    }

    /** Writes a block's temporary file (fdatasync'ed when {@code fsync}); its rename is the caller's to do or abandon. */
    AtomicFiles.Staged stage(BlockKey k, ByteBuf data) throws IOException {
        return writer.stage(path(k), data, fsync);
    }

    /**
     * Reads {@code n} bytes at {@code start} (a sub-block boundary) of the entry's block file,
     * which must be {@code e.length} bytes long; every sub-block read is checked. An owned
     * buffer ({@link BlockBuf}).
     *
     * @throws CheckedReads.DamagedFile the file is missing, short or long, or fails a check
     */
    ByteBuf read(BlockEntry e, long start, int n) throws IOException {
        return CheckedReads.read(path(e.key()), e.length, start, n, crcs, i -> e.subCrcs[i], BlockBuf::allocate);
    }

    /**
     * Reads [{@code from}, {@code from + length}) of the entry's block (cut at its end; not
     * empty): only the sub-blocks that cover it, each checked. An owned buffer of exactly that
     * range.
     *
     * @throws CheckedReads.DamagedFile as {@link #read}
     */
    ByteBuf readRange(BlockEntry e, int from, int length) throws IOException {
        int end = Math.min(e.length, from + length);
        int sub = crcs.blockSize();
        long start = (long) (from / sub) * sub;
        int n = (int) (Math.min(e.length, (long) ((end - 1) / sub + 1) * sub) - start);
        ByteBuf buf = read(e, start, n);
        ByteBuf out = buf.retainedSlice((int) (from - start), end - from);
        buf.release();
        return out;
    }

    void unlink(BlockKey k) {
        try {
            Files.deleteIfExists(path(k));
        } catch (IOException e) {
            LOG.debug("L1: cannot delete block file of {}: {}", k, e.toString());
        }
    }

    void delete(Collection<BlockKey> keys) throws IOException {
        for (BlockKey k : keys) {
            Files.deleteIfExists(path(k));
        }
    }

    /**
     * Deletes temporary files and block files that {@code indexed} does not name, shard by
     * shard until {@code stop}; returns how many. Run where no block file is being written.
     */
    int removeOrphans(Predicate<BlockKey> indexed, BooleanSupplier stop) {
        int n = 0;
        for (int i = 0; i < SHARDS && !stop.getAsBoolean(); i++) {
            try {
                n += OrphanSweep.sweep(shard(i), BlockKey::parseFileName, indexed);
            } catch (IOException e) {
                LOG.debug("L1: scanning {} for orphans: {}", shard(i), e.toString());
            }
        }
        return n;
    }
}
