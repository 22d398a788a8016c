package io.strata.namespace.kv;

import java.util.List;

/**
 * Reads of one transaction. Every read sees the transaction's snapshot plus its own writes
 * (read-your-writes). Reads through a {@link KvTransaction} are recorded for conflict
 * detection; reads through {@link KvTransaction#snapshot()} are not.
 *
 * <p>Arrays passed in are borrowed for the call; arrays returned belong to the caller.
 */
public interface KvReader {
    /** The value of {@code key}, or null when absent. */
    byte[] get(byte[] key);

    /**
     * Up to {@code limit} pairs with {@code begin <= key < end}, ascending, or descending when
     * {@code reverse} (then the first pair is the largest key below {@code end}). {@code limit}
     * 0 means no limit.
     */
    List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse);

    default List<KeyValue> getRange(byte[] begin, byte[] end, int limit) {
        return getRange(begin, end, limit, false);
    }

    /** Every pair whose key starts with {@code prefix}, up to {@code limit} (0: no limit). */
    default List<KeyValue> getPrefix(byte[] prefix, int limit) {
        return getRange(prefix, Bytes.strinc(prefix), limit, false);
    }
}
