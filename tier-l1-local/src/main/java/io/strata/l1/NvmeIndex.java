package io.strata.l1;

import io.strata.store.IndexEnv;
import io.strata.store.LayoutRecord;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.Consumer;
import org.lmdbjava.CursorIterable;
import org.lmdbjava.Dbi;
import org.lmdbjava.Txn;

/**
 * The NVMe tier's LMDB index ({@code index/}): database {@code blocks} maps a {@link BlockKey}
 * (24 bytes) to length u32, CRC32C u32, pinned u8, TTL in ms u64, sub-block count u8 and one
 * CRC32C u32 per sub-block; database {@code meta} holds the layout record (format, block size).
 *
 * <p>The environment runs with {@code MDB_NOSYNC} (a process crash loses nothing: the pages are
 * in the kernel); {@link #flush} makes it durable. An index that cannot be opened is wiped with
 * the block files it described: it is a cache. Writes come from one thread (the store's writer,
 * or the opener before it starts): the key and value buffers are reused.
 */
final class NvmeIndex implements AutoCloseable {
    /** 2: the value also holds the CRC32C of each sub-block (1 had the whole block's only). */
    static final int FORMAT = 2;
    private static final int VALUE_BYTES = 4 + 4 + 1 + 8 + 1 + 4 * BlockEntry.MAX_SUBS;

    private final IndexEnv env;
    private final Dbi<ByteBuffer> blocks;
    private final LayoutRecord layout;
    private final int blockSize;
    private final ByteBuffer wkey = ByteBuffer.allocateDirect(BlockKey.BYTES);
    private final ByteBuffer wval = ByteBuffer.allocateDirect(VALUE_BYTES);

    private NvmeIndex(IndexEnv env, int blockSize) {
        this.env = env;
        this.blockSize = blockSize;
        this.blocks = env.db("blocks");
        this.layout = new LayoutRecord(env, env.db("meta"), "layout");
    }

    /** Opens the index in {@code dir}; when it cannot be opened, wipes it and {@code blockFiles} and starts empty. */
    static NvmeIndex open(Path dir, long mapSize, int blockSize, Path blockFiles) throws IOException {
        IndexEnv env = IndexEnv.openOrWipe(dir, mapSize, IndexEnv.Sync.NO_SYNC, 2, 256, blockFiles);
        try {
            return new NvmeIndex(env, blockSize);
        } catch (RuntimeException e) {
            env.close();
            throw e;
        }
    }

    /** Whether the blocks were written with this format and block size (or the index is new). */
    boolean layoutMatches() {
        return layout.matches(FORMAT, blockSize);
    }

    /** Records this format and block size, durably. */
    void writeLayout() {
        layout.write(FORMAT, blockSize);
    }

    /** Forgets every block. */
    void clear() {
        env.clear(blocks);
    }

    /**
     * Reads every entry, handing each to {@code sink} (last access {@code now}); returns the keys
     * of entries that cannot be trusted (a damaged value, sub-blocks cut differently), already
     * deleted from the index (their files are the caller's to delete).
     */
    List<BlockKey> load(long now, Consumer<BlockEntry> sink) {
        List<BlockKey> stale = new ArrayList<>();
        try (Txn<ByteBuffer> txn = env.txnRead(); CursorIterable<ByteBuffer> it = blocks.iterate(txn)) {
            for (CursorIterable.KeyVal<ByteBuffer> kv : it) {
                BlockKey k = BlockKey.decode(kv.key());
                BlockEntry e = decode(k, kv.val(), now);
                if (e == null) {
                    stale.add(k);
                } else {
                    sink.accept(e);
                }
            }
        }
        delete(stale);
        return stale;
    }

    private BlockEntry decode(BlockKey k, ByteBuffer v, long now) {
        int len = v.remaining() >= 18 ? v.getInt(0) : -1;
        int n = len >= 0 ? v.get(17) & 0xFF : -1;
        if (len < 0 || n != BlockEntry.subCount(len, blockSize) || v.remaining() < 18 + 4 * n) {
            return null;
        }
        int crc = v.getInt(4);
        boolean pin = v.get(8) != 0;
        long ttlMillis = v.getLong(9);
        int[] subs = new int[n];
        for (int i = 0; i < n; i++) {
            subs[i] = v.getInt(18 + 4 * i);
        }
        return new BlockEntry(k, len, crc, subs, pin, ttlMillis * 1_000_000L, now);
    }

    /** Records the entries (their current pin and TTL) in one transaction. */
    void put(Collection<BlockEntry> entries) {
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            for (BlockEntry e : entries) {
                e.key().encode(wkey);
                wval.clear();
                wval.putInt(e.length).putInt(e.crc).put((byte) (e.pinned() ? 1 : 0)).putLong(e.ttlNanos() / 1_000_000L);
                wval.put((byte) e.subCrcs.length);
                for (int c : e.subCrcs) {
                    wval.putInt(c);
                }
                wval.flip();
                blocks.put(txn, wkey, wval);
            }
            txn.commit();
        }
    }

    /** Deletes the keys' entries in one transaction (nothing when there are none). */
    void delete(Collection<BlockKey> keys) {
        if (keys.isEmpty()) {
            return;
        }
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            for (BlockKey k : keys) {
                blocks.delete(txn, k.encode(wkey));
            }
            txn.commit();
        }
    }

    /** Makes every change so far durable. */
    void flush() {
        env.flush();
    }

    /** Closes the environment, without a flush (flush first). */
    @Override
    public void close() {
        env.close();
    }
}
