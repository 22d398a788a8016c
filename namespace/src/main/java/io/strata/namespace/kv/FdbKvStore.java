package io.strata.namespace.kv;

import com.apple.foundationdb.Database;
import com.apple.foundationdb.FDB;
import com.apple.foundationdb.FDBException;
import com.apple.foundationdb.MutationType;
import com.apple.foundationdb.ReadTransaction;
import com.apple.foundationdb.Transaction;
import io.strata.core.Status;
import io.strata.core.StrataException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;

/**
 * The cluster backend: FoundationDB through the official {@code fdb-java} bindings (API version
 * {@value #API_VERSION}). Every Strata key is stored under {@code prefix}, so several namespaces
 * (or tests) can share one cluster. FoundationDB provides snapshot reads, read-your-writes,
 * conflict detection and atomic operations itself; this class maps its errors onto Strata
 * statuses: {@code not_committed} and every other retryable error become {@code TXN_CONFLICT},
 * {@code commit_unknown_result} (and other "maybe committed" errors) {@code TXN_MAYBE_COMMITTED};
 * the {@link Transactor} retries both.
 *
 * <p>The FDB network thread is process-global: {@link #network()} selects the API version and
 * starts it once per JVM. It needs the native client library {@code libfdb_c}.
 */
public final class FdbKvStore implements KvStore {
    public static final int API_VERSION = 740;
    private static FDB fdb;

    private final Database db;
    private final byte[] prefix;
    private final Executor executor;

    private FdbKvStore(Database db, byte[] prefix, Executor executor) {
        this.db = db;
        this.prefix = prefix.clone();
        this.executor = executor;
    }

    /** The process-wide FDB handle; selects the API version on first use. */
    static synchronized FDB network() {
        if (fdb == null) {
            try {
                fdb = FDB.selectAPIVersion(API_VERSION);
            } catch (UnsatisfiedLinkError | RuntimeException e) {
                throw new StrataException(Status.UNSUPPORTED, "FoundationDB client library (libfdb_c) unavailable: " + e.getMessage(), e);
            }
        }
        return fdb;
    }

    /**
     * Opens the database of {@code clusterFile}; futures complete on {@code executor} (FDB's own
     * pool when null). Keys live under {@code prefix} (may be empty).
     */
    public static FdbKvStore open(String clusterFile, byte[] prefix, Executor executor) {
        FDB f = network();
        try {
            Database d = executor == null ? f.open(clusterFile) : f.open(clusterFile, executor);
            return new FdbKvStore(d, prefix, executor);
        } catch (FDBException e) {
            throw new StrataException(Status.IO_ERROR, "cannot open FoundationDB cluster " + clusterFile + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String name() {
        return "fdb";
    }

    @Override
    public KvTransaction begin() {
        return new FdbTxn(executor == null ? db.createTransaction() : db.createTransaction(executor));
    }

    @Override
    public void close() {
        db.close();
    }

    private byte[] k(byte[] key) {
        return prefix.length == 0 ? key : Bytes.concat(prefix, key);
    }

    private byte[] unk(byte[] key) {
        return prefix.length == 0 ? key : java.util.Arrays.copyOfRange(key, prefix.length, key.length);
    }

    /** Maps an FDB error (possibly wrapped) to a Strata status. */
    static StrataException map(Throwable t) {
        Throwable c = t;
        while (c instanceof CompletionException && c.getCause() != null) {
            c = c.getCause();
        }
        if (c instanceof StrataException se) {
            return se;
        }
        if (c instanceof FDBException e) {
            String what = "FoundationDB error " + e.getCode() + ": " + e.getMessage();
            if (e.isMaybeCommitted()) {
                return new StrataException(Status.TXN_MAYBE_COMMITTED, what, e);
            }
            if (e.isRetryable()) {
                return new StrataException(Status.TXN_CONFLICT, what, e);
            }
            return switch (e.getCode()) {
                case 2101, 2102, 2103 -> new StrataException(Status.INVALID_ARGUMENT, what, e); // key/value/txn too large
                case 1031 -> new StrataException(Status.TIMEOUT, what, e);
                default -> new StrataException(Status.IO_ERROR, what, e);
            };
        }
        return StrataException.wrap(c);
    }

    private static <T> T await(CompletableFuture<T> f) {
        try {
            return f.join();
        } catch (RuntimeException e) {
            throw map(e);
        }
    }

    private final class FdbTxn implements KvTransaction {
        private final Transaction tx;
        private final Reader conflicting;
        private final Reader snapshot;

        FdbTxn(Transaction tx) {
            this.tx = tx;
            this.conflicting = new Reader(tx);
            this.snapshot = new Reader(tx.snapshot());
        }

        @Override
        public byte[] get(byte[] key) {
            return conflicting.get(key);
        }

        @Override
        public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
            return conflicting.getRange(begin, end, limit, reverse);
        }

        @Override
        public KvReader snapshot() {
            return snapshot;
        }

        @Override
        public void set(byte[] key, byte[] value) {
            Bytes.checkKey(key);
            Bytes.checkValue(value);
            tx.set(k(key), value);
        }

        @Override
        public void clear(byte[] key) {
            Bytes.checkKey(key);
            tx.clear(k(key));
        }

        @Override
        public void clearRange(byte[] begin, byte[] end) {
            Bytes.checkRange(begin, end);
            if (Bytes.compare(begin, end) < 0) {
                tx.clear(k(begin), k(end));
            }
        }

        @Override
        public void atomicAdd(byte[] key, long delta) {
            Bytes.checkKey(key);
            tx.mutate(MutationType.ADD, k(key), Bytes.le64(delta));
        }

        @Override
        public void atomicMax(byte[] key, long value) {
            Bytes.checkKey(key);
            tx.mutate(MutationType.MAX, k(key), Bytes.le64(value));
        }

        @Override
        public void addReadConflictKey(byte[] key) {
            tx.addReadConflictKey(k(key));
        }

        @Override
        public void commit() {
            await(tx.commit());
        }

        @Override
        public void close() {
            tx.close();
        }
    }

    private final class Reader implements KvReader {
        private final ReadTransaction rt;

        Reader(ReadTransaction rt) {
            this.rt = rt;
        }

        @Override
        public byte[] get(byte[] key) {
            Bytes.checkKey(key);
            return await(rt.get(k(key)));
        }

        @Override
        public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
            Bytes.checkRange(begin, end);
            if (limit < 0) {
                throw new StrataException(Status.INVALID_ARGUMENT, "negative range limit " + limit);
            }
            List<KeyValue> out = new ArrayList<>();
            if (Bytes.compare(begin, end) >= 0) {
                return out;
            }
            for (com.apple.foundationdb.KeyValue kv : await(rt.getRange(k(begin), k(end),
                    limit == 0 ? ReadTransaction.ROW_LIMIT_UNLIMITED : limit, reverse).asList())) {
                out.add(new KeyValue(unk(kv.getKey()), kv.getValue()));
            }
            return out;
        }
    }
}
