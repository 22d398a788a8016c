package io.strata.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.Txn;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A store's LMDB index environment: one directory, opened with the caller's map size and
 * {@link Sync} mode, holding named databases. What the values mean, and how they are encoded, is
 * the tier's business; this class owns opening (and, for a cache, giving up on an index that
 * cannot be opened), the databases' handles, explicit flushes and closing.
 *
 * <p>Every environment is opened with {@code MDB_NOTLS}: read transactions are not tied to the
 * thread that began them (reads run on pools and callers' threads). Its directory and files are
 * private to the process's user ({@link PrivateFiles}: 0700, and 0600 for LMDB's data and lock
 * files).
 */
public final class IndexEnv implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(IndexEnv.class);

    /** What a committed write transaction costs, and what a crash or power loss can take back. */
    public enum Sync {
        /** Every commit is durable ({@code fsync} of data and meta pages). */
        FULL(),
        /**
         * {@code MDB_NOMETASYNC}: a commit flushes its data pages but not the meta page, so the
         * database stays consistent after a power loss but may come back at an earlier commit;
         * {@link #flush} makes every commit so far durable.
         */
        NO_META_SYNC(EnvFlags.MDB_NOMETASYNC),
        /**
         * {@code MDB_NOSYNC}: a commit writes to the kernel only. A process crash loses nothing;
         * a power loss may lose commits since the last {@link #flush}, or leave an index that
         * cannot be opened (hence {@link #openOrWipe} for caches).
         */
        NO_SYNC(EnvFlags.MDB_NOSYNC);

        private final EnvFlags[] flags;

        Sync(EnvFlags... flags) {
            this.flags = flags;
        }
    }

    private final Env<ByteBuffer> env;
    private final boolean wiped;
    private volatile boolean closed;

    private IndexEnv(Env<ByteBuffer> env, boolean wiped) {
        this.env = env;
        this.wiped = wiped;
    }

    /**
     * Opens (creating when new) the environment in {@code dir}. For an index that is the
     * durable truth of its store: an environment that cannot be opened is an error, never
     * wiped.
     */
    public static IndexEnv open(Path dir, long mapSize, Sync sync, int maxDbs, int maxReaders) throws IOException {
        return new IndexEnv(create(dir, mapSize, sync, maxDbs, maxReaders), false);
    }

    /**
     * As {@link #open}, for a cache's index: when the environment cannot be opened (a power loss
     * during a commit that was not flushed, a damaged file), it is deleted together with
     * everything under {@code alsoWipe} (what the index described) and created empty.
     * {@link #wiped} tells which happened.
     */
    public static IndexEnv openOrWipe(Path dir, long mapSize, Sync sync, int maxDbs, int maxReaders, Path... alsoWipe)
            throws IOException {
        try {
            return open(dir, mapSize, sync, maxDbs, maxReaders);
        } catch (RuntimeException unreadable) {
            LOG.warn("the index in {} cannot be opened ({}); it is a cache: wiping it and what it described", dir, unreadable.toString());
            StoreDir.deleteContents(dir);
            for (Path p : alsoWipe) {
                StoreDir.deleteContents(p);
            }
            return new IndexEnv(create(dir, mapSize, sync, maxDbs, maxReaders), true);
        }
    }

    private static Env<ByteBuffer> create(Path dir, long mapSize, Sync sync, int maxDbs, int maxReaders) throws IOException {
        PrivateFiles.createDirectories(dir);
        List<EnvFlags> flags = new ArrayList<>(List.of(sync.flags));
        flags.add(EnvFlags.MDB_NOTLS);
        return Env.create().setMapSize(mapSize).setMaxDbs(maxDbs).setMaxReaders(maxReaders)
                .open(dir.toFile(), PrivateFiles.FILE_MODE, flags.toArray(EnvFlags[]::new));
    }

    /** Whether {@link #openOrWipe} found the index unreadable and started it afresh. */
    public boolean wiped() {
        return wiped;
    }

    /** The database {@code name}, created when new. */
    public Dbi<ByteBuffer> db(String name) {
        return env.openDbi(name, DbiFlags.MDB_CREATE);
    }

    public Txn<ByteBuffer> txnRead() {
        return env.txnRead();
    }

    public Txn<ByteBuffer> txnWrite() {
        return env.txnWrite();
    }

    /** Empties {@code db} in one committed transaction. */
    public void clear(Dbi<ByteBuffer> db) {
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            db.drop(txn);
            txn.commit();
        }
    }

    /** Makes every commit so far durable ({@code mdb_env_sync}, forced). */
    public void flush() {
        env.sync(true);
    }

    /** Closes the environment (without a flush of its own: flush first when the mode needs one). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        env.close();
    }
}
