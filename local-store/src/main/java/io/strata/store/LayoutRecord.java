package io.strata.store;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.lmdbjava.Dbi;
import org.lmdbjava.Txn;

/**
 * A small record in a store's index saying how the rest of it was written: a few integers
 * (a format number, a block size...), stored under one key as consecutive big-endian u32s. A
 * store checks it at open ({@link #matches}) and, when it differs, converts or empties what the
 * index holds before recording the current layout ({@link #write}).
 */
public final class LayoutRecord {
    private final IndexEnv env;
    private final Dbi<ByteBuffer> db;
    private final ByteBuffer key;

    /** The record stored under {@code key} in {@code db}. */
    public LayoutRecord(IndexEnv env, Dbi<ByteBuffer> db, String key) {
        this.env = env;
        this.db = db;
        byte[] b = key.getBytes(StandardCharsets.US_ASCII);
        this.key = ByteBuffer.allocateDirect(b.length).put(b).flip();
    }

    /** Whether the stored record is {@code fields}, or there is none (a new index). */
    public boolean matches(int... fields) {
        try (Txn<ByteBuffer> txn = env.txnRead()) {
            ByteBuffer v = db.get(txn, key);
            if (v == null) {
                return true;
            }
            if (v.remaining() != 4 * fields.length) {
                return false;
            }
            for (int i = 0; i < fields.length; i++) {
                if (v.getInt(v.position() + 4 * i) != fields[i]) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Records {@code fields} and flushes the index, so that nothing is stored under a layout not yet durable. */
    public void write(int... fields) {
        ByteBuffer v = ByteBuffer.allocateDirect(4 * fields.length);
        for (int f : fields) {
            v.putInt(f);
        }
        v.flip();
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            db.put(txn, key, v);
            txn.commit();
        }
        env.flush();
    }
}
